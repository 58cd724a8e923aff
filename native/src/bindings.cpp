// Python bindings (nanobind): tickpar_native._engine
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <dlfcn.h>

#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "tickpar/strategy.hpp"

namespace nb = nanobind;
using namespace nb::literals;

template <class T>
using Arr = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

template <class T>
std::vector<T> vec(const Arr<T>& a) {
  return std::vector<T>(a.data(), a.data() + a.shape(0));
}

template <class T>
nb::bytes raw(const std::vector<T>& v) {
  return nb::bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

static tp::Dag make_dag(int32_t ncomp, const Arr<int32_t>& obj_comp, const Arr<int32_t>& obj_name,
                        const Arr<int16_t>& obj_prio, const Arr<uint8_t>& obj_flags, const Arr<int64_t>& occ_off,
                        const Arr<int64_t>& ops_off, const Arr<int64_t>& touch_off, const Arr<double>& work_us,
                        const Arr<uint8_t>& op_kind, const Arr<uint8_t>& op_mode, const Arr<int32_t>& op_target,
                        const Arr<int64_t>& op_value, const Arr<int64_t>& op_source, const Arr<int32_t>& touch_comp,
                        const Arr<int32_t>& touch_name, int64_t end_tick,
                        const Arr<int64_t>& occ_seq) {
  tp::Dag d;
  size_t nobj = obj_comp.shape(0);
  if (obj_name.shape(0) != nobj || obj_prio.shape(0) != nobj || obj_flags.shape(0) != nobj)
    throw std::invalid_argument("obj_comp, obj_name, obj_prio and obj_flags must have one entry per event object");
  if (occ_off.shape(0) != nobj + 1) throw std::invalid_argument("occ_off must have n_objects + 1 entries");
  size_t nocc = work_us.shape(0);
  if (ops_off.shape(0) != nocc + 1 || touch_off.shape(0) != nocc + 1)
    throw std::invalid_argument("ops_off and touch_off must have n_occurrences + 1 entries");
  size_t nops = op_kind.shape(0);
  if (op_mode.shape(0) != nops || op_target.shape(0) != nops || op_value.shape(0) != nops ||
      op_source.shape(0) != nops)
    throw std::invalid_argument("op_kind, op_mode, op_target, op_value and op_source must have one entry per op");
  if (touch_comp.shape(0) != touch_name.shape(0))
    throw std::invalid_argument("touch_comp and touch_name must have the same length");
  d.ncomp = ncomp;
  d.obj_comp = vec(obj_comp);
  d.obj_name = vec(obj_name);
  d.obj_prio = vec(obj_prio);
  d.obj_flags = vec(obj_flags);
  d.occ_off = vec(occ_off);
  if (d.occ_off[0] != 0 || size_t(d.occ_off[nobj]) != nocc)
    throw std::invalid_argument("occ_off must start at 0 and end at n_occurrences");
  for (size_t o = 0; o < nobj; ++o) {
    if (d.obj_comp[o] < 0 || d.obj_comp[o] >= ncomp) throw std::invalid_argument("obj_comp out of range");
    if (d.obj_prio[o] < -128 || d.obj_prio[o] > 127) throw std::invalid_argument("obj_prio out of range (int8)");
    if (d.occ_off[o + 1] < d.occ_off[o]) throw std::invalid_argument("occ_off must not decrease");
  }
  d.init_ops = ops_off.data()[0];
  d.occ.resize(nocc);
  for (size_t i = 0; i < nocc; ++i) {
    d.occ[i] = tp::Occ{ops_off.data()[i], ops_off.data()[i + 1], touch_off.data()[i], touch_off.data()[i + 1],
                       work_us.data()[i]};
    if (d.occ[i].ops_end < d.occ[i].ops_begin || size_t(d.occ[i].ops_end) > nops || d.occ[i].touch_end < d.occ[i].touch_begin ||
        size_t(d.occ[i].touch_end) > touch_comp.shape(0))
      throw std::invalid_argument("ops_off / touch_off out of range");
  }
  if (d.init_ops < 0 || size_t(d.init_ops) > nops) throw std::invalid_argument("ops_off[0] (init ops) out of range");
  d.ops.resize(nops);
  for (size_t i = 0; i < nops; ++i) {
    d.ops[i] = tp::Op{op_value.data()[i], op_source.data()[i], op_target.data()[i], op_kind.data()[i],
                      op_mode.data()[i]};
    if (d.ops[i].target < 0 || size_t(d.ops[i].target) >= nobj) throw std::invalid_argument("op_target out of range");
    if (d.ops[i].kind > 3 || d.ops[i].mode > 1) throw std::invalid_argument("op_kind or op_mode out of range");
  }
  d.touch_comp = vec(touch_comp);
  d.touch_name = vec(touch_name);
  for (int32_t c : d.touch_comp)
    if (c < 0 || c >= ncomp) throw std::invalid_argument("touch_comp out of range");
  d.end_tick = end_tick;
  if (occ_seq.shape(0) != 0 && occ_seq.shape(0) != nocc)
    throw std::invalid_argument("occ_seq has " + std::to_string(occ_seq.shape(0)) + " entries for " +
                                std::to_string(nocc) + " occurrences: give one per occurrence, or none");
  std::vector<int64_t> seq = vec(occ_seq);
  tp::link_occurrences(d, seq.empty() ? nullptr : &seq);
  return d;
}

static nb::object failure_dict(const tp::Failure& f) {
  if (!f.set) return nb::none();
  nb::dict out;
  out["kind"] = f.kind;
  out["op"] = f.op;
  out["obj"] = f.obj;
  out["when"] = f.when;
  out["cur_tick"] = f.cur_tick;
  out["reason"] = f.reason;
  out["message"] = f.message;
  return out;
}

static nb::dict result_dict(const tp::Result& r);

static nb::dict run_py(const tp::Dag& dag, const std::string& strategy, int workers, const std::string& order,
                       bool checks, bool trace, const std::string& lock_key, int min_parallel,
                       const std::vector<int32_t>& lp_of, int64_t lookahead, int64_t quantum, const std::string& late,
                       double stall_s, double spin_per_us, int replays, double min_batch_ns,
                       double batch_event_ns, const std::string& schedule, int lps) {
  tp::Options o;
  o.strategy = strategy;
  o.workers = workers;
  if (order != "gem5" && order != "canonical") throw std::invalid_argument("order must be gem5 or canonical");
  o.canonical = order == "canonical";
  o.checks = checks;
  o.trace = trace;
  if (lock_key != "name" && lock_key != "component") throw std::invalid_argument("lock_key must be name or component");
  o.lock_by_name = lock_key == "name";
  o.min_parallel = min_parallel;
  if (!(min_batch_ns >= 0))
    throw std::invalid_argument("min_batch_ns=" + std::to_string(min_batch_ns) + " is not allowed: it must be >= 0");
  o.min_batch_ns = min_batch_ns;
  if (!(batch_event_ns >= 0))
    throw std::invalid_argument("batch_event_ns=" + std::to_string(batch_event_ns) +
                                " is not allowed: it must be >= 0");
  o.batch_event_ns = batch_event_ns;
  o.lp_of = lp_of;
  o.lookahead = lookahead;
  if (schedule != "static" && schedule != "adaptive")
    throw std::invalid_argument("schedule=" + schedule + " is not allowed: static or adaptive");
  o.adaptive = schedule == "adaptive";
  if (o.adaptive && strategy != "conservative")
    throw std::invalid_argument("schedule=adaptive is not allowed for " + strategy + ": conservative only");
  if (o.adaptive && (lps < workers || lps > tp::MAX_ADAPTIVE_LPS))
    throw std::invalid_argument("lps=" + std::to_string(lps) + " is not allowed with schedule=adaptive: an int from "
                                "the workers (" + std::to_string(workers) + ") to " +
                                std::to_string(tp::MAX_ADAPTIVE_LPS));
  o.lps = o.adaptive ? lps : 0;
  o.quantum = quantum;
  o.quantum_mode = strategy == "quantum";
  if (late != "clamp" && late != "error") throw std::invalid_argument("late must be clamp or error");
  o.late_clamp = late == "clamp";
  o.stall_s = stall_s;
  o.spin_per_us = spin_per_us;
  if (workers < 1) throw std::invalid_argument("workers must be >= 1");
  if (replays < 1)
    throw std::invalid_argument("replays=" + std::to_string(replays) + " is not allowed: it must be >= 1");
  o.replays = replays;
  tp::Result r;
  {
    nb::gil_scoped_release release;
    r = tp::run(dag, o);
  }
  return result_dict(r);
}

static nb::dict result_dict(const tp::Result& r) {
  nb::dict out;
  out["counts"] = raw(r.counts);
  out["last_when"] = raw(r.last_when);
  out["digests"] = raw(r.digests);
  out["trace_off"] = raw(r.trace_off);
  std::vector<int64_t> tw;
  std::vector<int32_t> tpri, tn;
  tw.reserve(r.trace.size());
  tpri.reserve(r.trace.size());
  tn.reserve(r.trace.size());
  for (const auto& t : r.trace) {
    tw.push_back(t.when);
    tpri.push_back(t.prio);
    tn.push_back(t.name);
  }
  out["trace_when"] = raw(tw);
  out["trace_prio"] = raw(tpri);
  out["trace_name"] = raw(tn);
  out["failure"] = failure_dict(r.failure);
  nb::list viols;
  for (const auto& v : r.violations) {
    nb::dict d;
    d["op"] = v.op;
    d["obj"] = v.obj;
    d["when"] = v.when;
    d["cur_tick"] = v.cur_tick;
    d["reason"] = v.reason;
    viols.append(d);
  }
  out["violations"] = viols;
  out["violations_total"] = r.violations_total;
  nb::list races;
  for (const auto& x : r.races) {
    nb::dict d;
    d["component"] = x.comp;
    d["obj"] = x.obj;
    d["when"] = x.when;
    d["detail"] = x.detail;
    races.append(d);
  }
  out["races"] = races;
  out["races_total"] = r.races_total;
  out["cur_tick"] = r.cur_tick;
  nb::dict stats;
  for (const auto& kv : r.stats) stats[kv.first.c_str()] = kv.second;
  for (const auto& kv : r.stats_lists) {
    nb::list l;
    for (double x : kv.second) l.append(x);
    stats[kv.first.c_str()] = l;
  }
  out["stats"] = stats;
  return out;
}

static uint64_t digest_trace(const Arr<int64_t>& when, const Arr<int32_t>& prio, const Arr<int32_t>& name) {
  size_t n = when.shape(0);
  if (prio.shape(0) != n || name.shape(0) != n) throw std::invalid_argument("when, prio and name differ in length");
  uint64_t d = 0;
  for (size_t i = 0; i < n; ++i) d = tp::fold(d, when.data()[i], prio.data()[i], name.data()[i]);
  return d;
}


// -- native strategy plugins (tickpar/strategy.hpp: TICKPAR_NATIVE_STRATEGY) --------------------------------------
struct LoadedPlugin {
  tp::PluginDeclarationFn declaration = nullptr;
  tp::PluginApiFn api = nullptr;
  tp::PluginRunFn run = nullptr;
};

// A plugin library, loaded once per process (a library stays loaded: its code may still run on the pool's threads).
static const LoadedPlugin& load_plugin(const std::string& path) {
  static std::mutex mu;
  static std::unordered_map<std::string, LoadedPlugin> loaded;
  std::lock_guard<std::mutex> g(mu);
  auto it = loaded.find(path);
  if (it != loaded.end()) return it->second;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw std::runtime_error("cannot load " + path + ": " + (why ? why : "dlopen failed"));
  }
  LoadedPlugin p;
  p.declaration = reinterpret_cast<tp::PluginDeclarationFn>(dlsym(handle, "tickpar_strategy_declaration"));
  p.api = reinterpret_cast<tp::PluginApiFn>(dlsym(handle, "tickpar_strategy_api"));
  p.run = reinterpret_cast<tp::PluginRunFn>(dlsym(handle, "tickpar_strategy_run"));
  if (p.declaration == nullptr || p.api == nullptr || p.run == nullptr) {
    dlclose(handle);
    throw std::runtime_error(path + " is not a tickpar native strategy: it exports no tickpar_strategy_run "
                             "(end its source with TICKPAR_NATIVE_STRATEGY(declaration, function))");
  }
  return loaded.emplace(path, p).first->second;
}

