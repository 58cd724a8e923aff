// tickpar's native engine, public API (1/8): the DAG, the options, the result, gem5's keys and the digest.
// A strategy includes <tickpar/strategy.hpp>, which includes this; see that header for the contract.
//
// The DAG (see Dag below) holds, per event *object* (a named long-lived event or one message), its
// component, name id and priority, and per *occurrence* k of that object in the golden sequential run
// the operations its k-th process() made (schedule / reschedule / deschedule of a target object, with
// `when` = cur_tick + delay ("clock") or a stored absolute tick), the components its handler entered
// through direct calls, and its synthetic work.  A replay keys behaviour by (object, occurrence): a
// wrong parallel run still replays "the same program" but may compute other `when`s.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace tp {

constexpr int PRIO_BITS = 8;
constexpr int PRIO_OFFSET = 128;
constexpr int CALL_PRIORITY = -129;  // a direct call's record in a component trace (tickpar.model)
constexpr int SIM_EXIT_PRI = 100;
constexpr int64_t UNSOURCED_BASE = -(int64_t(1) << 62);  // tickpar.eventkeys
constexpr int64_t CHILD_GEM5 = -(int64_t(1) << 62);
constexpr int64_t CHILD_UNSOURCED = UNSOURCED_BASE + (int64_t(1) << 61);
constexpr int64_t NO_SOURCE = INT64_MIN;
constexpr int64_t NO_END = -1;
constexpr uint64_t PENDING_BIT = uint64_t(1) << 63;  // stamps of deferred insertions (tick-barrier)
constexpr int MAX_ADAPTIVE_LPS = 64;  // conservative schedule=adaptive: one bit per LP in a window's inbound masks

inline int64_t pack_key(int64_t when, int prio) { return (when << PRIO_BITS) + prio + PRIO_OFFSET; }
inline int64_t key_when(int64_t key) { return key >> PRIO_BITS; }
inline int key_prio(int64_t key) { return int(key & ((1 << PRIO_BITS) - 1)) - PRIO_OFFSET; }

enum OpKind : uint8_t { SCHEDULE = 0, RESCHEDULE = 1, RESCHEDULE_ALWAYS = 2, DESCHEDULE = 3 };
enum OpMode : uint8_t { CLOCK = 0, ABSOLUTE = 1 };

struct Op {
  int64_t value;   // delay (CLOCK) or tick (ABSOLUTE)
  int64_t source;  // canonical tie (source component << 40 | seq), NO_SOURCE if none
  int32_t target;  // event object
  uint8_t kind;
  uint8_t mode;
};

struct Occ {
  int64_t ops_begin, ops_end;
  int64_t touch_begin, touch_end;
  double work_us;
  int64_t next = -1;  // the same object's next occurrence (link_occurrences), -1: none
};

struct Dag {
  int32_t ncomp = 0;
  std::vector<int32_t> obj_comp, obj_name;
  std::vector<int16_t> obj_prio;
  std::vector<uint8_t> obj_flags;  // bit 0: a message (one-shot, nobody else holds it)
  std::vector<int64_t> occ_off;    // as given: object o's occurrences were the o-th run of them
  std::vector<Occ> occ;            // in run order where it is known (link_occurrences), else as given
  std::vector<int64_t> obj_first;  // per object: its first occurrence in occ (-1: none)
  std::vector<int64_t> occ_pos;    // given occurrence i is occ[occ_pos[i]] (empty: the same place)
  std::vector<Op> ops;  // ops[0 .. init_ops): the initial schedules (init(), before the loop)
  int64_t init_ops = 0;
  std::vector<int32_t> touch_comp, touch_name;
  int64_t end_tick = NO_END;  // simulate()'s limit: events with key < (end_tick, SIM_EXIT) run
  int32_t nobj() const { return int32_t(obj_comp.size()); }
};

struct Options {
  std::string strategy = "sequential";
  int workers = 1;
  bool canonical = false;
  bool checks = true;
  bool trace = false;
  bool lock_by_name = true;  // split: lock_key=name (the prototype); tick-barrier: lock_key=name
  int min_parallel = 2;
  // tick-barrier: a bin runs in parallel only if its work would save at least min_batch_ns +
  // batch_event_ns per member there (what a hand-off costs: the calibration); 0, 0: every bin of 2+ groups
  double min_batch_ns = 0;
  double batch_event_ns = 0;
  std::vector<int32_t> lp_of;  // conservative / quantum: LP of every component
  int64_t lookahead = -1;      // conservative: window length (-1: none, one window)
  // conservative: schedule=adaptive runs `lps` LPs (workers <= lps <= MAX_ADAPTIVE_LPS, lp_of in [0, lps)) on the
  // workers, handed out every window by their cost in the last one (adaptive.hpp); false: one LP per worker
  bool adaptive = false;
  int lps = 0;  // adaptive: the LPs (0: workers)
  int64_t quantum = -1;        // quantum: ticks per quantum (-1: one quantum)
  bool late_clamp = true;      // quantum: late=clamp (else error)
  bool quantum_mode = false;
  double stall_s = 30.0;
  double spin_per_us = 0.0;  // 0: calibrate
  int replays = 1;           // replay the DAG this many times (one result; loop_s: the mean per replay)
  // A native plugin's own options (its declaration's), validated and completed with their defaults by tickpar:
  // (name, value as text); read them with option_int / option_double / option_bool / option_text (strategy.hpp).
  std::vector<std::pair<std::string, std::string>> plugin_options;
};

