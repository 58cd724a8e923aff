// The DAG's layout in memory: occurrences (and their ops and direct calls) in the order the recorded run made
// them, each object's occurrences chained (see link_occurrences in engine.hpp).
#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "tickpar/engine.hpp"

namespace tp {

void link_occurrences(Dag& d, const std::vector<int64_t>* run_order) {
  size_t n = d.occ.size();
  d.occ_pos.clear();
  if (run_order != nullptr && !run_order->empty()) {
    if (run_order->size() != n) throw std::invalid_argument("occ_seq must have one entry per occurrence");
    std::vector<int64_t> by_run(n);  // by_run[p]: the given occurrence that runs p-th
    std::iota(by_run.begin(), by_run.end(), int64_t(0));
    std::stable_sort(by_run.begin(), by_run.end(),
                     [&](int64_t a, int64_t b) { return (*run_order)[size_t(a)] < (*run_order)[size_t(b)]; });
    std::vector<Occ> occ(n);
    std::vector<Op> ops(d.ops.begin(), d.ops.begin() + d.init_ops);  // init()'s ops stay first
    ops.reserve(d.ops.size());
    std::vector<int32_t> tcomp, tname;
    tcomp.reserve(d.touch_comp.size());
    tname.reserve(d.touch_name.size());
    d.occ_pos.assign(n, 0);
    for (size_t p = 0; p < n; ++p) {
      const Occ& o = d.occ[size_t(by_run[p])];
      Occ& m = occ[p];
      m.work_us = o.work_us;
      m.ops_begin = int64_t(ops.size());
      ops.insert(ops.end(), d.ops.begin() + o.ops_begin, d.ops.begin() + o.ops_end);
      m.ops_end = int64_t(ops.size());
      m.touch_begin = int64_t(tcomp.size());
      tcomp.insert(tcomp.end(), d.touch_comp.begin() + o.touch_begin, d.touch_comp.begin() + o.touch_end);
      tname.insert(tname.end(), d.touch_name.begin() + o.touch_begin, d.touch_name.begin() + o.touch_end);
      m.touch_end = int64_t(tcomp.size());
      d.occ_pos[size_t(by_run[p])] = int64_t(p);
    }
    d.occ = std::move(occ);
    d.ops = std::move(ops);
    d.touch_comp = std::move(tcomp);
    d.touch_name = std::move(tname);
  }
  auto pos = [&](int64_t i) { return d.occ_pos.empty() ? i : d.occ_pos[size_t(i)]; };
  int32_t nobj = d.nobj();
  d.obj_first.assign(size_t(nobj), -1);
  for (int32_t o = 0; o < nobj; ++o) {
    int64_t b = d.occ_off[size_t(o)], e = d.occ_off[size_t(o) + 1];
    if (b < e) d.obj_first[size_t(o)] = pos(b);
    for (int64_t i = b; i < e; ++i) d.occ[size_t(pos(i))].next = i + 1 < e ? pos(i + 1) : -1;
  }
}

}  // namespace tp
