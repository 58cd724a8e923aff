// tickpar's native engine, public API (4/8): Run, everything one replay shares between its threads (the DAG,
// the options, object states, digests, operations), and executing an occurrence through a context.
#pragma once

#include "tickpar/engine.hpp"

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
#include "tickpar/queue.hpp"

namespace tp {

// Everything one replay shares between its threads.
struct Run {
  const Dag& d;
  const Options& o;
  std::vector<ObjState> objs;
  std::unique_ptr<CompOut[]> comps;
  int32_t nnames = 0;
  double rate = 0;  // spin iterations per microsecond
  int64_t end_key = INF;
  std::atomic<bool> stop{false};

  std::mutex dup_mu;
  std::unordered_map<int32_t, std::vector<uint64_t>> dups;

  std::mutex rec_mu;
  Failure failure;
  std::vector<Violation> violations;
  int64_t violations_total = 0;
  std::vector<RaceRec> races;
  int64_t races_total = 0;
  int64_t executed = 0;  // events processed (without direct calls)

  Run(const Dag& dag, const Options& opt) : d(dag), o(opt), objs(size_t(dag.nobj())), comps(new CompOut[dag.ncomp]) {
    for (int32_t i = 0; i < dag.nobj(); ++i) {
      ObjState& s = objs[size_t(i)];
      s.comp = dag.obj_comp[size_t(i)];
      s.name = dag.obj_name[size_t(i)];
      s.prio = dag.obj_prio[size_t(i)];
      s.flags = dag.obj_flags[size_t(i)];
      s.occ_cur = dag.obj_first[size_t(i)];
    }
    for (int32_t n : d.obj_name) nnames = std::max(nnames, n + 1);
    for (int32_t n : d.touch_name) nnames = std::max(nnames, n + 1);
    rate = opt.spin_per_us > 0 ? opt.spin_per_us : spin_rate();
    if (d.end_tick != NO_END) end_key = pack_key(d.end_tick, SIM_EXIT_PRI);
  }

  // Back to the state before the first event, for the next replay of the same call (no allocation: the
  // objects' and components' memory is the last replay's).
  void reset() {
    for (int32_t i = 0; i < d.nobj(); ++i) {
      ObjState& s = objs[size_t(i)];
      s.stamp = 0;
      s.when = 0;
      s.ndups = 0;
      s.occ_cur = d.obj_first[size_t(i)];
    }
    for (int32_t c = 0; c < d.ncomp; ++c) {
      CompOut& out = comps[c];
      out.count = 0;
      out.digest = 0;
      out.last_when = 0;
      out.trace.clear();
    }
    stop.store(false, std::memory_order_relaxed);
    dups.clear();
    failure = Failure();
    violations.clear();
    violations_total = 0;
    races.clear();
    races_total = 0;
    executed = 0;
  }

  // -- recording -----------------------------------------------------------------------
  inline void record(int32_t comp, int64_t when, int prio, int32_t name) {
    CompOut& c = comps[comp];
    c.digest = fold(c.digest, when, prio, name);
    if (prio != CALL_PRIORITY) {  // a direct call is folded into the digest, never counted as an event
      c.count++;
      c.last_when = when;
    }
    if (o.trace) c.trace.push_back({when, prio, name});
  }
  inline void record_locked(int32_t comp, int64_t when, int prio, int32_t name) {
    CompOut& c = comps[comp];
    while (c.lock.test_and_set(std::memory_order_acquire)) cpu_relax();
    record(comp, when, prio, name);
    c.lock.clear(std::memory_order_release);
  }

  void set_failure(const Failure& f) {
    std::lock_guard<std::mutex> g(rec_mu);
    if (!failure.set) {
      failure = f;
      failure.set = true;
    }
    stop.store(true, std::memory_order_release);
  }
  // A failed gem5 assertion: raise (checks on: stop the run) or record a violation (checks off).
  bool fail_now(const char* op, int32_t obj, int64_t when, int64_t now, const char* reason) {
    if (o.checks) {
      Failure f;
      f.kind = "causality";
      f.op = op;
      f.obj = obj;
      f.when = when;
      f.cur_tick = now;
      f.reason = reason;
      set_failure(f);
      return false;
    }
    add_violation(Violation{op, obj, when, now, reason});
    return true;
  }
  void add_violation(const Violation& v) {
    std::lock_guard<std::mutex> g(rec_mu);
    violations_total++;
    if (violations.size() < 1000) violations.push_back(v);
  }
  void race(int32_t comp, int32_t obj, int64_t when, std::string detail) {
    std::lock_guard<std::mutex> g(rec_mu);
    races_total++;
    if (races.size() < 100) races.push_back(RaceRec{comp, obj, when, std::move(detail)});
  }
  void crash_not_found(int32_t obj, int64_t when, int64_t now) {
    Failure f;
    f.kind = "crash";
    f.op = "deschedule";
    f.obj = obj;
    f.when = when;
    f.cur_tick = now;
    f.reason = "event not found!";
    f.message = "event not found!";
    set_failure(f);
  }
  void crash(const std::string& message) {
    Failure f;
    f.kind = "crash";
    f.message = message;
    set_failure(f);
  }

