// Conservative (window, null messages) and quantum: LPs with their own queues.
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

// -- conservative (window) and quantum: LPs with their own queues ---------------------------------
struct Msg {
  int32_t obj;
  int64_t when;
  int64_t source;
};

struct LPState {
  Queue q;
  std::vector<std::vector<Msg>> out[2];  // [parity][dst]
  int64_t out_min = INF;
  int64_t boundary = 0;
  int64_t windows = 0, rounds = 0, messages = 0, served = 0, dropped = 0;
  int64_t late_events = 0, lateness_total = 0, lateness_max = 0;
  int64_t round = 0;
  double idle_s = 0;
  std::vector<double> busy;  // per window: seconds from leaving its barrier to reaching the next one
};

struct LPRun {
  Run& r;
  int P;
  std::vector<int32_t> lp_of_obj;
  std::vector<std::unique_ptr<LPState>> lps;
  std::vector<int64_t> next_time[2];
  std::vector<uint8_t> aborted[2];  // per LP and round parity: it saw the run stop (read by all after the barrier)
  SpinBarrier barrier;
  LPRun(Run& run, int p) : r(run), P(p), barrier(p) {}
};

struct LPCtx {
  Run& r;
  LPRun& R;
  LPState& L;
  int me;
  inline int64_t now() const { return L.q.cur_tick; }
  inline void enter(int32_t, int32_t, int64_t) {}
  inline void leave(int32_t) {}
  inline void record(int32_t comp, int64_t when, int prio, int32_t name) { r.record(comp, when, prio, name); }
  inline void touch(int32_t comp, int32_t name, int64_t when, int32_t obj) {
    if (r.o.lp_of[size_t(comp)] != me) {
      r.race(comp, -1, when, "direct call from event " + std::to_string(obj) + " across LPs");
      r.record_locked(comp, when, CALL_PRIORITY, name);
      return;
    }
    r.record(comp, when, CALL_PRIORITY, name);
  }
  bool apply(const Op& op, int64_t when) {
    int dst = R.lp_of_obj[size_t(op.target)];
    if (dst == me) return r.apply_now(L.q, op, when, L.q.cur_tick);
    if (op.kind != SCHEDULE) {
      r.crash("a reschedule or deschedule of another LP's event (gem5: a foreign queue's event)");
      return false;
    }
    if (!r.o.quantum_mode && r.o.lookahead >= 0 && when < L.q.cur_tick + r.o.lookahead) {
      Failure f;
      f.kind = "causality";
      f.op = "schedule";
      f.obj = op.target;
      f.when = when;
      f.cur_tick = L.q.cur_tick;
      f.reason = "lookahead";
      f.message = "lookahead violation: LP " + std::to_string(me) + " sent at tick " + std::to_string(L.q.cur_tick) +
                  " for tick " + std::to_string(when) + ", less than the lookahead " +
                  std::to_string(r.o.lookahead) + " ahead";
      r.set_failure(f);
      return false;
    }
    if (r.d.end_tick != NO_END && when > r.d.end_tick) {
      L.dropped++;  // never runs: the single-queue run leaves it queued too
      return true;
    }
    L.out[(L.round + 1) & 1][size_t(dst)].push_back(Msg{op.target, when, op.source});
    L.messages++;
    if (when < L.out_min) L.out_min = when;
    return true;
  }
};

// The per-window balance of the workers, from each worker's busy seconds per window (the time from leaving a
// window's barrier to reaching the next one): per window, the busiest worker's time over the mean
// (`imbalance_per_window`, 1 = balanced, P = one worker did it all); its mean and maximum over the windows; and
// `imbalance_loop`, the sum over windows of the busiest worker's time over the sum of the means (how much longer
// the windows took than balanced ones would have).
void imbalance_stats(Result& res, const std::vector<const std::vector<double>*>& busy) {
  size_t windows = busy.empty() ? 0 : busy[0]->size();
  for (const auto* b : busy) windows = std::min(windows, b->size());
  std::vector<double> ratio;
  ratio.reserve(windows);
  double top = 0, mean_sum = 0, ratio_max = 0, ratio_sum = 0;
  for (size_t i = 0; i < windows; ++i) {
    double most = 0, sum = 0;
    for (const auto* b : busy) {
      most = std::max(most, (*b)[i]);
      sum += (*b)[i];
    }
    double mean = sum / double(busy.size());
    double x = mean > 0 ? most / mean : 1.0;
    ratio.push_back(x);
    ratio_sum += x;
    ratio_max = std::max(ratio_max, x);
    top += most;
    mean_sum += mean;
  }
  res.stats.push_back({"imbalance_mean", windows ? ratio_sum / double(windows) : 1.0});
  res.stats.push_back({"imbalance_max", windows ? ratio_max : 1.0});
  res.stats.push_back({"imbalance_loop", mean_sum > 0 ? top / mean_sum : 1.0});
  res.stats_lists.push_back({"imbalance_per_window", std::move(ratio)});
}

