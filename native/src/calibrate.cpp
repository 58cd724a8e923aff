// Calibration microbenchmarks: what the schemes' primitives cost on this machine, in C++.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>
#include <queue>
#include <random>
#include <vector>

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#endif

#include "tickpar/engine.hpp"

namespace tp {
namespace {

using Clock = std::chrono::steady_clock;

double secs(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Median of `reps` measurements of f() (each returns seconds per operation).
template <class F>
double median_of(int reps, F f) {
  std::vector<double> v;
  for (int i = 0; i < reps; ++i) v.push_back(f());
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double mutex_once(int64_t n) {
  std::mutex m;
  auto t0 = Clock::now();
  for (int64_t i = 0; i < n; ++i) {
    m.lock();
    asm volatile("" ::: "memory");
    m.unlock();
  }
  return secs(t0) / double(n);
}

// Two threads meet at a spinning generation barrier (the engine's): seconds per round.
double barrier_once(int64_t rounds) {
  std::atomic<int> count{0};
  std::atomic<uint64_t> gen{0};
  auto wait = [&]() {
    uint64_t g = gen.load(std::memory_order_acquire);
    if (count.fetch_add(1, std::memory_order_acq_rel) == 1) {
      count.store(0, std::memory_order_relaxed);
      gen.store(g + 1, std::memory_order_release);
      return;
    }
    int spins = 0;
    while (gen.load(std::memory_order_acquire) == g) {
      if (++spins < 4000)
        relax();
      else
        std::this_thread::yield();
    }
  };
  std::thread other([&] {
    for (int64_t i = 0; i < rounds + 1; ++i) wait();
  });
  wait();
  auto t0 = Clock::now();
  for (int64_t i = 0; i < rounds; ++i) wait();
  double s = secs(t0) / double(rounds);
  other.join();
  return s;
}

// Pin the calling thread to the k-th CPU of the process's CPU set (no-op with fewer CPUs than k + 1).
void pin_to(int k) {
#ifdef __linux__
  cpu_set_t all, one;
  if (sched_getaffinity(0, sizeof(all), &all) != 0) return;
  int seen = 0;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &all) && seen++ == k) {
      CPU_ZERO(&one);
      CPU_SET(c, &one);
      pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
      return;
    }
#else
  (void)k;
#endif
}

// The physical floor of a hand-off: one cache line bounced between two threads pinned to two CPUs, each
// spinning until the other has written it (no yield: both have a CPU of their own).  Seconds per round trip
// (two transfers of the line).  With fewer than 2 CPUs the threads share one and the figure is a
// scheduler's, not a cache's.
double pingpong_once(int64_t rounds) {
  alignas(64) std::atomic<int64_t> line{0};
  cpu_set_t saved;
  bool restore = pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved) == 0;
  std::thread other([&] {
    pin_to(1);
    for (int64_t i = 1; i <= rounds; ++i) {
      while (line.load(std::memory_order_acquire) != 2 * i - 1) relax();
      line.store(2 * i, std::memory_order_release);
    }
  });
  pin_to(0);
  for (int64_t i = 0; i < 1000; ++i) relax();  // let the other thread reach its CPU
  auto t0 = Clock::now();
  for (int64_t i = 1; i <= rounds; ++i) {
    line.store(2 * i - 1, std::memory_order_release);
    while (line.load(std::memory_order_acquire) != 2 * i) relax();
  }
  double s = secs(t0) / double(rounds);
  other.join();
  if (restore) pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
  return s;
}

// A plain binary heap (std::priority_queue of (tick, serial) pairs) in the hold model: `pending` entries,
// each step pops the head and pushes it back a pseudo-random 1..97 ticks later.  Seconds per pop + push:
// what any event queue pays, with no replay around it.
double heap_once(int32_t pending, int64_t steps) {
  using Item = std::pair<int64_t, int64_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> q;
  std::minstd_rand rng(12345);
  for (int32_t i = 0; i < pending; ++i) q.push({int64_t(rng() % 97), i});
  auto t0 = Clock::now();
  int64_t serial = pending;
  for (int64_t i = 0; i < steps; ++i) {
    Item top = q.top();
    q.pop();
    q.push({top.first + 1 + int64_t(rng() % 97), ++serial});
  }
  double s = secs(t0) / double(steps);
  asm volatile("" : : "r"(q.top().first));
  return s;
}

// A message handed to another thread through a one-slot mailbox and answered: half a round trip.
double message_once(int64_t rounds) {
  alignas(64) std::atomic<int64_t> ping{0};
  alignas(64) std::atomic<int64_t> pong{0};
  std::thread other([&] {
    for (int64_t i = 1; i <= rounds; ++i) {
      int spins = 0;
      while (ping.load(std::memory_order_acquire) != i) {
        if (++spins < 4000)
          relax();
        else
          std::this_thread::yield();
      }
      pong.store(i, std::memory_order_release);
    }
  });
  auto t0 = Clock::now();
  for (int64_t i = 1; i <= rounds; ++i) {
    ping.store(i, std::memory_order_release);
    int spins = 0;
    while (pong.load(std::memory_order_acquire) != i) {
      if (++spins < 4000)
        relax();
      else
        std::this_thread::yield();
    }
  }
  double s = secs(t0) / double(rounds) / 2.0;
  other.join();
  return s;
}

// The replay engine's own per-event cost: a sequential replay of `pending` self-rescheduling events
// (one schedule and one pop per event, a trace-free digest), work 0.
double event_once(int32_t pending, int64_t events) {
  Dag d;
  d.ncomp = pending;
  int64_t per = events / pending;
  for (int32_t o = 0; o < pending; ++o) {
    d.obj_comp.push_back(o);
    d.obj_name.push_back(o);
    d.obj_prio.push_back(0);
    d.obj_flags.push_back(0);
  }
  for (int32_t o = 0; o < pending; ++o) d.ops.push_back(Op{int64_t(o % 97), int64_t(o) << 40, o, SCHEDULE, ABSOLUTE});
  d.init_ops = pending;
  d.occ_off.push_back(0);
  std::vector<int64_t> run_order;  // each occurrence's tick (then its object): the run's order, as a recording has it
  for (int32_t o = 0; o < pending; ++o) {
    int64_t tick = o % 97;
    for (int64_t k = 0; k < per; ++k) {
      int64_t b = int64_t(d.ops.size());
      int64_t delay = 1 + (k * 7 + o) % 13;
      d.ops.push_back(Op{delay, (int64_t(o) << 40) | (k + 1), o, SCHEDULE, CLOCK});
      d.occ.push_back(Occ{b, b + 1, 0, 0, 0.0});
      run_order.push_back(tick * pending + o);
      tick += delay;
    }
    d.occ_off.push_back(int64_t(d.occ.size()));
  }
  link_occurrences(d, &run_order);
  Options opt;
  opt.strategy = "sequential";
  Result r = run(d, opt);
  double loop = 0, executed = 1;
  for (auto& kv : r.stats) {
    if (kv.first == "loop_s") loop = kv.second;
    if (kv.first == "executed") executed = kv.second;
  }
  return loop / executed;
}

}  // namespace