struct TraceRec {
  int64_t when;
  int32_t prio;
  int32_t name;
};

struct alignas(64) CompOut {
  int64_t count = 0;
  uint64_t digest = 0;
  int64_t last_when = 0;
  std::vector<TraceRec> trace;
  std::atomic_flag lock = ATOMIC_FLAG_INIT;  // split only: its workers may race into one component
};

struct Violation {
  std::string op;
  int32_t obj;
  int64_t when, cur_tick;
  std::string reason;
};

struct Failure {
  bool set = false;
  std::string kind;  // causality, crash, deadlock
  std::string op;
  int32_t obj = -1;
  int64_t when = 0, cur_tick = 0;
  std::string reason;
  std::string message;
};

struct RaceRec {
  int32_t comp;
  int32_t obj;  // -1: a direct call
  int64_t when;
  std::string detail;
};

struct Result {
  std::vector<int64_t> counts, last_when;
  std::vector<uint64_t> digests;
  std::vector<int64_t> trace_off;  // ncomp + 1
  std::vector<TraceRec> trace;
  Failure failure;
  std::vector<Violation> violations;
  int64_t violations_total = 0;
  std::vector<RaceRec> races;
  int64_t races_total = 0;
  int64_t cur_tick = 0;
  // statistics: name -> number (flat)
  std::vector<std::pair<std::string, double>> stats;
  std::vector<std::pair<std::string, std::vector<double>>> stats_lists;
};

inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// The per-component digest of (when, priority, name id) records, in order: a multiply-rotate stream
// hash (each record through two odd multipliers, the state rotated between records: order matters).
inline uint64_t fold(uint64_t d, int64_t when, int prio, int32_t name) {
  uint64_t x = uint64_t(when) * 0x9e3779b97f4a7c15ull ^ ((uint64_t(uint32_t(name)) << 9) | uint64_t(prio + 129)) *
                                                           0xc2b2ae3d27d4eb4full;
  d = (d << 29 | d >> 35) ^ x;
  return d * 0x165667b19e3779f9ull;
}

// The calibrated busy loop: n iterations of a dependent xorshift chain (no memory, no syscall).
inline uint64_t spin_iters(uint64_t n) {
  uint64_t x = 88172645463325252ull;
  for (uint64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  asm volatile("" : : "r"(x));
  return x;
}

// The spin loop's rate, iterations per microsecond: calibrated once per module (the fastest of several timed
// runs: a preempted run only looks slower, never faster), or set by the caller.  A plugin gets the engine's
// rate in Options::spin_per_us, so it never calibrates on its own.
inline std::atomic<double>& spin_rate_cache() {
  static std::atomic<double> rate{0.0};
  return rate;
}

inline double spin_rate(bool recalibrate = false) {
  double cached = spin_rate_cache().load();
  if (cached > 0 && !recalibrate) return cached;
  const uint64_t n = 2'000'000;
  spin_iters(n / 10);  // warm up (frequency, caches)
  double best = 1e9;
  for (int i = 0; i < 7; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    spin_iters(n);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  double rate = double(n) / (best * 1e6);
  spin_rate_cache().store(rate);
  return rate;
}

inline void set_spin_rate(double per_us) { spin_rate_cache().store(per_us); }

inline void spin_us(double us) {
  if (us > 0) spin_iters(uint64_t(us * spin_rate() + 0.5));
}

// -- the engine module's own entry points (defined in the engine; a plugin does not call them) --
Result run(const Dag& dag, const Options& opt);

// Chain each object's occurrences (Occ::next, Dag::obj_first), after laying occ, ops and the direct calls
// out in the order the recorded run made them (run_order[i]: given occurrence i's place in that run; null:
// keep the given order).  A replay then reads the DAG front to back, as the run made it, instead of
// jumping between objects' runs of occurrences: a cache miss per event less where the DAG outgrows the
// caches (docs/how-to/native-engine.md).
void link_occurrences(Dag& d, const std::vector<int64_t>* run_order);

struct CalibrationResult {
  std::vector<std::pair<std::string, double>> values;
};
CalibrationResult calibrate_costs(double budget_s);

}  // namespace tp