static nb::dict plugin_info(const std::string& path) {
  const LoadedPlugin& p = load_plugin(path);
  nb::dict out;
  out["declaration"] = std::string(p.declaration());
  out["api_digest"] = std::string(p.api());
  return out;
}

static nb::dict run_plugin_py(const std::string& path, const tp::Dag& dag, const std::string& name, int workers,
                              const std::string& order, bool checks, bool trace,
                              const std::vector<std::string>& option_names,
                              const std::vector<std::string>& option_values, double spin_per_us, int replays,
                              double stall_s) {
  const LoadedPlugin& p = load_plugin(path);
  std::string api = p.api();
  if (api != TICKPAR_API_DIGEST)
    throw std::runtime_error(path + " was built against API " + api + ", this engine has " + TICKPAR_API_DIGEST +
                             ": rebuild it (tickpar build-native)");
  if (option_names.size() != option_values.size())
    throw std::invalid_argument("option_names and option_values differ in length");
  if (order != "gem5" && order != "canonical") throw std::invalid_argument("order must be gem5 or canonical");
  if (workers < 1) throw std::invalid_argument("workers must be >= 1");
  if (replays < 1)
    throw std::invalid_argument("replays=" + std::to_string(replays) + " is not allowed: it must be >= 1");
  tp::Options o;
  o.strategy = name;
  o.workers = workers;
  o.canonical = order == "canonical";
  o.checks = checks;
  o.trace = trace;
  o.stall_s = stall_s;
  o.replays = replays;
  for (size_t i = 0; i < option_names.size(); ++i) o.plugin_options.push_back({option_names[i], option_values[i]});
  tp::Result r;
  {
    nb::gil_scoped_release release;
    o.spin_per_us = spin_per_us > 0 ? spin_per_us : tp::spin_rate();  // the engine's rate: the plugin never calibrates
    p.run(&dag, &o, &r);
  }
  return result_dict(r);
}

