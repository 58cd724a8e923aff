// The tick-barrier strategy: each (tick, priority) bin run by groups in parallel, committed in sequential order.
// Internal to engine.cpp, the one translation unit that includes it (an anonymous namespace, as before the split).
#pragma once

#include "engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <thread>
#include <unordered_map>

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#endif
#include "sequential.hpp"

namespace tp {
namespace {

// -- tick-barrier ------------------------------------------------------------------------------
struct PendOp {
  int32_t obj;
  int64_t when;
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

struct Group {
  int32_t gid = 0;
  std::vector<Entry> members;
  std::vector<Child> children;
  std::vector<PendOp> ops;
  std::vector<Exec> execs;
  std::vector<std::pair<int64_t, Violation>> viols;  // (exec index, violation)
  Failure error;
  int64_t nchild = 0, local_children = 0, late_children = 0;
  uint32_t pid_next = 0;
  std::vector<int32_t> claimed;
  void reset(int32_t id) {
    gid = id;
    members.clear();
    children.clear();
    ops.clear();
    execs.clear();
    viols.clear();
    error = Failure();
    nchild = local_children = late_children = 0;
    pid_next = 0;
    claimed.clear();
  }
};

struct TB {
  Run& r;
  Queue q;
  std::unique_ptr<std::atomic<int32_t>[]> owner;  // per component: the group that owns it in this batch
  bool lock_records = false;
  int64_t kbatch = 0, tick = 0;
  std::vector<Group> groups;
  size_t ngroups = 0;
  // pool (its threads: the run's Crew)
  alignas(64) std::atomic<uint64_t> gen{0};
  alignas(64) std::atomic<int> next{0};
  alignas(64) std::atomic<int> done{0};
  std::atomic<bool> closing{false};
  explicit TB(Run& run) : r(run) {}

