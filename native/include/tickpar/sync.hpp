// tickpar's native engine, public API (2/8): the clock, waiting (spin, yield, sleep), the spinning barrier,
// the thread pool and the worker crew.
#pragma once

#include "tickpar/engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <mutex>
#include <limits>
#include <memory>
#include <thread>
#include <unordered_map>

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#endif

namespace tp {

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

// The process's worker threads, kept between replays.  Creating a thread costs a large share of a short
// replay (docs/measurements/2026-12-06-code-comments.md), so a replay borrows threads that earlier replays
// left behind: they spin a while after each job, then yield, then sleep on a futex
// (wait_while_equal) until the next one.  One replay owns the pool at a time; a replay that finds it taken
// (another Python thread replaying meanwhile) or inherited over a fork starts threads of its own, as before.
class Pool {
 public:
  using Job = std::function<void(int)>;
  // The pool, locked for the caller in `lock`, or nullptr (taken, or fewer threads wanted than 1).
  static Pool* acquire(std::unique_lock<std::mutex>& lock) {
    static std::mutex mu;
    static Pool* pool = nullptr;
    std::unique_lock<std::mutex> l(mu, std::try_to_lock);
    if (!l.owns_lock()) return nullptr;
    if (pool == nullptr || pool->pid_ != getpid()) pool = new Pool();  // a forked child's pool has no threads: leak it
    lock = std::move(l);
    return pool;
  }
  // Run job(w) for w = 1..n-1 on the pool's threads (started here when there are fewer); returns at once.
  // Returns how many threads it had to create.
  int post(int n, const Job* job) {
    int created = 0;
    while (int(threads_) < n - 1) {
      std::thread([this, i = threads_] { loop(i); }).detach();
      threads_++;
      created++;
    }
    job_.store(job, std::memory_order_relaxed);
    need_.store(n, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    gen_.fetch_add(1, std::memory_order_acq_rel);
    gen_.notify_all();
    return created;
  }
  // Wait until the n-1 threads of the last post have returned from the job.
  void wait_done() {
    int d;
    int need = need_.load(std::memory_order_relaxed);
    while ((d = done_.load(std::memory_order_acquire)) < need - 1) wait_while_equal(done_, d);
  }

 private:
  Pool() : pid_(getpid()) {}
  void loop(int i) {
    uint64_t seen = 0;
    while (true) {
      uint64_t g = wait_while_equal(gen_, seen);
      int need = need_.load(std::memory_order_relaxed);
      const Job* job = job_.load(std::memory_order_relaxed);
      seen = g;
      // A thread the last job did not need may wake after the next post: then take that one instead.
      if (gen_.load(std::memory_order_acquire) != g) continue;
      if (i + 1 < need) {
        (*job)(i + 1);
        done_.fetch_add(1, std::memory_order_acq_rel);
        done_.notify_all();
      }
    }
  }
  pid_t pid_;
  size_t threads_ = 0;
  std::atomic<const Job*> job_{nullptr};
  std::atomic<int> need_{0};
  alignas(64) std::atomic<uint64_t> gen_{0};
  alignas(64) std::atomic<int> done_{0};
};

// Threads for one call's replays: worker 0 is the caller, workers 1..n-1 are the pool's (Pool); each replay
// starts them (start) and waits for them (join), and the pins are set once for all the call's replays.  Starting them
// is set-up, not event processing: as in the Python engine's LPs (``loop_s`` from READY), every thread
// checks in at a start barrier before the clock starts, and the loop ends when the last thread leaves it.
// ``spawn_s`` reports the start (thread creation, or a sleeping pool thread's wake-up) on its own.
//
// Each thread is pinned to its own core of the process's CPU set while the replay runs (worker w to the
// w-th allowed CPU) when there are enough of them.  Without it, a replay that follows an idle spell (a
// pyperf worker between two values) starts its new thread on its parent's core: the idle core is halted,
// the load balancer moves the thread only after a scheduler tick (milliseconds, longer than the replay),
// and the two threads share one core, each waiting at every barrier for the other's time slice
// (docs/measurements/2026-12-06-perf-comments.md).  The caller's own mask is restored after the run; a
// pool thread keeps its pin until a replay wants another one.
class Crew {
 public:
  explicit Crew(int n) : n_(n), gate_(n), ends_(size_t(n)) {
#ifdef __linux__
    cpu_set_t mask;
    CPU_ZERO(&saved_);
    if (pthread_getaffinity_np(pthread_self(), sizeof(saved_), &saved_) == 0) {
      have_saved_ = true;
      if (n > 1) {
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
    }
#endif
    if (n > 1) pool_ = Pool::acquire(pool_lock_);
  }
  ~Crew() {
    if (started_ && !joined_) join();
    restore();
  }
  // Start body(w) for w = 1..n-1 on other threads and return when all of them have reached the gate.
  template <class F>
  void start(F body) {
    auto s0 = Clock::now();
    started_ = true;
    joined_ = false;
    job_ = [this, body](int w) {
      pin(w);
      gate_.wait();
      body(w);
      ends_[size_t(w)] = Clock::now();
    };
    if (pool_ != nullptr) {
      created_ = pool_->post(n_, &job_);
    } else {
      for (int w = 1; w < n_; ++w) threads_.emplace_back([this, w] { job_(w); });
      created_ = n_ - 1;
    }
    gate_.wait();
    t0_ = Clock::now();
    spawn_s_ = std::chrono::duration<double>(t0_ - s0).count();
  }
  // The calling thread (worker 0) is done with the loop.
  void finish_self() { ends_[0] = Clock::now(); }
  // Wait for the others; the loop's length: from the gate to the last thread's end.
  double join() {
    joined_ = true;
    if (pool_ != nullptr) pool_->wait_done();
    for (auto& t : threads_) t.join();
    threads_.clear();
    Clock::time_point last = ends_[0];
    for (auto& e : ends_) last = std::max(last, e);
    return std::chrono::duration<double>(last - t0_).count();
  }
  double spawn_s() const { return spawn_s_; }
  bool pinned() const { return pinned_; }
  int threads_created() const { return created_; }

 private:
  void pin(int w) {
#ifdef __linux__
    // The pin a thread holds (-1: the process's whole set), so a pool thread pins only when it changes.
    thread_local int held = -1;
    int want = pinned_ ? cpus_[size_t(w)] : -1;
    if (want == held) return;
    if (want >= 0) {
      cpu_set_t mask;
      CPU_ZERO(&mask);
      CPU_SET(want, &mask);
      pthread_setaffinity_np(pthread_self(), sizeof(mask), &mask);  // migrates this thread before it returns
    } else if (have_saved_) {
      pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_);
    }
    held = want;
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
  std::unique_lock<std::mutex> pool_lock_;
  Pool* pool_ = nullptr;
  Pool::Job job_;
  std::vector<std::thread> threads_;
  std::vector<int> cpus_;
  bool pinned_ = false, restored_ = false, have_saved_ = false, started_ = false, joined_ = false;
  int created_ = 0;
#ifdef __linux__
  cpu_set_t saved_;
#endif
  Clock::time_point t0_;
  double spawn_s_ = 0;
};

}  // namespace tp
