// tickpar's native engine, public API (8/8): what a native strategy is, the contract it keeps, and how it is
// declared, run and registered.  A strategy includes this one header.
//
// A native strategy is one function, `void run(Run& r, Result& res, Crew& crew)`.  It replays the recorded
// DAG (r.d) from its initial schedules (r.init_ops) to its end (the exit event at (end_tick, SIM_EXIT), or an
// empty queue), on up to r.o.workers threads: the calling thread is worker 0 and `crew` starts the others.
// It executes every occurrence through Run::execute with a context (SeqCtx runs one now, on one queue), which
// records the event in its component's digest, spins its work, and makes its operations through the context.
//
// The contract (what tickpar's oracle then checks, bit for bit):
// * Exact: every component's events and direct calls are recorded in the order, at the ticks and with the
//   names the sequential run gave them in the cell's order mode (gem5's LIFO ties, or canonical), so that the
//   per-component digests and counts equal the golden run's.  Anything else is a named failure kind.
// * A component is entered by one thread at a time.  A strategy that cannot rule out two threads in one
//   component checks it (ComponentClaims) and reports each time it happens with Run::race: verdict race.
// * gem5's assertions: an operation into the past, a double schedule, a reschedule of an unscheduled event
//   fail through Run::apply_now / Run::fail_now (verdict causality; counted, not stopped, with checks off).
//   A deschedule of an event that is not queued is gem5's panic (Run::crash_not_found: verdict crash).
// * Stop when Run::stop is set (another thread failed): the run's first failure is its verdict.
// * Report `loop_s` (add_stat), the seconds the event loop took from the moment every thread runs (Crew::start
//   returns then) to the last thread's end, without set-up: tickpar's loop speedups divide these.  Set
//   res.cur_tick to where the run's clock ended.
// * Deterministic: tickpar may replay a DAG several times in one call (Options::replays); every replay must
//   give the first one's digests, or the cell's verdict is race (nondeterminism is a race's signature).
//
// What the engine does around the function (run_strategy): builds Run, the crew (pinned threads), repeats the
// replays, catches a C++ exception (verdict crash, with its what()), and turns the components' digests into the
// result.  A crash (segfault, abort) or a hang kills the cell's own process: tickpar records crash or timeout.
//
// A plugin (one .cpp file; docs/how-to/write-a-native-strategy.md) declares what a Python plugin declares, in
// JSON inside one raw string literal delimited `tickpar` (tickpar reads it from the source, the engine from the
// built library, and they must agree), and names its function:
//
//   static const char* const kDeclaration = R"tickpar({
//     "name": "my-scheme", "summary": "one line for tickpar list",
//     "options": {"min_parallel": {"type": "int", "default": 2, "min": 2, "help": "..."}},
//     "promise": [{"if": {"workers": 1}, "verdict": "exact", "because": "one worker: gem5's loop"}]
//   })tickpar";
//   void run_my_scheme(tp::Run& r, tp::Result& res, tp::Crew& crew) { ... }
//   TICKPAR_NATIVE_STRATEGY(kDeclaration, run_my_scheme)
#pragma once

#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tickpar/api_digest.hpp"  // TICKPAR_API_DIGEST, generated when the engine is built
#include "tickpar/claims.hpp"
#include "tickpar/engine.hpp"
#include "tickpar/loop.hpp"
#include "tickpar/messages.hpp"
#include "tickpar/queue.hpp"
#include "tickpar/replay.hpp"
#include "tickpar/sync.hpp"

