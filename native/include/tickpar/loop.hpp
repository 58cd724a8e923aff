// The sequential strategy: gem5's doSimLoop on one queue (also the other strategies' serial path).
// Internal to engine.cpp, the one translation unit that includes it (an anonymous namespace: its definitions stay private to engine.cpp).
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
#include "replay.hpp"

namespace tp {
namespace {

// -- sequential ------------------------------------------------------------------------------
struct SeqCtx {
  Run& r;
  Queue& q;
  inline int64_t now() const { return q.cur_tick; }
  inline void enter(int32_t, int32_t, int64_t) {}
  inline void leave(int32_t) {}
  inline void record(int32_t comp, int64_t when, int prio, int32_t name) { r.record(comp, when, prio, name); }
  inline void touch(int32_t comp, int32_t name, int64_t when, int32_t) { r.record(comp, when, CALL_PRIORITY, name); }
  inline bool apply(const Op& op, int64_t when) { return r.apply_now(q, op, when, q.cur_tick); }
};

// gem5's serviceOne on `q` once (the caller checked the head is live and before the end).
inline bool service_one(Run& r, Queue& q, const Entry& e) {
  q.heap.pop();
  r.unschedule(e);
  int64_t when = key_when(e.key);
  q.cur_tick = when;
  r.executed++;
  SeqCtx c{r, q};
  return r.execute(c, e.obj, when);
}

// doSimLoop: serve until the limit (the exit event at (end_tick, SIM_EXIT)) or an empty queue.
void seq_loop(Run& r, Queue& q) {
  Entry e;
  while (r.live_head(q, e)) {
    if (e.key >= r.end_key) {
      q.cur_tick = r.d.end_tick;
      return;
    }
    if (!service_one(r, q, e)) return;
  }
}

void run_sequential(Run& r, Result& res) {
  Queue q;
  q.heap.reserve(1024);
  if (!r.init_ops(q)) return;
  auto t0 = Clock::now();
  seq_loop(r, q);
  res.stats.push_back({"loop_s", seconds_since(t0)});
  res.stats.push_back({"batches", double(r.executed)});
  res.cur_tick = q.cur_tick;
}

}  // namespace
}  // namespace tp
