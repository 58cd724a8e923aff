// Conservative (window) with schedule=adaptive: K LPs, K >= P, handed to the P workers every window by their
// measured cost in the last one (as Unison does for ns-3).
// Internal to engine.cpp, the one translation unit that includes it (an anonymous namespace, as the others).
//
// The partition (lp_of, K LPs) is fixed before the run, as fine as the coupling allows without a smaller
// lookahead than the static partition's (tickpar.pdes.adaptive); each LP keeps its own queue, outboxes and
// counters, exactly as a static run with K workers would, so the result does not depend on which worker runs
// an LP in a window: every LP's window is the same computation wherever it runs.  Per window:
//   1. at the barrier, every LP's next time (its head, or the least tick of a message it sent) is known; the
//      window runs to gmin + lookahead (YAWNS, as the static schedule);
//   2. every worker computes the same assignment from the costs the LPs took in the last window (the
//      clock's ticks from the claim to the publish): LPs sorted largest first (ties: the lower index), each to
//      the worker with the least cost so far (LPT; ties: the fewer LPs, then the lower index), unless the
//      worker that ran it last can take it and stay within AFFINITY_SLACK of the even share: then it stays
//      there (an LP that moves takes its queue's and outboxes' cache lines to another core);
//   3. each worker claims its own LPs in that order (a compare-and-swap of the LP's round), then, its own
//      done, steals the others' not yet claimed, smallest first (from the back of the order): whole LPs only;
//   4. whoever claims an LP delivers its inbound messages (from the sources that sent it any, in source order,
//      each box in send order: deterministic), serves its events below the limit and publishes, in its own
//      worker's list, the LP's head, the least tick of a message it sent, the LPs it sent to and its cost.
// An LP with no event below the limit and no inbound message is left alone for the window (no claim, no visit).
// Every worker keeps a replica of each LP's head, least message, destinations, cost and last worker, updated at
// each barrier from every worker's list: the same data on every worker, so the same limit, the same idle LPs
// and the same assignment, with no shared line written during a window but the LPs' own.  Outboxes and the
// lists are double-buffered by the round's parity: what a window writes is read after the next barrier, and
// the buffer it reads is not written before the barrier after that.
#pragma once