  bool claim(int32_t comp, Group& g) {
    int32_t exp = -1;
    if (owner[comp].compare_exchange_strong(exp, g.gid, std::memory_order_acq_rel)) {
      g.claimed.push_back(comp);
      return true;
    }
    return exp == g.gid;
  }
  void run_group(Group& g);
  void work() {
    while (true) {
      int i = next.fetch_add(1, std::memory_order_acq_rel);
      if (size_t(i) >= ngroups) return;
      run_group(groups[size_t(i)]);
    }
  }
  void helper() {
    uint64_t seen = 0;
    while (true) {
      // Spin and yield, never sleep: every helper checks in at every batch, so sleeping helpers cost a
      // wake-up each per batch (no faster than yielding, even with more threads than cores).
      Waiter w;
      uint64_t g;
      while ((g = gen.load(std::memory_order_acquire)) == seen) w.pause();
      seen = g;
      if (closing.load(std::memory_order_acquire)) return;
      work();
      done.fetch_add(1, std::memory_order_acq_rel);
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
    if (!(tb.owner[comp].load(std::memory_order_acquire) == g.gid || tb.claim(comp, g)))
      r.race(comp, -1, when,
             "direct call from event " + std::to_string(obj) + ": group " + std::to_string(g.gid) +
                 " entered while group " + std::to_string(tb.owner[comp].load()) + " inside");
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
    if (tb.owner[comp].load(std::memory_order_acquire) == g.gid || tb.claim(comp, g)) return;
    r.race(comp, t, tb.tick,
           "group " + std::to_string(g.gid) + " operates on event " + std::to_string(t) + " while group " +
               std::to_string(tb.owner[comp].load()) + " owns its component");
  }
  void defer(int32_t t, int64_t when, int64_t source) {
    ObjState& s = r.objs[size_t(t)];
    uint64_t pid = PENDING_BIT | (uint64_t(uint32_t(g.gid)) << 32) | uint64_t(++g.pid_next);
    s.stamp = pid;
    s.when = when;
    int64_t opi = int64_t(g.ops.size());
    g.ops.push_back(PendOp{t, when, source, pid});
    bool message = r.objs[size_t(t)].flags & 1;
    if (!message) own(t);
    int64_t key = pack_key(when, r.objs[size_t(t)].prio);
    if (key <= tb.kbatch) {  // a zero-delay child: the sequential run serves it before the rest of the bin
      int32_t comp = r.objs[size_t(t)].comp;
      if (tb.owner[comp].load(std::memory_order_acquire) != g.gid && !tb.claim(comp, g)) {
        r.race(comp, t, when,
               "zero-delay child of group " + std::to_string(g.gid) + " into a component owned by group " +
                   std::to_string(tb.owner[comp].load()));
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
          if (!gfail("schedule", t, when, "already-scheduled")) return false;
          r.add_dup(t, s.stamp);
        }
        defer(t, when, op.source);
        return true;
      case RESCHEDULE:
      case RESCHEDULE_ALWAYS:
        if (when < tb.tick && !gfail("reschedule", t, when, "past")) return false;
        if (s.stamp == 0 && op.kind == RESCHEDULE && !gfail("reschedule", t, when, "not-scheduled")) return false;
        defer(t, when, op.source);
        return true;
      case DESCHEDULE:
        if (!(r.objs[size_t(t)].flags & 1)) own(t);
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
    return r.execute(c, op.obj, op.when);
  };
  for (const Entry& e : g.members) {
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
  int64_t parallel_batches = 0, serial_runs = 0, ngroups_total = 0, parallel_events = 0, local_children = 0,
          late_children = 0, replayed = 0;
};

// Group the popped bin `members` by lock key into tb.groups (tb.ngroups of them); a bin smaller than
// min_parallel gets none.  key_batch/key_gid: per lock key, the batch that last used it and its group there.
inline void tb_group(TB& tb, Run& r, const std::vector<Entry>& members, std::vector<int64_t>& key_batch,
                     std::vector<int32_t>& key_gid, int64_t& batch_no) {
  bool by_name = r.o.lock_by_name;
  tb.ngroups = 0;
  if (int(members.size()) >= std::max(2, r.o.min_parallel)) {
    batch_no++;
    for (const Entry& m : members) {
      size_t k = size_t(by_name ? r.objs[size_t(m.obj)].name : r.objs[size_t(m.obj)].comp);
      if (key_batch[k] != batch_no) {
        key_batch[k] = batch_no;
        key_gid[k] = int32_t(tb.ngroups);
        if (tb.groups.size() <= tb.ngroups) tb.groups.emplace_back();
        tb.groups[tb.ngroups].reset(int32_t(tb.ngroups));
        tb.ngroups++;
      }
      tb.groups[size_t(key_gid[k])].members.push_back(m);
    }
  }
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

// Each group claims its members' components for the batch; a lock key that splits a component between two
// groups is a race.  Returns the components claimed.
inline std::vector<int32_t> tb_claim(TB& tb, Run& r) {
  std::vector<int32_t> start_claims;
  for (size_t gi = 0; gi < tb.ngroups; ++gi) {
    Group& g = tb.groups[gi];
    int32_t last = -1;
    for (const Entry& m : g.members) {
      int32_t comp = r.objs[size_t(m.obj)].comp;
      if (comp == last) continue;
      last = comp;
      int32_t exp = -1;
      if (tb.owner[comp].compare_exchange_strong(exp, g.gid)) {
        start_claims.push_back(comp);
      } else if (exp != g.gid) {
        r.race(comp, m.obj, tb.tick,
               "lock key splits a component: event " + std::to_string(m.obj) + " in group " +
                   std::to_string(g.gid) + ", other events in group " + std::to_string(exp) +
                   " of the same batch");
      }
    }
  }
  return start_claims;
}

// Release the helpers on the batch, work on it here too, wait for them (the barrier), release the claims.
inline void tb_run_batch(TB& tb, int workers, const std::vector<int32_t>& start_claims, TBCounts& n) {
  tb.next.store(0, std::memory_order_relaxed);
  tb.done.store(0, std::memory_order_relaxed);
  tb.gen.fetch_add(1, std::memory_order_acq_rel);  // release the helpers
  tb.work();
  Waiter w;
  while (tb.done.load(std::memory_order_acquire) < workers - 1) w.pause();  // the barrier
  for (int32_t comp : start_claims) tb.owner[comp].store(-1, std::memory_order_relaxed);
  for (size_t gi = 0; gi < tb.ngroups; ++gi) {
    for (int32_t comp : tb.groups[gi].claimed) tb.owner[comp].store(-1, std::memory_order_relaxed);
    n.local_children += tb.groups[gi].local_children;
    n.late_children += tb.groups[gi].late_children;
  }
}

// Commit in the order the sequential run would have made the insertions: the global queue would always serve
// the smallest (key, tie) among the groups' next events.  True when the run failed (it stops).
inline bool tb_commit(TB& tb, Run& r, Queue& q, TBCounts& n) {
  std::vector<size_t> pos(tb.ngroups, 0);
  bool failed = false;
  while (true) {
    int best = -1;
    for (size_t gi = 0; gi < tb.ngroups; ++gi) {
      const Group& g = tb.groups[gi];
      if (pos[gi] >= g.execs.size()) continue;
      const Exec& x = g.execs[pos[gi]];
      if (best < 0) {
        best = int(gi);
        continue;
      }
      const Exec& y = tb.groups[size_t(best)].execs[pos[size_t(best)]];
      if (x.key < y.key || (x.key == y.key && x.tie < y.tie)) best = int(gi);
    }
    if (best < 0) break;
    Group& g = tb.groups[size_t(best)];
    size_t j = pos[size_t(best)]++;
    if (g.error.set && j + 1 == g.execs.size()) {
      r.set_failure(g.error);  // the sequential run stops inside this event
      failed = true;
      break;
    }
    n.parallel_events++;
    int64_t end = j + 1 < g.execs.size() ? g.execs[j + 1].ops_begin : int64_t(g.ops.size());
    for (int64_t k = g.execs[j].ops_begin; k < end; ++k) {
      const PendOp& op = g.ops[size_t(k)];
      uint64_t serial = ++q.serial;
      int64_t tie = r.o.canonical ? (op.source == NO_SOURCE ? UNSOURCED_BASE + int64_t(serial) : op.source)
                                  : -int64_t(serial);
      ObjState& s = r.objs[size_t(op.obj)];
      if (s.stamp == op.pid) {
        s.stamp = serial;
      } else if (!(s.ndups && r.replace_dup(op.obj, op.pid, serial))) {
        continue;  // overridden, descheduled or already run: its insertion number is used up all the same
      }
      q.heap.push(Entry{pack_key(op.when, r.objs[size_t(op.obj)].prio), tie, serial, op.obj});
      n.replayed++;
    }
    for (auto& gv : g.viols)
      if (gv.first == int64_t(j)) r.add_violation(gv.second);
  }
  if (!failed) {
    for (size_t gi = 0; gi < tb.ngroups; ++gi)
      if (tb.groups[gi].error.set) {
        r.set_failure(tb.groups[gi].error);
        failed = true;
        break;
      }
  }
  for (size_t gi = 0; gi < tb.ngroups; ++gi) r.executed += int64_t(tb.groups[gi].execs.size());
  return failed;
}

void run_tick_barrier(Run& r, Result& res) {
  TB tb(r);
  Queue& q = tb.q;
  q.heap.reserve(1024);
  const Dag& d = r.d;
  int workers = std::max(1, r.o.workers);
  bool by_name = r.o.lock_by_name;
  tb.lock_records = by_name || !d.touch_comp.empty();
  tb.owner.reset(new std::atomic<int32_t>[size_t(d.ncomp)]);
  for (int32_t i = 0; i < d.ncomp; ++i) tb.owner[i].store(-1);
  if (!r.init_ops(q)) return;
  // The helpers idle in their pool between batches; the clock starts once all of them run.
  Crew crew(workers);
  if (workers > 1) crew.start([&tb](int) { tb.helper(); });
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
    Entry head;
    while (!r.stop.load(std::memory_order_relaxed) && r.live_head(q, head)) {
      if (head.key >= r.end_key) {
        q.cur_tick = d.end_tick;
        break;
      }
      int64_t K = head.key;
      members.clear();
      Entry e;
      while (r.live_head(q, e) && e.key == K) {
        members.push_back(e);
        q.heap.pop();
      }
      tb_group(tb, r, members, key_batch, key_gid, batch_no);
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
      std::vector<int32_t> start_claims = tb_claim(tb, r);
      tb_run_batch(tb, workers, start_claims, n);
      if (tb_commit(tb, r, q, n)) break;
    }
    loop_s = seconds_since(t0);  // the last batch committed: the helpers only idle from here
    tb.closing.store(true, std::memory_order_release);
    tb.gen.fetch_add(1, std::memory_order_acq_rel);
    crew.finish_self();
    crew.join();
    res.stats.push_back({"spawn_s", crew.spawn_s()});
    res.stats.push_back({"pinned", crew.pinned() ? 1.0 : 0.0});
  }
  res.stats.push_back({"loop_s", loop_s});
  res.stats.push_back({"parallel_batches", double(n.parallel_batches)});
  res.stats.push_back({"serial_runs", double(n.serial_runs)});
  res.stats.push_back({"batches", double(workers > 1 ? n.parallel_batches + n.serial_runs : r.executed)});
  res.stats.push_back({"barriers", double(n.parallel_batches)});
  res.stats.push_back({"groups", double(n.ngroups_total)});
  res.stats.push_back({"parallel_events", double(n.parallel_events)});
  res.stats.push_back({"local_children", double(n.local_children)});
  res.stats.push_back({"late_children", double(n.late_children)});
  res.stats.push_back({"replayed_ops", double(n.replayed)});
  res.cur_tick = q.cur_tick;
}

}  // namespace
}  // namespace tp