NB_MODULE(_engine, m) {
  m.doc() = "tickpar's native engine: replays a recorded event DAG with gem5's semantics on std::threads";
  nb::class_<tp::Dag>(m, "Dag")
      .def(nb::new_(&make_dag), "ncomp"_a, "obj_comp"_a, "obj_name"_a, "obj_prio"_a, "obj_flags"_a, "occ_off"_a,
           "ops_off"_a, "touch_off"_a, "work_us"_a, "op_kind"_a, "op_mode"_a, "op_target"_a, "op_value"_a,
           "op_source"_a, "touch_comp"_a, "touch_name"_a, "end_tick"_a, "occ_seq"_a)
      .def(
          "set_work",
          [](tp::Dag& d, const Arr<double>& work_us) {
            if (work_us.shape(0) != d.occ.size()) throw std::invalid_argument("one work_us per occurrence");
            for (size_t i = 0; i < d.occ.size(); ++i)
              d.occ[d.occ_pos.empty() ? i : size_t(d.occ_pos[i])].work_us = work_us.data()[i];
          },
          "work_us"_a, "Replace every occurrence's synthetic work (microseconds).")
      .def_prop_ro("n_objects", [](const tp::Dag& d) { return d.nobj(); })
      .def_prop_ro("n_occurrences", [](const tp::Dag& d) { return int64_t(d.occ.size()); })
      .def_prop_ro("n_ops", [](const tp::Dag& d) { return int64_t(d.ops.size()); })
      .def_prop_ro("n_components", [](const tp::Dag& d) { return d.ncomp; })
      .def_prop_ro("end_tick", [](const tp::Dag& d) { return d.end_tick; });
  m.def("run", &run_py, "dag"_a, "strategy"_a = "sequential", "workers"_a = 1, "order"_a = "gem5", "checks"_a = true,
        "trace"_a = false, "lock_key"_a = "name", "min_parallel"_a = 2, "lp_of"_a = std::vector<int32_t>(),
        "lookahead"_a = -1, "quantum"_a = -1, "late"_a = "clamp", "stall_s"_a = 30.0, "spin_per_us"_a = 0.0,
        "replays"_a = 1, "min_batch_ns"_a = 0.0, "batch_event_ns"_a = 0.0, "schedule"_a = "static", "lps"_a = 0,
        "Replay `dag` under `strategy` on real threads (the GIL is released while it runs).");
  m.def(
      "spin_rate", [](bool recalibrate) { return tp::spin_rate(recalibrate); }, "recalibrate"_a = false,
      "Spin-loop iterations per microsecond on this machine (calibrated once per process).");
  m.def("set_spin_rate", &tp::set_spin_rate, "per_us"_a, "Use this spin rate instead of calibrating.");
  m.def(
      "spin", [](double us) {
        nb::gil_scoped_release release;
        tp::spin_us(us);
      },
      "us"_a, "Spin for `us` microseconds (the calibrated busy loop).");
  m.def(
      "calibrate",
      [](double budget_s) {
        tp::CalibrationResult c;
        {
          nb::gil_scoped_release release;
          c = tp::calibrate_costs(budget_s);
        }
        nb::dict out;
        for (const auto& kv : c.values) out[kv.first.c_str()] = kv.second;
        return out;
      },
      "budget_s"_a = 1.0, "The primitives' costs on this machine (mutex, barrier, message, event, spin accuracy).");
  m.def("digest_trace", &digest_trace, "when"_a, "prio"_a, "name"_a,
        "The per-component digest of a trace of (when, priority, name id) records, as the engine folds it.");
  m.def("plugin_info", &plugin_info, "path"_a,
        "Load a native strategy plugin library; its declaration (JSON text) and the API digest it was built against.");
  m.def("run_plugin", &run_plugin_py, "path"_a, "dag"_a, "name"_a, "workers"_a, "order"_a, "checks"_a, "trace"_a,
        "option_names"_a, "option_values"_a, "spin_per_us"_a = 0.0, "replays"_a = 1, "stall_s"_a = 30.0,
        "Replay `dag` under the native strategy plugin at `path` (the GIL is released while it runs).");
  m.attr("API_DIGEST") = TICKPAR_API_DIGEST;
  nb::list builtins;
  for (const auto& s : tp::builtin_strategies()) builtins.append(s.name);
  m.attr("BUILTIN_STRATEGIES") = builtins;
  m.attr("SCHEDULE") = int(tp::SCHEDULE);
  m.attr("RESCHEDULE") = int(tp::RESCHEDULE);
  m.attr("RESCHEDULE_ALWAYS") = int(tp::RESCHEDULE_ALWAYS);
  m.attr("DESCHEDULE") = int(tp::DESCHEDULE);
  m.attr("CLOCK") = int(tp::CLOCK);
  m.attr("ABSOLUTE") = int(tp::ABSOLUTE);
  m.attr("CALL_PRIORITY") = tp::CALL_PRIORITY;
}