#include "partitioned.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace tp {
namespace {

// The cost clock: the time-stamp counter where there is one (a few ns a read), else the steady clock.
inline int64_t cost_clock() {
#if defined(__x86_64__) || defined(__i386__)
  return int64_t(__rdtsc());
#else
  return Clock::now().time_since_epoch().count();
#endif
}

// An LP stays on the worker that ran its last window while that worker's predicted cost stays within this share
// above the even one (sum of costs / P); else LPT places it.  Pure LPT moved 7 of phold wide's 16 LPs to the
// other worker every window (costs all alike, the order decided by noise); with 5% about 1.
constexpr double AFFINITY_SLACK = 0.05;

struct alignas(64) AdLP {
  Queue q;
  std::vector<std::vector<Msg>> out[2];  // [parity][dst LP]
  int64_t out_min = INF;
  uint64_t sent_to = 0;  // the LPs it sent to in this window (bit d: LP d)
  int64_t served = 0, messages = 0, dropped = 0;
  int32_t last_worker = -1;
  alignas(64) std::atomic<int64_t> taken{-1};  // the round it was last claimed in
};

// What a visit publishes for the next window (in its worker's list).
struct AdPub {
  int32_t lp;
  int64_t head;     // its next event's tick after the window (INF: none before the end)
  int64_t out_min;  // the least tick of a message it sent in the window (INF: none)
  int64_t cost;     // cost_clock() ticks the visit took
  uint64_t sent_to;
};

struct alignas(64) AdWorker {
  std::vector<AdPub> pub[2];  // [parity]: this worker's visits of a window, read by all after the barrier
  // The replica of every LP's scheduling state (the same on every worker: module comment).
  std::vector<int64_t> head, out_min, cost;
  std::vector<int32_t> ran_on;
  std::vector<uint64_t> sent_to, inbound;
  std::vector<int32_t> order, owner;  // this window's active LPs, largest predicted cost first, and their workers
  std::vector<int64_t> load;          // scratch: predicted cost per worker
  std::vector<int32_t> count;         // scratch: LPs per worker
  std::vector<double> busy;           // per window: seconds from leaving its barrier to reaching the next one
  double idle_s = 0;
  int64_t windows = 0, rounds = 0, claimed = 0, reassigned = 0, stolen = 0, served = 0;
  bool stealing = false;  // the LP being visited was taken from another worker's list
};

struct AdRun {
  Run& r;
  int P, K;
  std::vector<int32_t> lp_of_obj;
  std::vector<std::unique_ptr<AdLP>> lps;
  std::vector<uint8_t> aborted[2];  // [parity][worker]: it saw the run stop
  std::vector<std::unique_ptr<AdWorker>> workers;
  SpinBarrier barrier;
  AdRun(Run& run, int p, int k) : r(run), P(p), K(k), barrier(p) {}
};

struct AdCtx {
  Run& r;
  AdRun& R;
  AdLP& L;
  int me;    // the LP
  int npar;  // the next round's parity (where this window's messages go)
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
    if (r.o.lookahead >= 0 && when < L.q.cur_tick + r.o.lookahead) {
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
    L.out[npar][size_t(dst)].push_back(Msg{op.target, when, op.source});
    L.sent_to |= uint64_t(1) << dst;
    L.messages++;
    if (when < L.out_min) L.out_min = when;
    return true;
  }
};

// At the barrier: the replica brought up to date with every worker's list of the last window (LPs left alone
// keep their head and sent nothing), then each LP's inbound sources.
void ad_replicate(AdRun& R, AdWorker& W, int par) {
  for (int p = 0; p < R.P; ++p)
    for (const AdPub& e : R.workers[size_t(p)]->pub[par]) {
      const size_t k = size_t(e.lp);
      W.head[k] = e.head;
      W.out_min[k] = e.out_min;
      W.cost[k] = e.cost;
      W.sent_to[k] = e.sent_to;
      W.ran_on[k] = p;
    }
  std::fill(W.inbound.begin(), W.inbound.end(), 0);
  for (int k = 0; k < R.K; ++k)
    for (uint64_t m = W.sent_to[size_t(k)]; m != 0; m &= m - 1) W.inbound[size_t(__builtin_ctzll(m))] |= uint64_t(1) << k;
}

// Step 2: the same assignment on every worker, from the replica.  Active LPs only (an event below `limit`, or a
// message to deliver); the others are left alone: they send nothing and cost nothing in this window.
void ad_assign(const AdRun& R, AdWorker& W, int64_t limit) {
  W.order.clear();
  int64_t total = 0;
  for (int k = 0; k < R.K; ++k) {
    if (W.head[size_t(k)] < limit || W.inbound[size_t(k)] != 0) {
      W.order.push_back(k);
      total += std::max<int64_t>(W.cost[size_t(k)], 0);
    } else {
      W.out_min[size_t(k)] = INF;
      W.sent_to[size_t(k)] = 0;
      W.cost[size_t(k)] = 0;
    }
  }
  const std::vector<int64_t>& cost = W.cost;
  std::sort(W.order.begin(), W.order.end(), [&cost](int32_t a, int32_t b) {
    return cost[size_t(a)] > cost[size_t(b)] || (cost[size_t(a)] == cost[size_t(b)] && a < b);
  });
  std::fill(W.load.begin(), W.load.end(), 0);
  std::fill(W.count.begin(), W.count.end(), 0);
  const double share = double(total) / double(R.P) * (1.0 + AFFINITY_SLACK);
  for (int32_t k : W.order) {
    int best = 0;
    for (int w = 1; w < R.P; ++w)
      if (W.load[size_t(w)] < W.load[size_t(best)] ||
          (W.load[size_t(w)] == W.load[size_t(best)] && W.count[size_t(w)] < W.count[size_t(best)]))
        best = w;
    const int last = W.ran_on[size_t(k)];
    if (last >= 0 && double(W.load[size_t(last)] + std::max<int64_t>(cost[size_t(k)], 0)) <= share) best = last;
    W.owner[size_t(k)] = best;
    W.load[size_t(best)] += std::max<int64_t>(cost[size_t(k)], 0);
    W.count[size_t(best)]++;
  }
}

inline bool ad_claim(AdLP& L, int64_t round) {
  int64_t seen = L.taken.load(std::memory_order_relaxed);
  return seen < round && L.taken.compare_exchange_strong(seen, round, std::memory_order_acq_rel);
}

// Step 4: LP k's window on worker w: deliver, serve below `limit`, publish what the next window needs.
void ad_visit(AdRun& R, AdWorker& W, int w, int k, int par, int64_t limit) {
  Run& r = R.r;
  const int64_t t0 = cost_clock();
  AdLP& L = *R.lps[size_t(k)];
  W.claimed++;
  // deliver: the sources in ascending order, each box in the order it was filled
  bool ok = true;
  for (uint64_t mask = W.inbound[size_t(k)]; mask != 0; mask &= mask - 1) {
    auto& box = R.lps[size_t(__builtin_ctzll(mask))]->out[par][size_t(k)];
    for (const Msg& m : box) {
      if (!ok) break;  // a failed delivery stops the run: the other boxes are emptied all the same
      Op op{m.when, m.source, m.obj, SCHEDULE, ABSOLUTE};
      ok = r.apply_now(L.q, op, m.when, L.q.cur_tick);
    }
    box.clear();
  }
  // serve: events with when < limit, before simulate()'s limit (as the static schedule's lp_thread)
  const int64_t end_tick = r.d.end_tick;
  int64_t h = local_next(r, L.q);
  if (h < limit && ok && !r.stop.load(std::memory_order_relaxed)) {
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
    AdCtx c{r, R, L, k, par ^ 1};
    Entry e;
    int64_t served = 0;
    while (r.live_head(L.q, e) && e.key < bound) {
      L.q.heap.pop();
      r.unschedule(e);
      int64_t when = key_when(e.key);
      L.q.cur_tick = when;
      served++;
      if (!r.execute(c, e.obj, when)) {
        ok = false;
        break;
      }
    }
    L.served += served;
    W.served += served;
    if (served > 0) {  // the figures count LPs that ran events
      if (L.last_worker != w) {
        if (L.last_worker >= 0) W.reassigned++;
        L.last_worker = w;
      }
      if (W.stealing) W.stolen++;
    }
    if (ok && stop_tick >= 0 && stop_tick > L.q.cur_tick) L.q.cur_tick = stop_tick;
    h = local_next(r, L.q);
  }
  W.pub[par ^ 1].push_back(AdPub{k, h, L.out_min, cost_clock() - t0, L.sent_to});
  L.out_min = INF;
  L.sent_to = 0;
}

void ad_thread(AdRun& R, int w) {
  Run& r = R.r;
  AdWorker& W = *R.workers[size_t(w)];
  int64_t round = 0;
  Clock::time_point left = Clock::now();
  while (true) {
    const int par = int(round & 1);
    R.aborted[par][size_t(w)] = r.stop.load(std::memory_order_acquire) ? 1 : 0;
    auto tw = Clock::now();
    if (round > 0) W.busy.push_back(std::chrono::duration<double>(tw - left).count());
    R.barrier.wait();
    left = Clock::now();
    W.idle_s += std::chrono::duration<double>(left - tw).count();
    // Every worker decides from the same published flags and lists, so all leave at the same barrier.
    bool abort = false;
    for (int p = 0; p < R.P; ++p) abort = abort || R.aborted[par][size_t(p)];
    if (abort) return;
    ad_replicate(R, W, par);
    int64_t gmin = INF;
    for (int k = 0; k < R.K; ++k) gmin = std::min(gmin, std::min(W.head[size_t(k)], W.out_min[size_t(k)]));
    if (gmin == INF) return;
    const int64_t limit = r.o.lookahead >= 0 ? gmin + r.o.lookahead : INF;
    ad_assign(R, W, limit);
    W.pub[par ^ 1].clear();  // read by all in the last window, written by this one for the next
    bool ran = false;
    for (int32_t k : W.order)  // my own LPs, largest first
      if (W.owner[size_t(k)] == w && ad_claim(*R.lps[size_t(k)], round)) {
        ad_visit(R, W, w, k, par, limit);
        ran = true;
      }
    for (auto it = W.order.rbegin(); it != W.order.rend(); ++it)  // then the others' not yet taken, smallest first
      if (W.owner[size_t(*it)] != w && ad_claim(*R.lps[size_t(*it)], round)) {
        W.stealing = true;
        ad_visit(R, W, w, *it, par, limit);
        W.stealing = false;
        ran = true;
      }
    W.windows++;
    if (ran) W.rounds++;
    round++;
  }
}

void run_adaptive(Run& r, Result& res, Crew& crew) {
  const Dag& d = r.d;
  const int P = std::max(1, r.o.workers);
  const int K = r.o.lps > 0 ? r.o.lps : P;
  if (r.o.quantum_mode) {
    r.crash("schedule=adaptive is conservative's (window sync), not quantum's");
    return;
  }
  if (K < P || K > MAX_ADAPTIVE_LPS) {
    r.crash("lps=" + std::to_string(K) + " is not allowed with schedule=adaptive: from the workers (" +
            std::to_string(P) + ") to " + std::to_string(MAX_ADAPTIVE_LPS));
    return;
  }
  if (int(r.o.lp_of.size()) != d.ncomp) {
    r.crash("lp_of has " + std::to_string(r.o.lp_of.size()) + " entries for " + std::to_string(d.ncomp) +
            " components");
    return;
  }
  for (int32_t lp : r.o.lp_of)
    if (lp < 0 || lp >= K) {
      r.crash("lp_of holds LP " + std::to_string(lp) + " outside [0, " + std::to_string(K) + ")");
      return;
    }
  AdRun R(r, P, K);
  R.lp_of_obj.resize(size_t(d.nobj()));
  for (int32_t o = 0; o < d.nobj(); ++o) R.lp_of_obj[size_t(o)] = r.o.lp_of[size_t(r.objs[size_t(o)].comp)];
  for (int k = 0; k < K; ++k) {
    R.lps.emplace_back(new AdLP);
    R.lps.back()->out[0].resize(size_t(K));
    R.lps.back()->out[1].resize(size_t(K));
  }
  for (int par = 0; par < 2; ++par) R.aborted[par].assign(size_t(P), 0);
  // init(): every component's first schedules, into its own LP's queue; then each LP's first head
  for (int64_t i = 0; i < d.init_ops; ++i) {
    const Op& op = d.ops[size_t(i)];
    AdLP& L = *R.lps[size_t(R.lp_of_obj[size_t(op.target)])];
    if (!r.apply_now(L.q, op, op.value, 0)) return;
  }
  std::vector<int64_t> head(static_cast<size_t>(K), INF);
  for (int k = 0; k < K; ++k) head[size_t(k)] = local_next(r, R.lps[size_t(k)]->q);
  for (int p = 0; p < P; ++p) {
    R.workers.emplace_back(new AdWorker);
    AdWorker& W = *R.workers.back();
    W.head = head;
    W.out_min.assign(size_t(K), INF);
    W.cost.assign(size_t(K), 0);
    W.ran_on.assign(size_t(K), -1);
    W.sent_to.assign(size_t(K), 0);
    W.inbound.assign(size_t(K), 0);
    W.order.reserve(size_t(K));
    W.owner.assign(size_t(K), 0);
    W.load.resize(size_t(P));
    W.count.resize(size_t(P));
    W.pub[0].reserve(size_t(K));
    W.pub[1].reserve(size_t(K));
  }
  crew.start([&R](int p) { ad_thread(R, p); });
  ad_thread(R, 0);
  crew.finish_self();
  res.stats.push_back({"loop_s", crew.join()});
  res.stats.push_back({"spawn_s", crew.spawn_s()});
  res.stats.push_back({"threads_created", double(crew.threads_created())});
  res.stats.push_back({"pinned", crew.pinned() ? 1.0 : 0.0});
  int64_t messages = 0, dropped = 0, reassigned = 0, stolen = 0, claimed = 0;
  std::vector<double> served, idle, per_worker;
  std::vector<const std::vector<double>*> busy;
  int64_t ct = 0;
  for (auto& L : R.lps) {
    messages += L->messages;
    dropped += L->dropped;
    served.push_back(double(L->served));
    r.executed += L->served;
    ct = std::max(ct, L->q.cur_tick);
  }
  int64_t windows = 0, rounds = 0;
  for (auto& W : R.workers) {
    windows = std::max(windows, W->windows);
    rounds += W->rounds;
    reassigned += W->reassigned;
    stolen += W->stolen;
    claimed += W->claimed;
    idle.push_back(W->idle_s);
    per_worker.push_back(double(W->served));
    busy.push_back(&W->busy);
  }
  res.stats.push_back({"windows", double(windows)});
  res.stats.push_back({"batches", double(windows)});
  res.stats.push_back({"rounds", double(rounds)});
  res.stats.push_back({"messages", double(messages)});
  res.stats.push_back({"dropped", double(dropped)});
  res.stats.push_back({"lps", double(K)});
  res.stats.push_back({"reassignments", double(reassigned)});
  res.stats.push_back({"reassignments_per_window", windows ? double(reassigned) / double(windows) : 0.0});
  res.stats.push_back({"stolen_lps", double(stolen)});
  res.stats.push_back({"lp_windows", double(claimed)});
  res.stats_lists.push_back({"events_per_lp", served});
  res.stats_lists.push_back({"events_per_worker", per_worker});
  res.stats_lists.push_back({"idle_s", idle});
  imbalance_stats(res, busy);
  res.cur_tick = ct;
}

}  // namespace
}  // namespace tp
