// tickpar's native engine, public API (5/8): gem5's loop on one queue (serviceOne, doSimLoop) and its bins,
// the serial path of every strategy.
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
#include "tickpar/replay.hpp"

namespace tp {

// A context for Run::execute that runs an occurrence now, on one queue: its operations apply at once, with
// gem5's assertions (Run::apply_now).  The sequential loop's, and every strategy's serial path.
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
inline void seq_loop(Run& r, Queue& q) {
  Entry e;
  while (r.live_head(q, e)) {
    if (e.key >= r.end_key) {
      q.cur_tick = r.d.end_tick;
      return;
    }
    if (!service_one(r, q, e)) return;
  }
}

// The next bin: every live entry of the head's key (when, priority), popped in the queue's order into `members`
// (cleared first).  False when nothing is left before the end (the queue's clock is then at the end tick, where
// the run stopped at the exit event).  The entries stay scheduled (their objects' stamps): run them with
// Run::live / Run::unschedule, as tick-barrier does, or push them back.
inline bool take_bin(Run& r, Queue& q, std::vector<Entry>& members) {
  members.clear();
  Entry head;
  if (r.stop.load(std::memory_order_relaxed) || !r.live_head(q, head)) return false;
  if (head.key >= r.end_key) {
    q.cur_tick = r.d.end_tick;
    return false;
  }
  Entry e;
  while (r.live_head(q, e) && e.key == head.key) {
    members.push_back(e);
    q.heap.pop();
  }
  return true;
}

}  // namespace tp