int64_t local_next(Run& r, Queue& q) {
  Entry e;
  if (!r.live_head(q, e)) return INF;
  int64_t when = key_when(e.key);
  return (r.d.end_tick == NO_END || when <= r.d.end_tick) ? when : INF;
}

void lp_thread(LPRun& R, int me) {
  Run& r = R.r;
  LPState& L = *R.lps[size_t(me)];
  const bool quantum = r.o.quantum_mode;
  const int64_t Q = r.o.quantum;
  const int64_t end_tick = r.d.end_tick;
  LPCtx c{r, R, L, me};
  Clock::time_point left = Clock::now();
  while (true) {
    // exchange: my next time, then the barrier, then everyone's minimum and my inbound messages
    if (quantum) {
      int64_t clock = end_tick == NO_END ? L.boundary : std::min(L.boundary, end_tick);
      if (clock > L.q.cur_tick) L.q.cur_tick = clock;
    }
    int64_t head = local_next(r, L.q);
    int64_t mine = std::min(head, L.out_min);
    L.out_min = INF;
    int parity = int(L.round & 1);
    R.next_time[parity][size_t(me)] = mine;
    R.aborted[parity][size_t(me)] = r.stop.load(std::memory_order_acquire) ? 1 : 0;
    auto tw = Clock::now();
    if (L.round > 0) L.busy.push_back(std::chrono::duration<double>(tw - left).count());  // the last window's work
    R.barrier.wait();
    left = Clock::now();
    L.idle_s += std::chrono::duration<double>(left - tw).count();
    // Every LP decides from the same published flags, so all leave at the same barrier.
    bool abort = false;
    for (int p = 0; p < R.P; ++p) abort = abort || R.aborted[parity][size_t(p)];
    if (abort) return;
    int64_t gmin = INF;
    for (int p = 0; p < R.P; ++p) gmin = std::min(gmin, R.next_time[parity][size_t(p)]);
    for (int src = 0; src < R.P; ++src) {
      if (src == me) continue;
      auto& box = R.lps[size_t(src)]->out[parity][size_t(me)];
      for (const Msg& m : box) {
        int64_t when = m.when;
        if (quantum && r.o.late_clamp && when < L.boundary) {
          int64_t late = L.boundary - when;
          L.late_events++;
          L.lateness_total += late;
          L.lateness_max = std::max(L.lateness_max, late);
          when = L.boundary;
        }
        Op op{when, m.source, m.obj, SCHEDULE, ABSOLUTE};
        if (!r.apply_now(L.q, op, when, L.q.cur_tick)) break;
      }
      box.clear();
    }
    if (gmin == INF) return;
    int64_t limit;
    if (quantum) {
      gmin = std::max(gmin, L.boundary);
      L.boundary = Q > 0 ? (gmin / Q + 1) * Q : INF;
      limit = L.boundary;
    } else {
      limit = r.o.lookahead >= 0 ? gmin + r.o.lookahead : INF;
    }
    // serve: events with when < limit, before simulate()'s limit
    int64_t h = local_next(r, L.q);
    bool ran = false;
    if (h < limit && !r.stop.load(std::memory_order_relaxed)) {
      int64_t bound, stop_tick;
      if (end_tick != NO_END && end_tick < limit) {
        bound = r.end_key;
        stop_tick = end_tick;
      } else if (limit != INF) {
        bound = pack_key(limit, -128);
        stop_tick = limit - 1;
      } else {
        bound = r.end_key;
        stop_tick = -1;
      }
      Entry e;
      bool ok = true;
      while (r.live_head(L.q, e) && e.key < bound) {
        L.q.heap.pop();
        r.unschedule(e);
        int64_t when = key_when(e.key);
        L.q.cur_tick = when;
        L.served++;
        if (!r.execute(c, e.obj, when)) {
          ok = false;
          break;
        }
      }
      ran = true;
      if (ok && stop_tick >= 0 && stop_tick > L.q.cur_tick) L.q.cur_tick = stop_tick;
    }
    L.windows++;
    if (ran) L.rounds++;
    L.round++;
  }
}

