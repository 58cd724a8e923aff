// The replay engine and its strategies (see engine.hpp).
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

// The parts, each in a header of its own (internal to this translation unit):
#include "sync.hpp"
#include "queue.hpp"
#include "replay.hpp"
#include "sequential.hpp"
#include "split.hpp"
#include "tick_barrier.hpp"
#include "partitioned.hpp"
#include "adaptive.hpp"

namespace tp {
// -- the spin loop's calibration ------------------------------------------------------------------
namespace {
std::atomic<double> g_rate{0.0};
}

double spin_rate(bool recalibrate) {
  double cached = g_rate.load();
  if (cached > 0 && !recalibrate) return cached;
  // Fastest of several timed runs: a preempted run only looks slower, never faster.
  const uint64_t n = 2'000'000;
  spin_iters(n / 10);  // warm up (frequency, caches)
  double best = 1e9;
  for (int i = 0; i < 7; ++i) {
    auto t0 = Clock::now();
    spin_iters(n);
    best = std::min(best, seconds_since(t0));
  }
  double rate = double(n) / (best * 1e6);
  g_rate.store(rate);
  return rate;
}

void set_spin_rate(double per_us) { g_rate.store(per_us); }

void spin_us(double us) {
  if (us > 0) spin_iters(uint64_t(us * spin_rate() + 0.5));
}

namespace {
Result run_once(const Dag& dag, const Options& opt, Run& r, Crew& crew) {
  Result res;
  const std::string& s = opt.strategy;
  if (s == "sequential") {
    run_sequential(r, res);
  } else if (s == "split") {
    run_split(r, res, crew);
  } else if (s == "tick-barrier") {
    run_tick_barrier(r, res, crew);
  } else if (s == "conservative" && opt.adaptive) {
    run_adaptive(r, res, crew);
  } else if (s == "conservative" || s == "quantum") {
    run_partitioned(r, res, crew);
  } else {
    r.crash("unknown strategy " + s);
  }
  int32_t C = dag.ncomp;
  res.counts.resize(size_t(C));
  res.last_when.resize(size_t(C));
  res.digests.resize(size_t(C));
  res.trace_off.assign(size_t(C) + 1, 0);
  for (int32_t c = 0; c < C; ++c) {
    res.counts[size_t(c)] = r.comps[c].count;
    res.last_when[size_t(c)] = r.comps[c].last_when;
    res.digests[size_t(c)] = r.comps[c].digest;
    res.trace_off[size_t(c) + 1] = res.trace_off[size_t(c)] + int64_t(r.comps[c].trace.size());
  }
  if (opt.trace) {
    res.trace.reserve(size_t(res.trace_off[size_t(C)]));
    for (int32_t c = 0; c < C; ++c) res.trace.insert(res.trace.end(), r.comps[c].trace.begin(), r.comps[c].trace.end());
  }
  res.failure = r.failure;
  res.violations = std::move(r.violations);
  res.violations_total = r.violations_total;
  res.races = std::move(r.races);
  res.races_total = r.races_total;
  res.stats.push_back({"executed", double(r.executed)});
  res.stats.push_back({"spin_per_us", r.rate});
  return res;
}

double stat_of(const Result& r, const char* name) {
  for (const auto& kv : r.stats)
    if (kv.first == name) return kv.second;
  return 0.0;
}

// The first component whose count or digest differs between two replays' results (-1: none).
int32_t first_difference(const Result& a, const Result& b) {
  for (size_t c = 0; c < a.digests.size(); ++c)
    if (a.digests[c] != b.digests[c] || a.counts[c] != b.counts[c]) return int32_t(c);
  return -1;
}
}  // namespace

// Replays the DAG opt.replays times back to back, so that a timed call is long against what surrounds the
// loop (the call, the threads' wake-up, the record's conversion).  Every replay must give the same result:
// the first one that differs from the first replay is returned instead, with a race that names the first
// component where they part (nondeterminism is a race's signature; compare() calls it one).  A replay that
// failed is not repeated.  loop_s becomes the mean loop per replay.
Result run(const Dag& dag, const Options& opt) {
  // One crew for every replay: its pins are set (and the caller's restored) once per call, not per replay.
  Crew crew(opt.strategy == "sequential" ? 1 : std::max(1, opt.workers));
  Run r(dag, opt);
  Result first = run_once(dag, opt, r, crew);
  int want = std::max(1, opt.replays);
  if (want == 1) return first;
  double loop_total = stat_of(first, "loop_s");
  int done = 1;
  for (; done < want && !first.failure.set; ++done) {
    r.reset();
    Result again = run_once(dag, opt, r, crew);
    loop_total += stat_of(again, "loop_s");
    if (again.failure.set) {  // this replay failed where the first did not: its failure is the verdict
      first = std::move(again);
      done++;
      break;
    }
    int32_t c = first_difference(first, again);
    if (c >= 0) {
      again.races.insert(again.races.begin(),
                         RaceRec{c, -1, again.last_when.empty() ? 0 : again.last_when[size_t(c)],
                                 "replay " + std::to_string(done + 1) + " of " + std::to_string(want) +
                                     " differs from replay 1 here (count " + std::to_string(first.counts[size_t(c)]) +
                                     " -> " + std::to_string(again.counts[size_t(c)]) + ")"});
      again.races_total++;
      first = std::move(again);
      done++;
      break;
    }
  }
  for (auto& kv : first.stats)
    if (kv.first == "loop_s") kv.second = loop_total / double(done);
  first.stats.push_back({"replays", double(done)});
  return first;
}

}  // namespace tp
