// The replay engine and its strategies (see engine.hpp).
#include "tickpar/strategy.hpp"

// The built-ins that are not yet files of their own under strategies/ (internal to this translation unit);
// sequential and tick-barrier are (src/strategies/), on the public API alone.
#include "split.hpp"
#include "partitioned.hpp"
#include "adaptive.hpp"

namespace tp {
namespace {
void run_conservative(Run& r, Result& res, Crew& crew) {
  if (r.o.adaptive)
    run_adaptive(r, res, crew);
  else
    run_partitioned(r, res, crew);
}
}  // namespace

TICKPAR_BUILTIN_STRATEGY("split", run_split)
TICKPAR_BUILTIN_STRATEGY("conservative", run_conservative)
TICKPAR_BUILTIN_STRATEGY("quantum", run_partitioned)

// A name the engine has no strategy for: the run's verdict is a crash that names it.
static void run_unknown(Run& r, Result&, Crew&) { r.crash("unknown strategy " + r.o.strategy); }

// One call: the strategy registered under opt.strategy.
Result run(const Dag& dag, const Options& opt) {
  StrategyFn fn = find_builtin(opt.strategy);
  return run_strategy(dag, opt, fn != nullptr ? fn : run_unknown);
}

}  // namespace tp