  // -- double schedules (checks=false) ------------------------------------------------------------
  void add_dup(int32_t obj, uint64_t stamp) {
    std::lock_guard<std::mutex> g(dup_mu);
    dups[obj].push_back(stamp);
    objs[obj].ndups++;
  }
  bool take_dup(int32_t obj, uint64_t stamp) {
    std::lock_guard<std::mutex> g(dup_mu);
    auto it = dups.find(obj);
    if (it == dups.end()) return false;
    auto& v = it->second;
    auto f = std::find(v.begin(), v.end(), stamp);
    if (f == v.end()) return false;
    v.erase(f);
    objs[obj].ndups--;
    return true;
  }
  bool has_dup(int32_t obj, uint64_t stamp) {
    std::lock_guard<std::mutex> g(dup_mu);
    auto it = dups.find(obj);
    return it != dups.end() && std::find(it->second.begin(), it->second.end(), stamp) != it->second.end();
  }
  bool pop_any_dup(int32_t obj) {
    std::lock_guard<std::mutex> g(dup_mu);
    auto it = dups.find(obj);
    if (it == dups.end() || it->second.empty()) return false;
    it->second.pop_back();
    objs[obj].ndups--;
    return true;
  }
  bool replace_dup(int32_t obj, uint64_t from, uint64_t to) {
    std::lock_guard<std::mutex> g(dup_mu);
    auto it = dups.find(obj);
    if (it == dups.end()) return false;
    for (auto& s : it->second)
      if (s == from) {
        s = to;
        return true;
      }
    return false;
  }

  // -- the queue ---------------------------------------------------------------------------------
  inline void insert(Queue& q, int32_t obj, int64_t when, int64_t source) {
    uint64_t serial = ++q.serial;
    int64_t tie;
    if (o.canonical)
      tie = source == NO_SOURCE ? UNSOURCED_BASE + int64_t(serial) : source;
    else
      tie = -int64_t(serial);
    ObjState& s = objs[obj];
    s.stamp = serial;
    s.when = when;
    q.heap.push(Entry{pack_key(when, s.prio), tie, serial, obj});
  }
  inline bool live(const Entry& e) {
    const ObjState& s = objs[e.obj];
    return s.stamp == e.serial || (s.ndups && has_dup(e.obj, e.serial));
  }
  // The live head (stale entries on top are dropped); false when nothing is queued.
  inline bool live_head(Queue& q, Entry& out) {
    while (!q.heap.empty()) {
      const Entry& e = q.heap.top();
      if (live(e)) {
        out = e;
        return true;
      }
      q.heap.pop();
    }
    return false;
  }
  // Take a live entry out of the object (it is being served): clears Scheduled, or forgets the duplicate.
  inline void unschedule(const Entry& e) {
    ObjState& s = objs[e.obj];
    if (s.stamp == e.serial)
      s.stamp = 0;
    else
      take_dup(e.obj, e.serial);
  }

  // gem5's schedule / reschedule / deschedule on a queue, now; false: the run stops.
  bool apply_now(Queue& q, const Op& op, int64_t when, int64_t now) {
    int32_t t = op.target;
    ObjState& s = objs[t];
    switch (op.kind) {
      case SCHEDULE:
        if (when < now && !fail_now("schedule", t, when, now, "past")) return false;
        if (s.stamp != 0) {
          if (!fail_now("schedule", t, when, now, "already-scheduled")) return false;
          add_dup(t, s.stamp);
        }
        insert(q, t, when, op.source);
        return true;
      case RESCHEDULE:
      case RESCHEDULE_ALWAYS:
        if (when < now && !fail_now("reschedule", t, when, now, "past")) return false;
        if (s.stamp == 0 && op.kind == RESCHEDULE && !fail_now("reschedule", t, when, now, "not-scheduled"))
          return false;
        insert(q, t, when, op.source);
        return true;
      case DESCHEDULE:
        if (s.stamp == 0) {
          if (!fail_now("deschedule", t, s.when, now, "not-scheduled")) return false;
          if (!pop_any_dup(t)) {
            crash_not_found(t, s.when, now);
            return false;
          }
          return true;
        }
        s.stamp = 0;
        return true;
      default:
        crash("unknown op kind " + std::to_string(int(op.kind)));
        return false;
    }
  }

  // Replay the next occurrence of `obj` at tick `when` through the context `c`.
  template <class Ctx>
  inline bool execute(Ctx& c, int32_t obj, int64_t when) {
    ObjState& s = objs[size_t(obj)];
    int64_t k = s.occ_cur;
    int32_t comp = s.comp;
    c.enter(comp, obj, when);
    c.record(comp, when, s.prio, s.name);
    bool ok = true;
    if (k >= 0) {
      const Occ& oc = d.occ[size_t(k)];
      s.occ_cur = oc.next;
      for (int64_t t = oc.touch_begin; t < oc.touch_end; ++t)
        c.touch(d.touch_comp[size_t(t)], d.touch_name[size_t(t)], when, obj);
      if (oc.work_us > 0) spin_iters(uint64_t(oc.work_us * rate + 0.5));
      for (int64_t i = oc.ops_begin; i < oc.ops_end; ++i) {
        const Op& op = d.ops[size_t(i)];
        int64_t w = op.mode == CLOCK ? c.now() + op.value : op.value;
        if (!c.apply(op, w)) {
          ok = false;
          break;
        }
      }
    }
    c.leave(comp);
    return ok;
  }

  bool init_ops(Queue& q) {
    for (int64_t i = 0; i < d.init_ops; ++i) {
      const Op& op = d.ops[size_t(i)];
      int64_t w = op.mode == CLOCK ? q.cur_tick + op.value : op.value;
      if (!apply_now(q, op, w, q.cur_tick)) return false;
    }
    return true;
  }
};

}  // namespace tp