CalibrationResult calibrate_costs(double budget_s) {
  CalibrationResult out;
  double scale = std::max(0.05, std::min(budget_s, 10.0));
  int reps = 5;
  out.values.push_back({"mutex_ns", 1e9 * median_of(reps, [&] { return mutex_once(int64_t(2e6 * scale)); })});
  out.values.push_back({"barrier_ns", 1e9 * median_of(reps, [&] { return barrier_once(int64_t(2e4 * scale)); })});
  out.values.push_back({"pingpong_ns", 1e9 * median_of(reps, [&] { return pingpong_once(int64_t(2e4 * scale)); })});
  out.values.push_back({"message_ns", 1e9 * median_of(reps, [&] { return message_once(int64_t(2e4 * scale)); })});
  out.values.push_back({"event_ns", 1e9 * median_of(3, [&] { return event_once(1024, int64_t(1e6 * scale)); })});
  out.values.push_back({"heap_ns", 1e9 * median_of(3, [&] { return heap_once(1024, int64_t(1e6 * scale)); })});
  out.values.push_back({"heap_ns_pending64", 1e9 * median_of(3, [&] { return heap_once(64, int64_t(1e6 * scale)); })});
  out.values.push_back({"event_ns_pending64", 1e9 * median_of(3, [&] { return event_once(64, int64_t(1e6 * scale)); })});
  double rate = spin_rate(true);
  out.values.push_back({"spin_per_us", rate});
  for (double us : {0.1, 1.0, 10.0}) {
    int64_t n = std::max<int64_t>(100, int64_t(2e4 * scale / us));
    double measured = median_of(reps, [&] {
      auto t0 = Clock::now();
      for (int64_t i = 0; i < n; ++i) spin_us(us);
      return secs(t0) / double(n);
    });
    std::string key = us < 1 ? "spin_0p1us_ratio" : (us < 2 ? "spin_1us_ratio" : "spin_10us_ratio");
    out.values.push_back({key, measured / (us * 1e-6)});
  }
  return out;
}

}  // namespace tp
