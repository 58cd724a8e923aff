// The split strategy: every worker pops from the one queue under its lock (the prototype).
// Internal to engine.cpp (an anonymous namespace), on the public API (tickpar/strategy.hpp).
#pragma once

#include "tickpar/strategy.hpp"

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

namespace tp {
namespace {

// -- split: the prototype --------------------------------------------------------------------
struct SplitShared {
  std::mutex qmu;
  Queue q;
  std::atomic<int64_t> cur_tick{0};
  int busy = 0;
  uint64_t progress = 0;
  std::mutex table_mu;
  std::unordered_map<int64_t, std::unique_ptr<std::mutex>> table;
  std::unique_ptr<std::atomic<int32_t>[]> occupant;
  std::vector<int64_t> pops, executed, lock_waits, stale_now;
  std::vector<double> idle_s;
};

struct SplitCtx {
  Run& r;
  SplitShared& S;
  int w;
  bool claimed = false;
  inline int64_t now() const { return S.cur_tick.load(std::memory_order_relaxed); }
  inline void enter(int32_t comp, int32_t obj, int64_t when) {
    int32_t exp = -1;
    if (S.occupant[comp].compare_exchange_strong(exp, w, std::memory_order_acq_rel)) {
      claimed = true;
    } else {
      claimed = false;
      if (exp != w)
        r.race(comp, obj, when,
               "worker " + std::to_string(w) + " entered while worker " + std::to_string(exp) + " was inside");
    }
  }
  inline void leave(int32_t comp) {
    if (claimed) S.occupant[comp].store(-1, std::memory_order_release);
  }
  inline void record(int32_t comp, int64_t when, int prio, int32_t name) { r.record_locked(comp, when, prio, name); }
  inline void touch(int32_t comp, int32_t name, int64_t when, int32_t) {
    int32_t exp = -1;
    bool mine = S.occupant[comp].compare_exchange_strong(exp, w, std::memory_order_acq_rel);
    if (!mine && exp != w)
      r.race(comp, -1, when,
             "direct call: worker " + std::to_string(w) + " entered while " + std::to_string(exp) + " inside");
    r.record_locked(comp, when, CALL_PRIORITY, name);
    if (mine) S.occupant[comp].store(-1, std::memory_order_release);
  }
  inline bool apply(const Op& op, int64_t when) {
    std::lock_guard<std::mutex> g(S.qmu);  // gem5 expects schedule under the queue's service mutex
    return r.apply_now(S.q, op, when, S.cur_tick.load(std::memory_order_relaxed));
  }
};

void split_worker(Run& r, SplitShared& S, int w) {
  const bool by_name = r.o.lock_by_name;
  double idle = 0;
  while (true) {
    std::unique_lock<std::mutex> lk(S.qmu);
    Entry e;
    bool have = false;
    Waiter wait;
    Clock::time_point t0 = Clock::now(), stall0 = t0;
    uint64_t seen = S.progress;
    while (true) {
      if (r.stop.load(std::memory_order_acquire)) {
        S.idle_s[size_t(w)] = idle;
        return;
      }
      have = r.live_head(S.q, e);
      if (have || S.busy == 0) break;
      lk.unlock();
      wait.pause();
      lk.lock();
      if (S.progress != seen) {
        seen = S.progress;
        stall0 = Clock::now();
      } else if (seconds_since(stall0) > r.o.stall_s) {
        Failure f;
        f.kind = "deadlock";
        f.message = "split: no event finished for " + std::to_string(r.o.stall_s) + " s";
        r.set_failure(f);
        return;
      }
    }
    idle += seconds_since(t0);
    if (!have) {  // drained: nothing queued and nobody holds an event
      r.stop.store(true, std::memory_order_release);
      S.idle_s[size_t(w)] = idle;
      return;
    }
    if (e.key >= r.end_key) {  // the popped event is simulate()'s exit event: setCurTick, stop everyone
      S.cur_tick.store(r.d.end_tick, std::memory_order_relaxed);
      r.stop.store(true, std::memory_order_release);
      S.idle_s[size_t(w)] = idle;
      return;
    }
    S.q.heap.pop();
    r.unschedule(e);
    int64_t when = key_when(e.key);
    S.cur_tick.store(when, std::memory_order_relaxed);  // popNextEvent: setCurTick at the pop
    S.busy++;
    S.pops[size_t(w)]++;
    lk.unlock();
    // The name (or component) mutex, from a table guarded by its own lock.
    int64_t key = by_name ? int64_t(r.objs[size_t(e.obj)].name) : int64_t(r.objs[size_t(e.obj)].comp);
    std::mutex* m;
    {
      std::lock_guard<std::mutex> g(S.table_mu);
      auto& slot = S.table[key];
      if (!slot) slot.reset(new std::mutex);
      m = slot.get();
    }
    if (!m->try_lock()) {
      S.lock_waits[size_t(w)]++;
      auto t1 = Clock::now();
      m->lock();
      idle += seconds_since(t1);
    }
    if (S.cur_tick.load(std::memory_order_relaxed) != when) S.stale_now[size_t(w)]++;
    SplitCtx c{r, S, w};
    bool ok = r.execute(c, e.obj, when);
    m->unlock();
    S.executed[size_t(w)]++;
    lk.lock();
    S.busy--;
    S.progress++;
    lk.unlock();
    if (!ok) {
      S.idle_s[size_t(w)] = idle;
      return;
    }
  }
}

void run_split(Run& r, Result& res, Crew& crew) {
  SplitShared S;
  int n = std::max(1, r.o.workers);
  S.occupant.reset(new std::atomic<int32_t>[size_t(r.d.ncomp)]);
  for (int32_t i = 0; i < r.d.ncomp; ++i) S.occupant[i].store(-1);
  S.pops.assign(size_t(n), 0);
  S.executed.assign(size_t(n), 0);
  S.lock_waits.assign(size_t(n), 0);
  S.stale_now.assign(size_t(n), 0);
  S.idle_s.assign(size_t(n), 0.0);
  if (!r.init_ops(S.q)) return;
  crew.start([&r, &S](int w) { split_worker(r, S, w); });
  split_worker(r, S, 0);
  crew.finish_self();
  res.stats.push_back({"loop_s", crew.join()});
  res.stats.push_back({"spawn_s", crew.spawn_s()});
  res.stats.push_back({"threads_created", double(crew.threads_created())});
  res.stats.push_back({"pinned", crew.pinned() ? 1.0 : 0.0});
  int64_t pops = 0, waits = 0, stale = 0, execd = 0;
  std::vector<double> vp, ve, vw;
  for (int w = 0; w < n; ++w) {
    pops += S.pops[size_t(w)];
    waits += S.lock_waits[size_t(w)];
    stale += S.stale_now[size_t(w)];
    execd += S.executed[size_t(w)];
    vp.push_back(double(S.pops[size_t(w)]));
    ve.push_back(double(S.executed[size_t(w)]));
    vw.push_back(double(S.lock_waits[size_t(w)]));
  }
  r.executed = execd;
  res.stats.push_back({"batches", double(pops)});
  res.stats.push_back({"lock_waits", double(waits)});
  res.stats.push_back({"stale_now", double(stale)});
  res.stats_lists.push_back({"pops", vp});
  res.stats_lists.push_back({"executed", ve});
  res.stats_lists.push_back({"lock_waits_per_worker", vw});
  res.stats_lists.push_back({"idle_s", S.idle_s});
  res.cur_tick = S.cur_tick.load();
}

}  // namespace
}  // namespace tp
