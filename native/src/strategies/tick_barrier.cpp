// The tick-barrier strategy, on the public API: each (tick, priority) bin run by groups in parallel, committed
// in sequential order.  Its batch machinery is its own (this file's anonymous namespace); the queue, the bins,
// executing an occurrence, the claims, the crew and the stats are the API's (tickpar/strategy.hpp).
#include "tickpar/strategy.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace tp {
namespace {

// -- tick-barrier ------------------------------------------------------------------------------
// An insertion deferred to the commit.  `pid` stamps the object meanwhile, and stays its identity in the
// queue after the commit (Entry::serial), so the commit need not write the object's line, which its worker
// holds; `live` (the group's last word on it) spares the commit from reading it.
struct PendOp {
  int32_t obj;
  bool live;
  int64_t key;
  int64_t source;
  uint64_t pid;
};
struct Exec {
  int64_t key;
  int64_t tie;
  int64_t ops_begin;
};
struct Child {
  int64_t key;
  int64_t tie;
  int64_t n;
  int64_t op;  // index into the group's ops
};
inline bool child_after(const Child& a, const Child& b) {  // std heap comparator: min-heap by (key, tie, n)
  if (a.key != b.key) return a.key > b.key;
  if (a.tie != b.tie) return a.tie > b.tie;
  return a.n > b.n;
}

// What one worker writes while running its groups, read back by the forming thread at the commit: every
// group it runs appends to the same buffers, and the worker reuses them batch after batch, so the commit
// reads a few contiguous runs of lines per worker, not a few scattered lines per group.
struct WorkerOut {
  std::vector<PendOp> ops;
  std::vector<Exec> execs;
  std::vector<Child> children;  // the running group's zero-delay children (a heap; one group at a time)
};

// A group's run: its slices of its worker's buffers (WorkerOut) and its outcome.  What the commit reads of
// it is its first line, the rest stays with its worker (`trouble` says when the commit must look further).
struct alignas(64) Group {
  int32_t gid = 0;       // the batch's group index (its claims' mark)
  bool trouble = false;  // error.set or viols: the commit's slow path
  int64_t exec_begin = 0, exec_end = 0, ops_end = 0;
  int64_t nchild = 0;
  std::vector<PendOp>& ops;
  std::vector<Exec>& execs;
  // -- the worker's own from here
  std::vector<Child>& children;
  int64_t& local_children;  // its worker's counts (WorkerGroups)
  int64_t& late_children;
  const Entry* members = nullptr;
  const Entry* members_end = nullptr;
  uint64_t* pids = nullptr;  // its worker's pid counter
  uint64_t pid_base = 0;     // its worker's bits of the pid
  std::vector<std::pair<int64_t, Violation>> viols;  // (exec index, violation)
  Failure error;
  Group(WorkerOut& out, int64_t& local, int64_t& late)
      : ops(out.ops), execs(out.execs), children(out.children), local_children(local), late_children(late) {}
  void reset(int32_t id, const Entry* begin, const Entry* end) {
    gid = id;
    trouble = false;
    members = begin;
    members_end = end;
    children.clear();
    exec_begin = exec_end = int64_t(execs.size());
    ops_end = int64_t(ops.size());
    if (!viols.empty()) viols.clear();
    if (error.set) error = Failure();
    nchild = 0;
  }
};

// The groups one worker ran in this batch (the first `used` of `pool`) and their buffers.
struct alignas(64) WorkerGroups {
  WorkerOut out;
  std::vector<Group> pool;
  size_t used = 0;
  uint64_t pids = 0;  // pending-op ids: unique over the run (with the worker's number in the top bits)
  int64_t local_children = 0, late_children = 0;  // over the run, its groups' counts
  void begin_batch() {
    used = 0;
    out.ops.clear();
    out.execs.clear();
  }
  Group& take() {
    if (pool.size() <= used) pool.emplace_back(out, local_children, late_children);
    return pool[used++];
  }
};

// One worker's share of a parallel batch, on lines of its own.  The forming thread writes `list`, `count`
// and `next`, then `gen` (release); the worker takes its groups with `next`, and so do the others once they
// run out of their own (stealing: a worker descheduled on an oversubscribed machine holds nobody up).
struct alignas(64) Slot {
  std::atomic<uint64_t> gen{0};  // the batch number posted to this worker
  std::atomic<int> next{0};      // its next group (fetch_add by the owner and by thieves)
  int count = 0;
  std::vector<int32_t> list;     // group indices
  int64_t load = 0;              // events assigned (the forming thread's bookkeeping)
};
struct alignas(64) DoneFlag {
  std::atomic<uint64_t> gen{0};  // the last batch this worker finished (written by the worker alone)
};

struct TB {
  Run& r;
  Queue q;
  ComponentClaims claims;  // per component, the group of this batch that holds it
  bool lock_records = false;
  int64_t kbatch = 0, tick = 0;
  // The batch's plan (written by the forming thread, read by the workers): the bin's members sorted by
  // group, group g's at plan[plan_off[g] .. plan_off[g + 1]).
  std::vector<Entry> plan;
  std::vector<int32_t> plan_off;
  std::vector<int32_t> member_gid;  // per bin member, its group
  std::vector<int32_t> cursor;      // tb_group's fill position per group
  std::vector<Group*> commit_groups;
  std::vector<size_t> by_gid;     // group index -> its place in commit_groups
  const Entry* bin = nullptr;     // the bin (the forming thread's members, in queue order)
  std::vector<size_t> commit_pos;
  size_t ngroups = 0;
  int workers = 1;
  std::unique_ptr<Slot[]> slots;
  std::unique_ptr<DoneFlag[]> done;
  std::unique_ptr<WorkerGroups[]> ran;
  uint64_t batch = 0;
  alignas(64) std::atomic<bool> closing{false};
  alignas(64) std::atomic<bool> unsure{false};  // a message was moved in this batch (see PendOp)
  explicit TB(Run& run, int nworkers)
      : r(run),
        claims(run.d.ncomp),
        workers(nworkers),
        slots(new Slot[size_t(nworkers)]),
        done(new DoneFlag[size_t(nworkers)]),
        ran(new WorkerGroups[size_t(nworkers)]) {}