namespace tp {

using StrategyFn = void (*)(Run& r, Result& res, Crew& crew);

// -- statistics: name -> number, or name -> list (per worker, per window) -----------------------------------
inline void add_stat(Result& res, const std::string& name, double value) { res.stats.push_back({name, value}); }
inline void add_stat_list(Result& res, const std::string& name, std::vector<double> values) {
  res.stats_lists.push_back({name, std::move(values)});
}

// -- a plugin's options (validated and completed with their defaults by tickpar before the run) ---------------
inline const std::string& option_text(const Options& o, const std::string& name) {
  for (const auto& kv : o.plugin_options)
    if (kv.first == name) return kv.second;
  throw std::invalid_argument("option " + name + " was not given: declare it in the strategy's declaration");
}
inline int64_t option_int(const Options& o, const std::string& name) {
  const std::string& v = option_text(o, name);
  size_t used = 0;
  int64_t x = std::stoll(v, &used);
  if (used != v.size()) throw std::invalid_argument("option " + name + "=" + v + " is not an int");
  return x;
}
inline double option_double(const Options& o, const std::string& name) {
  const std::string& v = option_text(o, name);
  size_t used = 0;
  double x = std::stod(v, &used);
  if (used != v.size()) throw std::invalid_argument("option " + name + "=" + v + " is not a number");
  return x;
}
inline bool option_bool(const Options& o, const std::string& name) {
  const std::string& v = option_text(o, name);
  if (v == "true") return true;
  if (v == "false") return false;
  throw std::invalid_argument("option " + name + "=" + v + " is not true or false");
}

// -- the driver: one call's replays of the DAG under one strategy -------------------------------------------
namespace detail {

inline Result run_once(const Dag& dag, Run& r, Crew& crew, StrategyFn fn) {
  Result res;
  try {
    fn(r, res, crew);
  } catch (const std::exception& e) {
    r.crash(std::string("the strategy threw: ") + e.what());
  } catch (...) {
    r.crash("the strategy threw a non-std exception");
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
  if (r.o.trace) {
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

inline double stat_of(const Result& r, const char* name) {
  for (const auto& kv : r.stats)
    if (kv.first == name) return kv.second;
  return 0.0;
}

// The first component whose count or digest differs between two replays' results (-1: none).
inline int32_t first_difference(const Result& a, const Result& b) {
  for (size_t c = 0; c < a.digests.size(); ++c)
    if (a.digests[c] != b.digests[c] || a.counts[c] != b.counts[c]) return int32_t(c);
  return -1;
}

}  // namespace detail

// Replays the DAG opt.replays times back to back under `fn`, so that a timed call is long against what surrounds
// the loop (the call, the threads' wake-up, the record's conversion).  Every replay must give the same result:
// the first one that differs from the first replay is returned instead, with a race that names the first
// component where they part.  A replay that failed is not repeated.  loop_s becomes the mean loop per replay.
inline Result run_strategy(const Dag& dag, const Options& opt, StrategyFn fn) {
  // One crew for every replay: its pins are set (and the caller's restored) once per call, not per replay.
  Crew crew(opt.strategy == "sequential" ? 1 : std::max(1, opt.workers));
  Run r(dag, opt);
  Result first = detail::run_once(dag, r, crew, fn);
  int want = std::max(1, opt.replays);
  if (want == 1) return first;
  double loop_total = detail::stat_of(first, "loop_s");
  int done = 1;
  for (; done < want && !first.failure.set; ++done) {
    r.reset();
    Result again = detail::run_once(dag, r, crew, fn);
    loop_total += detail::stat_of(again, "loop_s");
    if (again.failure.set) {  // this replay failed where the first did not: its failure is the verdict
      first = std::move(again);
      done++;
      break;
    }
    int32_t c = detail::first_difference(first, again);
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

// -- registration ----------------------------------------------------------------------------------------------
// The strategies built into the engine module (its own translation units register them at load).
struct BuiltinStrategy {
  const char* name;
  StrategyFn fn;
};
inline std::vector<BuiltinStrategy>& builtin_strategies() {
  static std::vector<BuiltinStrategy> registered;
  return registered;
}
inline StrategyFn find_builtin(const std::string& name) {
  for (const auto& s : builtin_strategies())
    if (name == s.name) return s.fn;
  return nullptr;
}
struct BuiltinRegistrar {
  BuiltinRegistrar(const char* name, StrategyFn fn) { builtin_strategies().push_back({name, fn}); }
};

// What a plugin library exports (C linkage, so that the engine finds them with dlsym): its declaration, the
// API digest it was built against (the engine refuses another), and its run.
extern "C" {
using PluginDeclarationFn = const char* (*)();
using PluginApiFn = const char* (*)();
using PluginRunFn = void (*)(const Dag* dag, const Options* opt, Result* out);
}

}  // namespace tp

#define TICKPAR_BUILTIN_STRATEGY(NAME, FUNCTION) \
  static ::tp::BuiltinRegistrar tickpar_builtin_registrar_##FUNCTION{NAME, FUNCTION};

#define TICKPAR_NATIVE_STRATEGY(DECLARATION, FUNCTION)                                                        \
  extern "C" __attribute__((visibility("default"))) const char* tickpar_strategy_declaration() {             \
    return DECLARATION;                                                                                       \
  }                                                                                                           \
  extern "C" __attribute__((visibility("default"))) const char* tickpar_strategy_api() {                     \
    return TICKPAR_API_DIGEST;                                                                                \
  }                                                                                                           \
  extern "C" __attribute__((visibility("default"))) void tickpar_strategy_run(                                \
      const ::tp::Dag* dag, const ::tp::Options* opt, ::tp::Result* out) {                                    \
    try {                                                                                                     \
      *out = ::tp::run_strategy(*dag, *opt, FUNCTION);                                                        \
    } catch (const std::exception& e) {                                                                       \
      out->failure.set = true;                                                                                \
      out->failure.kind = "crash";                                                                            \
      out->failure.message = std::string("the strategy threw: ") + e.what();                                  \
    }                                                                                                         \
  }
