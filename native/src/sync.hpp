// The sync primitives the strategies share: the clock, waiting (spin, yield, sleep), the spinning barrier,
// the thread crew.
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

namespace tp {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t INF = std::numeric_limits<int64_t>::max();

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spin a while (the other side is usually on another core, a few hundred ns away), then yield the core:
// on a machine with fewer free cores than threads a pure spin would wait for a whole time slice.
struct Waiter {
  int spins = 0;
  void pause() {
    if (++spins < 4000) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
};

// Wait until `a` no longer holds `old`; returns what it holds then.  Spin first (the other side is usually
// on another core, a few hundred ns away), then yield the core a few times, then sleep in the kernel until
// a notify (C++20 atomic wait: a futex).  Without the last step, on a machine with fewer free cores than
// threads (more workers than cores) the waiting threads spin and yield on the cores that the late thread
// needs (docs/measurements/2026-12-06-perf-comments.md).  The writer of `a` calls notify_all after every
// change, which costs an atomic load when nobody sleeps (libstdc++ counts the sleepers).  Tick-barrier's
// pool does not sleep (TB::helper).
constexpr int WAIT_SPINS = 4000;
constexpr int WAIT_YIELDS = 64;

template <class T>
inline T wait_while_equal(const std::atomic<T>& a, T old) {
  T v;
  for (int i = 0; i < WAIT_SPINS; ++i) {
    if ((v = a.load(std::memory_order_acquire)) != old) return v;
    cpu_relax();
  }
  for (int i = 0; i < WAIT_YIELDS; ++i) {
    if ((v = a.load(std::memory_order_acquire)) != old) return v;
    std::this_thread::yield();
  }
  while ((v = a.load(std::memory_order_acquire)) == old) a.wait(old, std::memory_order_acquire);
  return v;
}

// A sense-free generation barrier for n threads (spin, then yield, then sleep: wait_while_equal).
class SpinBarrier {
 public:
  explicit SpinBarrier(int n) : n_(n) {}
  void wait() {
    uint64_t g = gen_.load(std::memory_order_acquire);
    if (count_.fetch_add(1, std::memory_order_acq_rel) == n_ - 1) {
      count_.store(0, std::memory_order_relaxed);
      gen_.store(g + 1, std::memory_order_release);
      gen_.notify_all();
      return;
    }
    wait_while_equal(gen_, g);
  }

 private:
  int n_;
  alignas(64) std::atomic<int> count_{0};
  alignas(64) std::atomic<uint64_t> gen_{0};
};

// Threads for one replay.  Creating a thread costs tens of microseconds, a sizeable share of a
// millisecond replay, and it is set-up, not event processing: as in the Python engine's LPs (``loop_s``
// from READY), every thread checks in at a start barrier before the clock starts, and the loop ends
// when the last thread leaves it.  ``spawn_s`` reports the creation cost on its own.
//
// Each thread is pinned to its own core of the process's CPU set while the replay runs (worker w to the
// w-th allowed CPU) when there are enough of them.  Without it, a replay that follows an idle spell (a
// pyperf worker between two values) starts its new thread on its parent's core: the idle core is halted,
// the load balancer moves the thread only after a scheduler tick (milliseconds, longer than the replay),
// and the two threads share one core, each waiting at every barrier for the other's time slice
// (docs/measurements/2026-12-06-perf-comments.md).  The caller's own mask
// is restored after the run.
class Crew {
 public:
  explicit Crew(int n) : n_(n), gate_(n), ends_(size_t(n)) {
#ifdef __linux__
    cpu_set_t mask;
    CPU_ZERO(&saved_);
    if (n > 1 && pthread_getaffinity_np(pthread_self(), sizeof(saved_), &saved_) == 0) {
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &saved_)) cpus_.push_back(c);
      if (int(cpus_.size()) >= n) {
        pinned_ = true;
        CPU_ZERO(&mask);
        CPU_SET(cpus_[0], &mask);
        pthread_setaffinity_np(pthread_self(), sizeof(mask), &mask);
      } else {
        cpus_.clear();  // fewer cores than threads: the scheduler shares them out
      }
    }
#endif
  }
  ~Crew() { restore(); }
  // Start n-1 threads running body(w) for w = 1..n-1 and return when all of them have reached the gate.
  template <class F>
  void start(F body) {
    auto s0 = Clock::now();
    for (int w = 1; w < n_; ++w)
      threads_.emplace_back([this, body, w] {
        pin(w);
        gate_.wait();
        body(w);
        ends_[size_t(w)] = Clock::now();
      });
    gate_.wait();
    t0_ = Clock::now();
    spawn_s_ = std::chrono::duration<double>(t0_ - s0).count();
  }
  // The calling thread (worker 0) is done with the loop.
  void finish_self() { ends_[0] = Clock::now(); }
  // Join the others; the loop's length: from the gate to the last thread's end.
  double join() {
    for (auto& t : threads_) t.join();
    threads_.clear();
    restore();
    Clock::time_point last = ends_[0];
    for (auto& e : ends_) last = std::max(last, e);
    return std::chrono::duration<double>(last - t0_).count();
  }
  double spawn_s() const { return spawn_s_; }
  bool pinned() const { return pinned_; }

 private:
  void pin(int w) {
#ifdef __linux__
    if (!pinned_) return;
    cpu_set_t mask;
    CPU_ZERO(&mask);
    CPU_SET(cpus_[size_t(w)], &mask);
    pthread_setaffinity_np(pthread_self(), sizeof(mask), &mask);  // migrates this thread before it returns
#else
    (void)w;
#endif
  }
  void restore() {
#ifdef __linux__
    if (pinned_ && !restored_) pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_);
#endif
    restored_ = true;
  }
  int n_;
  SpinBarrier gate_;
  std::vector<Clock::time_point> ends_;
  std::vector<std::thread> threads_;
  std::vector<int> cpus_;
  bool pinned_ = false, restored_ = false;
#ifdef __linux__
  cpu_set_t saved_;
#endif
  Clock::time_point t0_;
  double spawn_s_ = 0;
};

}  // namespace
}  // namespace tp