  // Group g's claim on comp for this batch: true if it holds it (now or already), false if another group does.
  bool claim(int32_t comp, const Group& g) { return claims.claim(comp, g.gid); }
  // The group that holds comp in this batch (-1: none).
  int32_t holder(int32_t comp) const { return claims.holder(comp); }
  void run_group(Group& g);
  void run_events(Group& g);
  // Worker w's part of the batch: its own groups, then whatever the others have not started.
  void work(int w) {
    WorkerGroups& mine = ran[size_t(w)];
    mine.begin_batch();
    for (int k = 0; k < workers; ++k) {
      Slot& s = slots[size_t((w + k) % workers)];
      int i;
      while ((i = s.next.fetch_add(1, std::memory_order_acq_rel)) < s.count) {
        int32_t gi = s.list[size_t(i)];
        Group& g = mine.take();
        g.reset(gi, plan.data() + plan_off[size_t(gi)], plan.data() + plan_off[size_t(gi) + 1]);
        g.pids = &mine.pids;
        g.pid_base = PENDING_BIT | (uint64_t(w) << 48);
        for (const Entry* e = g.members; e != g.members_end; ++e) __builtin_prefetch(&r.objs[size_t(e->obj)], 1);
        run_group(g);
      }
    }
  }
  // Every group run in this batch, whoever ran it.
  template <class F>
  void each_ran(F f) {
    for (int w = 0; w < workers; ++w) {
      WorkerGroups& wg = ran[size_t(w)];
      for (size_t j = 0; j < wg.used; ++j) f(wg.pool[j]);
    }
  }
  // Share the formed groups out (each to the worker with the fewest events so far: the first to the
  // forming thread) and post them.
  void post() {
    for (int w = 0; w < workers; ++w) {
      slots[size_t(w)].list.clear();
      slots[size_t(w)].load = 0;
    }
    for (size_t gi = 0; gi < ngroups; ++gi) {
      int best = 0;
      for (int w = 1; w < workers; ++w)
        if (slots[size_t(w)].load < slots[size_t(best)].load) best = w;
      slots[size_t(best)].list.push_back(int32_t(gi));
      slots[size_t(best)].load += plan_off[gi + 1] - plan_off[gi];
    }
    batch++;
    claims.set_batch(batch);
    unsure.store(false, std::memory_order_relaxed);
    for (int w = 0; w < workers; ++w) {
      Slot& s = slots[size_t(w)];
      s.count = int(s.list.size());
      s.next.store(0, std::memory_order_relaxed);
    }
    for (int w = 1; w < workers; ++w) slots[size_t(w)].gen.store(batch, std::memory_order_release);
  }
  void wait_workers() {
    for (int w = 1; w < workers; ++w) {
      Waiter wt;
      while (done[size_t(w)].gen.load(std::memory_order_acquire) != batch) wt.pause();
    }
  }
  void helper(int w) {
    uint64_t seen = 0;
    Slot& mine = slots[size_t(w)];
    while (true) {
      // Spin and yield, never sleep: the batches follow each other within microseconds, and a sleeping
      // worker would cost a wake-up per batch (no faster than yielding, even with more threads than cores).
      Waiter wt;
      uint64_t g;
      while ((g = mine.gen.load(std::memory_order_acquire)) == seen && !closing.load(std::memory_order_relaxed))
        wt.pause();
      if (closing.load(std::memory_order_acquire)) return;
      seen = g;
      work(w);
      done[size_t(w)].gen.store(g, std::memory_order_release);
    }
  }
};

struct TBCtx {
  Run& r;
  TB& tb;
  Group& g;
  inline int64_t now() const { return tb.tick; }
  inline void enter(int32_t, int32_t, int64_t) {}
  inline void leave(int32_t) {}
  inline void record(int32_t comp, int64_t when, int prio, int32_t name) {
    if (tb.lock_records)
      r.record_locked(comp, when, prio, name);
    else
      r.record(comp, when, prio, name);
  }
  inline void touch(int32_t comp, int32_t name, int64_t when, int32_t obj) {
    if (!tb.claim(comp, g))
      r.race(comp, -1, when,
             "direct call from event " + std::to_string(obj) + ": group " + std::to_string(g.gid) +
                 " entered while group " + std::to_string(tb.holder(comp)) + " inside");
    r.record_locked(comp, when, CALL_PRIORITY, name);
  }
  bool gfail(const char* op, int32_t obj, int64_t when, const char* reason) {
    Violation v{op, obj, when, tb.tick, reason};
    if (r.o.checks) {
      g.error.set = true;
      g.error.kind = "causality";
      g.error.op = op;
      g.error.obj = obj;
      g.error.when = when;
      g.error.cur_tick = tb.tick;
      g.error.reason = reason;
      return false;
    }
    g.viols.push_back({int64_t(g.execs.size()) - 1, v});
    return true;
  }
  void own(int32_t t) {  // an operation on a long-lived event: the group must own its component
    int32_t comp = r.objs[size_t(t)].comp;
    if (tb.claim(comp, g)) return;
    r.race(comp, t, tb.tick,
           "group " + std::to_string(g.gid) + " operates on event " + std::to_string(t) + " while group " +
               std::to_string(tb.holder(comp)) + " owns its component");
  }
  void defer(int32_t t, int64_t when, int64_t source) {
    ObjState& s = r.objs[size_t(t)];
    uint64_t pid = g.pid_base | ++*g.pids;
    s.stamp = pid;
    s.when = when;
    int64_t opi = int64_t(g.ops.size());
    int64_t key = pack_key(when, s.prio);
    g.ops.push_back(PendOp{t, true, key, source, pid});
    bool message = s.flags & 1;
    if (!message) own(t);
    if (key <= tb.kbatch) {  // a zero-delay child: the sequential run serves it before the rest of the bin
      int32_t comp = r.objs[size_t(t)].comp;
      if (!tb.claim(comp, g)) {
        r.race(comp, t, when,
               "zero-delay child of group " + std::to_string(g.gid) + " into a component owned by group " +
                   std::to_string(tb.holder(comp)));
        g.late_children++;
        return;
      }
      g.nchild++;
      int64_t tie = r.o.canonical ? (source == NO_SOURCE ? CHILD_UNSOURCED + g.nchild : source) : CHILD_GEM5 - g.nchild;
      g.children.push_back(Child{key, tie, g.nchild, opi});
      std::push_heap(g.children.begin(), g.children.end(), child_after);
      g.local_children++;
    }
  }
  bool apply(const Op& op, int64_t when) {
    int32_t t = op.target;
    ObjState& s = r.objs[size_t(t)];
    switch (op.kind) {
      case SCHEDULE:
        if (when < tb.tick && !gfail("schedule", t, when, "past")) return false;
        if (s.stamp != 0) {
          if (s.flags & 1) tb.unsure.store(true, std::memory_order_relaxed);
          if (!gfail("schedule", t, when, "already-scheduled")) return false;
          r.add_dup(t, s.stamp);
        }
        defer(t, when, op.source);
        return true;
      case RESCHEDULE:
      case RESCHEDULE_ALWAYS:
        if (when < tb.tick && !gfail("reschedule", t, when, "past")) return false;
        if (s.stamp == 0 && op.kind == RESCHEDULE && !gfail("reschedule", t, when, "not-scheduled")) return false;
        if (s.flags & 1) tb.unsure.store(true, std::memory_order_relaxed);
        defer(t, when, op.source);
        return true;
      case DESCHEDULE:
        if (!(s.flags & 1))
          own(t);
        else
          tb.unsure.store(true, std::memory_order_relaxed);
        if (s.stamp == 0) {
          if (!gfail("deschedule", t, s.when, "not-scheduled")) return false;
          if (!r.pop_any_dup(t)) {
            g.error.set = true;
            g.error.kind = "crash";
            g.error.op = "deschedule";
            g.error.obj = t;
            g.error.when = s.when;
            g.error.cur_tick = tb.tick;
            g.error.reason = "event not found!";
            g.error.message = "event not found!";
            return false;
          }
          return true;
        }
        s.stamp = 0;
        return true;
      default:
        return false;
    }
  }
};

void TB::run_group(Group& g) {
  // The group's members' components, claimed as it starts: a lock key that splits a component between two
  // groups is a race (whichever group comes second sees it).
  int32_t last = -1;
  for (const Entry* m = g.members; m != g.members_end; ++m) {
    int32_t comp = r.objs[size_t(m->obj)].comp;
    if (comp == last) continue;
    last = comp;
    if (!claim(comp, g))
      r.race(comp, m->obj, tick,
             "lock key splits a component: event " + std::to_string(m->obj) + " in group " + std::to_string(g.gid) +
                 ", other events in group " + std::to_string(holder(comp)) + " of the same batch");
  }
  int64_t ops_begin = int64_t(g.ops.size());
  run_events(g);
  g.exec_end = int64_t(g.execs.size());
  g.ops_end = int64_t(g.ops.size());
  g.trouble = g.error.set || !g.viols.empty();
  // Which of the group's insertions are still live: no other group may move them (own(); a message moved
  // by anyone sets `unsure` and the commit looks for itself), so this is the commit's answer too.
  for (int64_t i = ops_begin; i < g.ops_end; ++i) {
    PendOp& op = g.ops[size_t(i)];
    const ObjState& s = r.objs[size_t(op.obj)];
    op.live = s.stamp == op.pid || (s.ndups && r.has_dup(op.obj, op.pid));
  }
}

void TB::run_events(Group& g) {
  TBCtx c{r, *this, g};
  auto run_child = [&](const Child& ch) -> bool {
    PendOp op = g.ops[size_t(ch.op)];
    ObjState& s = r.objs[size_t(op.obj)];
    if (s.stamp == op.pid) {
      s.stamp = 0;
    } else if (!(s.ndups && r.take_dup(op.obj, op.pid))) {
      return true;  // no longer live: rescheduled or descheduled meanwhile
    }
    g.execs.push_back(Exec{ch.key, ch.tie, int64_t(g.ops.size())});
    return r.execute(c, op.obj, key_when(op.key));
  };
  for (const Entry* ep = g.members; ep != g.members_end; ++ep) {
    const Entry& e = *ep;
    while (!g.children.empty() && (g.children.front().key < kbatch || g.children.front().tie < e.tie)) {
      std::pop_heap(g.children.begin(), g.children.end(), child_after);
      Child ch = g.children.back();
      g.children.pop_back();
      if (!run_child(ch)) return;
    }
    ObjState& s = r.objs[size_t(e.obj)];
    if (s.stamp == e.serial) {
      s.stamp = 0;
    } else if (!(s.ndups && r.take_dup(e.obj, e.serial))) {
      continue;  // an earlier event of the batch rescheduled or descheduled it
    }
    g.execs.push_back(Exec{e.key, e.tie, int64_t(g.ops.size())});
    if (!r.execute(c, e.obj, key_when(e.key))) return;
  }
  while (!g.children.empty()) {
    std::pop_heap(g.children.begin(), g.children.end(), child_after);
    Child ch = g.children.back();
    g.children.pop_back();
    if (!run_child(ch)) return;
  }
}

// What run_tick_barrier counts (its stats).
struct TBCounts {
  int64_t parallel_batches = 0, serial_runs = 0, ngroups_total = 0, parallel_events = 0, replayed = 0,
          small_batches = 0;
};

// Group the popped bin `members` by lock key into tb's plan (tb.ngroups groups); a bin smaller than
// min_parallel gets none.  key_batch/key_gid: per lock key, the batch that last used it and its group there.
inline void tb_group(TB& tb, Run& r, const std::vector<Entry>& members, std::vector<int64_t>& key_batch,
                     std::vector<int32_t>& key_gid, int64_t& batch_no) {
  bool by_name = r.o.lock_by_name;
  tb.ngroups = 0;
  if (int(members.size()) < std::max(2, r.o.min_parallel)) return;
  batch_no++;
  tb.bin = members.data();
  tb.member_gid.resize(members.size());
  tb.plan_off.clear();
  for (size_t i = 0; i < members.size(); ++i) {
    const Entry& m = members[i];
    size_t k = size_t(by_name ? r.objs[size_t(m.obj)].name : r.objs[size_t(m.obj)].comp);
    if (key_batch[k] != batch_no) {
      key_batch[k] = batch_no;
      key_gid[k] = int32_t(tb.ngroups++);
      tb.plan_off.push_back(0);
    }
    tb.member_gid[i] = key_gid[k];
    tb.plan_off[size_t(key_gid[k])]++;
  }
  // counts -> offsets (a counting sort: each group's members keep the bin's order)
  int32_t at = 0;
  for (size_t g = 0; g < tb.ngroups; ++g) {
    int32_t c = tb.plan_off[g];
    tb.plan_off[g] = at;
    at += c;
  }
  tb.plan_off.push_back(at);
  tb.by_gid.resize(tb.ngroups);
  tb.plan.resize(members.size());
  tb.cursor.assign(tb.plan_off.begin(), tb.plan_off.end() - 1);
  for (size_t i = 0; i < members.size(); ++i) tb.plan[size_t(tb.cursor[size_t(tb.member_gid[i])]++)] = members[i];
}

// Whether handing a bin out pays: the members' recorded work (their next occurrences), times the share of
// it the other threads would take, against what the hand-off costs (Options::min_batch_ns, batch_event_ns).
inline bool tb_pays(const Run& r, const std::vector<Entry>& members, int workers) {
  if (r.o.min_batch_ns <= 0 && r.o.batch_event_ns <= 0) return true;
  double work_us = 0;
  for (const Entry& m : members) {
    const ObjState& s = r.objs[size_t(m.obj)];
    if (s.occ_cur >= 0) work_us += r.d.occ[size_t(s.occ_cur)].work_us;
  }
  double cost = r.o.min_batch_ns + r.o.batch_event_ns * double(members.size());
  return work_us * 1e3 * (1.0 - 1.0 / double(workers)) >= cost;
}

// The plain gem5 loop: the popped bin (with whatever the queue would serve before each entry), then whatever
// else is due up to its key K.  False when the run stops.
inline bool tb_serial(Run& r, Queue& q, const std::vector<Entry>& members, int64_t K) {
  bool ok = true;
  for (const Entry& m : members) {
    Entry h;
    while (ok && r.live_head(q, h) && before(h, m)) ok = service_one(r, q, h);
    if (!ok) break;
    if (!r.live(m)) continue;
    r.unschedule(m);
    q.cur_tick = key_when(m.key);
    r.executed++;
    SeqCtx c{r, q};
    if (!r.execute(c, m.obj, q.cur_tick)) {
      ok = false;
      break;
    }
  }
  Entry h;
  while (ok && r.live_head(q, h) && h.key <= K) ok = service_one(r, q, h);
  return ok;
}

// Post the batch to the workers, work on it here too, wait for them (the barrier).
inline void tb_run_batch(TB& tb) {
  tb.post();
  tb.work(0);
  tb.wait_workers();
}

// Commit in the order the sequential run would have made the insertions: the global queue would always serve
// the smallest (key, tie) among the groups' next events.  True when the run failed (it stops).
inline bool tb_commit(TB& tb, Run& r, Queue& q, TBCounts& n) {
  std::vector<Group*>& gs = tb.commit_groups;
  gs.clear();
  tb.each_ran([&](Group& g) {
    gs.push_back(&g);
  });
  bool unsure = tb.unsure.load(std::memory_order_relaxed);
  size_t G = gs.size();
  std::vector<size_t>& pos = tb.commit_pos;
  pos.assign(G, 0);
  bool children = false;
  for (size_t gi = 0; gi < G; ++gi) {
    tb.by_gid[size_t(gs[gi]->gid)] = gi;
    children |= gs[gi]->nchild > 0;
    pos[gi] = size_t(gs[gi]->exec_begin);
  }
  bool failed = false;
  // The next exec in commit order, as (index into gs, index into its execs); false when all are done.
  // Without zero-delay children every exec is a bin member's, in the bin's order: walk the bin.  Else merge
  // the groups' exec lists by (key, tie), as the global queue would serve them.
  size_t walk = 0;
  auto next_exec = [&](size_t& gsi, size_t& j) -> bool {
    if (!children) {
      for (; walk < tb.member_gid.size(); ++walk) {
        size_t gi = tb.by_gid[size_t(tb.member_gid[walk])];
        const Group& g = *gs[gi];
        if (pos[gi] >= size_t(g.exec_end)) continue;
        const Exec& x = g.execs[pos[gi]];
        const Entry& m = tb.bin[walk];
        if (x.key != m.key || x.tie != m.tie) continue;  // skipped: no longer live when its turn came
        walk++;
        gsi = gi;
        j = pos[gi]++;
        return true;
      }
      return false;
    }
    int best = -1;
    for (size_t gi = 0; gi < G; ++gi) {
      const Group& g = *gs[gi];
      if (pos[gi] >= size_t(g.exec_end)) continue;
      const Exec& x = g.execs[pos[gi]];
      if (best < 0) {
        best = int(gi);
        continue;
      }
      const Exec& y = gs[size_t(best)]->execs[pos[size_t(best)]];
      if (x.key < y.key || (x.key == y.key && x.tie < y.tie)) best = int(gi);
    }
    if (best < 0) return false;
    gsi = size_t(best);
    j = pos[gsi]++;
    return true;
  };
  size_t gsi = 0, j = 0;
  while (next_exec(gsi, j)) {
    Group& g = *gs[gsi];
    if (g.trouble && g.error.set && int64_t(j) + 1 == g.exec_end) {
      r.set_failure(g.error);  // the sequential run stops inside this event
      failed = true;
      break;
    }
    n.parallel_events++;
    int64_t end = int64_t(j) + 1 < g.exec_end ? g.execs[j + 1].ops_begin : g.ops_end;
    for (int64_t k = g.execs[j].ops_begin; k < end; ++k) {
      const PendOp& op = g.ops[size_t(k)];
      uint64_t serial = ++q.serial;
      int64_t tie = r.o.canonical ? (op.source == NO_SOURCE ? UNSOURCED_BASE + int64_t(serial) : op.source)
                                  : -int64_t(serial);
      // Overridden, descheduled or already run: its insertion number is used up all the same.
      if (unsure) {
        const ObjState& s = r.objs[size_t(op.obj)];
        if (!(s.stamp == op.pid || (s.ndups && r.has_dup(op.obj, op.pid)))) continue;
      } else if (!op.live) {
        continue;
      }
      q.heap.push(Entry{op.key, tie, op.pid, op.obj});
      n.replayed++;
    }
    if (g.trouble)
      for (auto& gv : g.viols)
        if (gv.first == int64_t(j)) r.add_violation(gv.second);
  }
  if (!failed) {
    for (Group* g : gs)
      if (g->trouble && g->error.set) {
        r.set_failure(g->error);
        failed = true;
        break;
      }
  }
  for (Group* g : gs) r.executed += g->exec_end - g->exec_begin;
  return failed;
}

void run_tick_barrier(Run& r, Result& res, Crew& crew) {
  int workers = std::max(1, r.o.workers);
  TB tb(r, workers);
  Queue& q = tb.q;
  q.heap.reserve(1024);
  const Dag& d = r.d;
  bool by_name = r.o.lock_by_name;
  tb.lock_records = by_name || !d.touch_comp.empty();
  if (!r.init_ops(q)) return;
  // The helpers idle in their pool between batches; the clock starts once all of them run.
  if (workers > 1) crew.start([&tb](int w) { tb.helper(w); });
  auto t0 = Clock::now();
  double loop_s = 0;
  TBCounts n;
  if (workers == 1) {
    seq_loop(r, q);
    loop_s = seconds_since(t0);
  } else {
    size_t nkeys = size_t(by_name ? std::max(r.nnames, 1) : std::max(d.ncomp, 1));
    std::vector<int64_t> key_batch(nkeys, -1);
    std::vector<int32_t> key_gid(nkeys, -1);
    std::vector<Entry> members;
    int64_t batch_no = 0;
    while (take_bin(r, q, members)) {
      int64_t K = members[0].key;
      tb.ngroups = 0;
      if (int(members.size()) < std::max(2, r.o.min_parallel)) {
      } else if (tb_pays(r, members, workers)) {
        tb_group(tb, r, members, key_batch, key_gid, batch_no);
      } else {
        n.small_batches++;
      }
      if (tb.ngroups < 2) {
        n.serial_runs++;
        if (!tb_serial(r, q, members, K)) break;
        continue;
      }
      // A parallel batch.
      n.parallel_batches++;
      n.ngroups_total += int64_t(tb.ngroups);
      tb.kbatch = K;
      tb.tick = key_when(K);
      q.cur_tick = tb.tick;
      tb_run_batch(tb);
      if (tb_commit(tb, r, q, n)) break;
    }
    loop_s = seconds_since(t0);  // the last batch committed: the helpers only idle from here
    tb.closing.store(true, std::memory_order_release);
    crew.finish_self();
    crew.join();
    add_stat(res, "spawn_s", crew.spawn_s());
    add_stat(res, "threads_created", double(crew.threads_created()));
    add_stat(res, "pinned", crew.pinned() ? 1.0 : 0.0);
  }
  add_stat(res, "loop_s", loop_s);
  add_stat(res, "parallel_batches", double(n.parallel_batches));
  add_stat(res, "serial_runs", double(n.serial_runs));
  add_stat(res, "small_batches", double(n.small_batches));
  add_stat(res, "batches", double(workers > 1 ? n.parallel_batches + n.serial_runs : r.executed));
  add_stat(res, "barriers", double(n.parallel_batches));
  add_stat(res, "groups", double(n.ngroups_total));
  add_stat(res, "parallel_events", double(n.parallel_events));
  int64_t local_children = 0, late_children = 0;
  for (int w = 0; w < workers; ++w) {
    local_children += tb.ran[size_t(w)].local_children;
    late_children += tb.ran[size_t(w)].late_children;
  }
  add_stat(res, "local_children", double(local_children));
  add_stat(res, "late_children", double(late_children));
  add_stat(res, "replayed_ops", double(n.replayed));
  res.cur_tick = q.cur_tick;
}

}  // namespace

TICKPAR_BUILTIN_STRATEGY("tick-barrier", run_tick_barrier)

}  // namespace tp
