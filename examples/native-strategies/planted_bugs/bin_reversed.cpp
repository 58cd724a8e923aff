// bin-reversed: a planted bug, for docs/how-to/write-a-native-strategy.md and tests/test_native_plugins.py.
//
// bin-parallel (../bin_parallel.cpp) with one change, in BinParallel::commit: a bin's operations are applied from
// its last member to its first, not in the bin's order.  Its declaration keeps bin-parallel's promise (exact, or
// race where an event of a bin can move another), so on multicore at 2 workers `tickpar check` ends `diverged`
// (gem5 order: two requests that one bin sends to the crossbar for one tick get the other LIFO order) or
// `causality` (canonical order: a reschedule applied before the schedule it depended on), prints "promise ...
// BROKEN" and exits 3.  On phold the bug stays hidden: the events that it reorders in a component are alike (same
// tick, priority and name), and a digest of (tick, priority, name) cannot tell them apart.
// It lives in planted_bugs/ so that TICKPAR_PLUGINS=examples/native-strategies lists bin-parallel alone.
#include "tickpar/strategy.hpp"

#include <memory>
#include <string>
#include <vector>

static const char* const kDeclaration = R"tickpar({
  "name": "bin-reversed",
  "summary": "planted bug: bin-parallel committing each bin's operations in reverse order (tickpar check: promise BROKEN)",
  "options": {
    "min_parallel": {"type": "int", "default": 2, "min": 2, "max": 1000000,
                     "help": "bins with fewer events run on gem5's loop"},
    "checks": {"type": "bool", "default": true,
               "help": "keep gem5's schedule/reschedule assertions (false: count violations)"}
  },
  "orders": ["gem5", "canonical"],
  "promise": [
    {"if": {"workers": 1}, "verdict": "exact", "because": "one worker: gem5's loop"},
    {"if": {"traits_absent": ["zero_latency_links", "direct_calls", "stored_ticks", "recorded_operations",
                              "several_named_events"]},
     "verdict": "exact",
     "because": "every operation lands after its bin and no event of a bin moves another: the commit is the sequential order"},
    {"verdict": ["exact", "race"],
     "because": "an operation into the running bin or on a later event of it, or a direct call into another group's component, is detected and reported as a race"}
  ]
})tickpar";

namespace {

// An operation an event made, applied at the commit, and where each event's operations are.
struct Pending {
  tp::Op op;
  int64_t when;
};
struct MemberOps {
  int worker = 0;
  int64_t begin = 0, end = 0;
};

// One worker's share of a bin and its buffer, on lines of its own.
struct alignas(64) Worker {
  std::vector<int32_t> groups;  // the groups it runs in this bin
  std::vector<Pending> ops;     // their events' operations, in execution order
  int64_t load = 0;             // events assigned (the forming thread's bookkeeping)
  tp::HandoffSlot slot;         // the bin posted to it, and its end
};

struct BinParallel {
  tp::Run& r;
  tp::Queue q;
  tp::ComponentClaims claims;
  int workers;
  std::unique_ptr<Worker[]> crew_share;
  std::vector<tp::Entry> members;                  // the bin, in the queue's order
  std::vector<std::vector<int32_t>> group_members;  // per group, its members' places in the bin (in bin order)
  std::vector<int32_t> group_comp;                 // per group, its component
  std::vector<MemberOps> member_ops;               // per member
  std::vector<uint64_t> comp_bin, obj_bin;         // per component / object: the bin that last saw it
  std::vector<int32_t> comp_group, obj_place;      // ... its group there / its place in that bin
  size_t ngroups = 0;
  uint64_t bin = 0;
  int64_t tick = 0;
  bool locked_records = false;  // direct calls: two threads may record into one component (a race, but no crash)
  std::atomic<bool> closing{false};

  BinParallel(tp::Run& run, int nworkers)
      : r(run),
        claims(run.d.ncomp),
        workers(nworkers),
        crew_share(new Worker[size_t(nworkers)]),
        comp_bin(size_t(run.d.ncomp), 0),
        obj_bin(size_t(run.d.nobj()), 0),
        comp_group(size_t(run.d.ncomp), -1),
        obj_place(size_t(run.d.nobj()), -1),
        locked_records(!run.d.touch_comp.empty()) {}

