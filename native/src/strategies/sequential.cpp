// The sequential strategy, on the public API: gem5's doSimLoop on one queue, the reference for every result.
#include "tickpar/strategy.hpp"

namespace tp {

void run_sequential(Run& r, Result& res, Crew&) {
  Queue q;
  q.heap.reserve(1024);
  if (!r.init_ops(q)) return;
  auto t0 = Clock::now();
  seq_loop(r, q);
  add_stat(res, "loop_s", seconds_since(t0));
  add_stat(res, "batches", double(r.executed));
  res.cur_tick = q.cur_tick;
}

TICKPAR_BUILTIN_STRATEGY("sequential", run_sequential)

}  // namespace tp
