// tickpar's native engine, public API (3/8): gem5's event queue for the replay: heap entries ordered by
// (key, tie), the 4-ary heap, the per-object state.
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
#include "tickpar/sync.hpp"

namespace tp {

struct Entry {
  int64_t key;
  int64_t tie;
  uint64_t serial;
  int32_t obj;
};

inline bool before(const Entry& a, const Entry& b) {
  return (a.key < b.key) | ((a.key == b.key) & (a.tie < b.tie));  // no short-circuit: setcc, not branches
}

// A 4-ary min-heap of entries by (key, tie).
class Heap {
 public:
  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }
  const Entry& top() const { return v_[0]; }
  void push(const Entry& e) {
    size_t i = v_.size();
    v_.push_back(e);
    while (i > 0) {
      size_t p = (i - 1) >> 2;
      if (!before(e, v_[p])) break;
      v_[i] = v_[p];
      i = p;
    }
    v_[i] = e;
  }
  void pop() {
    // Floyd's bottom-up pop: walk the hole down to a leaf along the smallest children, then put the
    // last entry there and sift it up (it usually stays): no compare against it on the way down.
    Entry last = v_.back();
    v_.pop_back();
    size_t n = v_.size();
    if (n == 0) return;
    size_t i = 0;
    while (true) {
      size_t c = 4 * i + 1;
      if (c >= n) break;
      size_t best = c;
      if (c + 4 <= n) {  // a full node: a branch-free tournament
        size_t b01 = before(v_[c + 1], v_[c]) ? c + 1 : c;
        size_t b23 = before(v_[c + 3], v_[c + 2]) ? c + 3 : c + 2;
        best = before(v_[b23], v_[b01]) ? b23 : b01;
      } else {
        for (size_t k = c + 1; k < n; ++k)
          if (before(v_[k], v_[best])) best = k;
      }
      v_[i] = v_[best];
      i = best;
    }
    while (i > 0) {
      size_t p = (i - 1) >> 2;
      if (!before(last, v_[p])) break;
      v_[i] = v_[p];
      i = p;
    }
    v_[i] = last;
  }
  void reserve(size_t n) { v_.reserve(n); }

 private:
  std::vector<Entry> v_;
};

// One event object: its replay state and, on the same cache line, what the DAG says about it.
struct alignas(64) ObjState {  // a line each: two threads write neighbouring events
  uint64_t stamp = 0;  // 0: not scheduled; else the serial of its live entry (or a pending op id)
  int64_t when = 0;
  int64_t occ_cur = -1;  // its next occurrence in the DAG (Occ::next chains them), -1: none left
  int32_t comp = 0;
  int32_t name = 0;
  int16_t prio = 0;
  uint8_t flags = 0;
  uint8_t pad = 0;
  uint32_t ndups = 0;  // entries left live by double schedules (checks=false)
};

struct Queue {
  Heap heap;
  uint64_t serial = 0;
  int64_t cur_tick = 0;
};

}  // namespace tp