  void run_groups(int w);
  void worker_loop(int w);
  void form_groups();
  bool commit(int64_t K);
};

// Run::execute's context on a worker: the bin's tick, records into the group's component, operations buffered.
struct BufferedCtx {
  BinParallel& b;
  Worker& me;
  int32_t group;
  inline int64_t now() const { return b.tick; }
  inline void enter(int32_t, int32_t, int64_t) {}
  inline void leave(int32_t) {}
  inline void record(int32_t comp, int64_t when, int prio, int32_t name) {
    if (b.locked_records)
      b.r.record_locked(comp, when, prio, name);
    else
      b.r.record(comp, when, prio, name);
  }
  inline void touch(int32_t comp, int32_t name, int64_t when, int32_t obj) {
    if (!b.claims.claim(comp, group))
      b.r.race(comp, obj, when, "direct call into a component that group " + std::to_string(b.claims.holder(comp)) +
                                    " runs in the same bin");
    b.r.record_locked(comp, when, tp::CALL_PRIORITY, name);
  }
  inline bool apply(const tp::Op& op, int64_t when) {
    me.ops.push_back(Pending{op, when});
    return true;
  }
};

void BinParallel::run_groups(int w) {
  Worker& me = crew_share[size_t(w)];
  me.ops.clear();
  for (int32_t g : me.groups) {
    if (!claims.claim(group_comp[size_t(g)], g))
      r.race(group_comp[size_t(g)], -1, tick, "a direct call entered group " + std::to_string(g) + "'s component first");
    BufferedCtx c{*this, me, g};
    for (int32_t i : group_members[size_t(g)]) {
      MemberOps& m = member_ops[size_t(i)];
      m.worker = w;
      m.begin = int64_t(me.ops.size());
      r.execute(c, members[size_t(i)].obj, tick);
      m.end = int64_t(me.ops.size());
    }
  }
}

void BinParallel::worker_loop(int w) {
  uint64_t seen = 0;
  Worker& me = crew_share[size_t(w)];
  while (true) {
    uint64_t g = me.slot.wait_posted(seen);
    seen = g;
    if (closing.load(std::memory_order_acquire)) return;
    run_groups(w);
    me.slot.finish(g);
  }
}

// One group per component (members keep the bin's order), each given to the worker with the fewest events.
void BinParallel::form_groups() {
  ngroups = 0;
  for (int w = 0; w < workers; ++w) {
    crew_share[size_t(w)].groups.clear();
    crew_share[size_t(w)].load = 0;
  }
  member_ops.assign(members.size(), MemberOps{});
  for (size_t i = 0; i < members.size(); ++i) {
    int32_t obj = members[i].obj;
    int32_t comp = r.objs[size_t(obj)].comp;
    obj_bin[size_t(obj)] = bin;
    obj_place[size_t(obj)] = int32_t(i);
    if (comp_bin[size_t(comp)] != bin) {
      comp_bin[size_t(comp)] = bin;
      comp_group[size_t(comp)] = int32_t(ngroups);
      if (group_members.size() <= ngroups) group_members.emplace_back();
      group_members[ngroups].clear();
      if (group_comp.size() <= ngroups) group_comp.push_back(0);
      group_comp[ngroups] = comp;
      ngroups++;
    }
    group_members[size_t(comp_group[size_t(comp)])].push_back(int32_t(i));
  }
  for (size_t g = 0; g < ngroups; ++g) {
    int best = 0;
    for (int w = 1; w < workers; ++w)
      if (crew_share[size_t(w)].load < crew_share[size_t(best)].load) best = w;
    crew_share[size_t(best)].groups.push_back(int32_t(g));
    crew_share[size_t(best)].load += int64_t(group_members[g].size());
  }
}

// Apply every member's operations in the bin's order (what gem5's loop did between the events); false when the
// run stops (a gem5 assertion, or a hazard that this scheme cannot replay in sequential order: a race).
bool BinParallel::commit(int64_t K) {
  for (size_t i = members.size(); i-- > 0;) {  // THE PLANTED BUG: bin-parallel walks i = 0, 1, ... (the bin's order)
    const MemberOps& m = member_ops[i];
    const std::vector<Pending>& ops = crew_share[size_t(m.worker)].ops;
    for (int64_t k = m.begin; k < m.end; ++k) {
      const Pending& p = ops[size_t(k)];
      int32_t t = p.op.target;
      const char* hazard = nullptr;
      if (p.op.kind != tp::DESCHEDULE && tp::pack_key(p.when, r.objs[size_t(t)].prio) <= K)
        hazard = "a zero-delay operation into the running bin (gem5 would run it before the bin's later events)";
      else if (obj_bin[size_t(t)] == bin && obj_place[size_t(t)] > int32_t(i))
        hazard = "an operation on a later event of the same bin, which already ran";
      if (hazard != nullptr) {
        r.race(r.objs[size_t(t)].comp, t, p.when, std::string(hazard) + " (bin-parallel stops here)");
        r.stop.store(true, std::memory_order_release);
        return false;
      }
      if (!r.apply_now(q, p.op, p.when, tick)) return false;
    }
  }
  return true;
}

void run_bin_parallel(tp::Run& r, tp::Result& res, tp::Crew& crew) {
  int workers = std::max(1, r.o.workers);
  BinParallel b(r, workers);
  tp::Queue& q = b.q;
  q.heap.reserve(1024);
  if (!r.init_ops(q)) return;
  int64_t min_parallel = tp::option_int(r.o, "min_parallel");
  if (workers > 1) crew.start([&b](int w) { b.worker_loop(w); });
  auto t0 = tp::Clock::now();
  int64_t parallel_bins = 0, serial_bins = 0, groups = 0;
  if (workers == 1) {
    tp::seq_loop(r, q);
  } else {
    while (tp::take_bin(r, q, b.members)) {
      int64_t K = b.members[0].key;
      b.bin++;
      if (int64_t(b.members.size()) >= min_parallel) b.form_groups();
      if (int64_t(b.members.size()) < min_parallel || b.ngroups < 2) {
        // gem5's loop: put the bin back (same keys and ties) and serve up to its key, children included.
        serial_bins++;
        for (const tp::Entry& e : b.members) q.heap.push(e);
        tp::Entry h;
        bool ok = true;
        while (ok && r.live_head(q, h) && h.key <= K) ok = tp::service_one(r, q, h);
        if (!ok) break;
        continue;
      }
      parallel_bins++;
      groups += int64_t(b.ngroups);
      for (const tp::Entry& e : b.members) r.unschedule(e);  // served: no longer scheduled while they run
      b.tick = tp::key_when(K);
      q.cur_tick = b.tick;
      r.executed += int64_t(b.members.size());
      b.claims.set_batch(b.bin);
      for (int w = 1; w < workers; ++w) b.crew_share[size_t(w)].slot.post(b.bin);
      b.run_groups(0);
      for (int w = 1; w < workers; ++w) b.crew_share[size_t(w)].slot.wait_finished(b.bin);
      if (!b.commit(K)) break;
    }
  }
  double loop_s = tp::seconds_since(t0);
  if (workers > 1) {
    b.closing.store(true, std::memory_order_release);
    for (int w = 1; w < workers; ++w) b.crew_share[size_t(w)].slot.post(b.bin + 1);
    crew.finish_self();
    crew.join();
  }
  tp::add_stat(res, "loop_s", loop_s);
  tp::add_stat(res, "parallel_bins", double(parallel_bins));
  tp::add_stat(res, "serial_bins", double(serial_bins));
  tp::add_stat(res, "groups", double(groups));
  tp::add_stat(res, "batches", double(workers > 1 ? parallel_bins + serial_bins : r.executed));
  res.cur_tick = q.cur_tick;
}

}  // namespace

TICKPAR_NATIVE_STRATEGY(kDeclaration, run_bin_parallel)