void run_partitioned(Run& r, Result& res, Crew& crew) {
  const Dag& d = r.d;
  int P = std::max(1, r.o.workers);
  if (int(r.o.lp_of.size()) != d.ncomp) {
    r.crash("lp_of has " + std::to_string(r.o.lp_of.size()) + " entries for " + std::to_string(d.ncomp) +
            " components");
    return;
  }
  for (int32_t lp : r.o.lp_of)
    if (lp < 0 || lp >= P) {
      r.crash("lp_of holds LP " + std::to_string(lp) + " outside [0, " + std::to_string(P) + ")");
      return;
    }
  LPRun R(r, P);
  R.lp_of_obj.resize(size_t(d.nobj()));
  for (int32_t o = 0; o < d.nobj(); ++o) R.lp_of_obj[size_t(o)] = r.o.lp_of[size_t(r.objs[size_t(o)].comp)];
  for (int p = 0; p < P; ++p) {
    R.lps.emplace_back(new LPState);
    R.lps.back()->out[0].resize(size_t(P));
    R.lps.back()->out[1].resize(size_t(P));
  }
  R.next_time[0].assign(size_t(P), INF);
  R.next_time[1].assign(size_t(P), INF);
  R.aborted[0].assign(size_t(P), 0);
  R.aborted[1].assign(size_t(P), 0);
  // init(): every component's first schedules, into its own LP's queue
  for (int64_t i = 0; i < d.init_ops; ++i) {
    const Op& op = d.ops[size_t(i)];
    LPState& L = *R.lps[size_t(R.lp_of_obj[size_t(op.target)])];
    int64_t w = op.mode == CLOCK ? op.value : op.value;
    if (!r.apply_now(L.q, op, w, 0)) return;
  }
  crew.start([&R](int p) { lp_thread(R, p); });
  lp_thread(R, 0);
  crew.finish_self();
  res.stats.push_back({"loop_s", crew.join()});
  res.stats.push_back({"spawn_s", crew.spawn_s()});
  res.stats.push_back({"threads_created", double(crew.threads_created())});
  res.stats.push_back({"pinned", crew.pinned() ? 1.0 : 0.0});
  int64_t windows = 0, rounds = 0, messages = 0, late = 0, lt = 0, lm = 0, dropped = 0;
  std::vector<double> served, idle;
  std::vector<const std::vector<double>*> busy;
  int64_t ct = 0;
  for (auto& L : R.lps) {
    busy.push_back(&L->busy);
    windows = std::max(windows, L->windows);
    rounds += L->rounds;
    messages += L->messages;
    late += L->late_events;
    lt += L->lateness_total;
    lm = std::max(lm, L->lateness_max);
    dropped += L->dropped;
    served.push_back(double(L->served));
    idle.push_back(L->idle_s);
    r.executed += L->served;
    ct = std::max(ct, L->q.cur_tick);
  }
  res.stats.push_back({"windows", double(windows)});
  res.stats.push_back({"batches", double(windows)});
  res.stats.push_back({"rounds", double(rounds)});
  res.stats.push_back({"messages", double(messages)});
  res.stats.push_back({"dropped", double(dropped)});
  if (r.o.quantum_mode) {
    res.stats.push_back({"quanta", double(windows)});
    res.stats.push_back({"late_events", double(late)});
    res.stats.push_back({"lateness_total_ticks", double(lt)});
    res.stats.push_back({"lateness_max_ticks", double(lm)});
  }
  res.stats_lists.push_back({"events_per_lp", served});
  res.stats_lists.push_back({"idle_s", idle});
  // One LP per worker, fixed before the run: the adaptive schedule's figures (adaptive.hpp), for comparison.
  res.stats.push_back({"lps", double(P)});
  res.stats.push_back({"reassignments", 0.0});
  res.stats.push_back({"reassignments_per_window", 0.0});
  res.stats.push_back({"stolen_lps", 0.0});
  imbalance_stats(res, busy);
  res.cur_tick = ct;
}

}  // namespace
}  // namespace tp
