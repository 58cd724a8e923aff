// tickpar_native._gem5: the Python binding of the gem5 trace importer (gem5_import.hpp): the import as a dict
// of names and int64 arrays, or a str (why the Python importer must run instead).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "gem5_import.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using namespace tp::gem5;

nb::bytes raw(const std::vector<int64_t>& v) {
  return nb::bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));
}

// The import as a dict, or a str (why this port defers to the Python importer).  Bad input: ValueError with
// this port's short reason (tickpar.gem5.importer then lets the Python importer word the error).
nb::object import_trace(const std::string& path, const std::string& shown, const std::string& tpath,
                        const std::string& fmt, int64_t events) {
  int req;
  if (fmt == "auto")
    req = F_AUTO;
  else if (fmt == "event")
    req = F_EVENT;
  else if (fmt == "insert-log")
    req = F_INSERT;
  else
    return nb::str("an unknown format");
  Reader rd;
  rd.shown = shown;
  Importer imp;
  imp.tpath = tpath;
  imp.limit_events = events;
  std::string fallback, error;
  {
    nb::gil_scoped_release unlock;
    try {
      run_import(path, req, rd, imp);
      imp.finish();
    } catch (const Fallback& f) {
      fallback = f.why.empty() ? "unsupported" : f.why;
    } catch (const TraceErr& e) {
      error = e.msg;
    } catch (const std::bad_alloc&) {
      fallback = "out of memory";
    }
  }
  if (!fallback.empty()) return nb::str(fallback.c_str());
  if (!error.empty()) throw nb::value_error(error.c_str());
  nb::list names;
  for (int32_t p : imp.names) {
    sv name = imp.pool.str(p);
    names.append(nb::str(name.data(), name.size()));
  }
  nb::list obj_ptr;
  for (int32_t p : imp.obj_ptr) {
    sv ptr = imp.pool.str(p);
    obj_ptr.append(nb::str(ptr.data(), ptr.size()));
  }
  nb::list exit_events;
  for (auto [p, tick] : imp.exit_events) {
    sv name = imp.pool.str(p);
    exit_events.append(nb::make_tuple(nb::str(name.data(), name.size()), tick));
  }
  nb::list rules;
  for (int r : imp.rule_order) rules.append(nb::make_tuple(nb::str(RULE_NAMES[r]), imp.rules[r]));
  nb::list warnings;
  for (const std::string& w : rd.warnings) warnings.append(nb::str(w.c_str()));
  nb::dict out;
  out["names"] = names;
  out["obj_ptr"] = obj_ptr;
  out["exit_events"] = exit_events;
  out["inst_obj"] = raw(imp.inst_obj);
  out["inst_name"] = raw(imp.inst_name);
  out["inst_when"] = raw(imp.inst_when);
  out["inst_state"] = raw(imp.inst_state);
  out["inst_occ"] = raw(imp.inst_occ);
  out["inst_level"] = raw(imp.inst_level);
  out["occ_inst"] = raw(imp.occ_inst);
  out["occ_tick"] = raw(imp.occ_tick);
  out["op_occ"] = raw(imp.op_occ);
  out["op_kind"] = raw(imp.op_kind);
  out["op_inst"] = raw(imp.op_inst);
  out["op_mode"] = raw(imp.op_mode);
  out["op_value"] = raw(imp.op_value);
  out["op_delay"] = raw(imp.op_delay);
  out["end_tick"] = imp.end_tick;
  out["first_tick"] = imp.first_tick;
  out["rules"] = rules;
  out["format"] = nb::str(FMT_NAMES[rd.fmt]);
  out["lines"] = rd.lines;
  out["events"] = rd.events;
  out["skipped_banner"] = rd.skipped_banner;
  out["skipped_other"] = rd.skipped_other;
  out["warnings"] = warnings;
  return out;
}

}  // namespace

NB_MODULE(_gem5, m) {
  m.doc() = "tickpar's gem5 trace importer in C++ (a port of tickpar.gem5.lines and tickpar.gem5.importer)";
#ifdef TICKPAR_HAVE_ZLIB
  m.attr("HAVE_ZLIB") = true;
#else
  m.attr("HAVE_ZLIB") = false;
#endif
  m.def("import_trace", &import_trace, "path"_a, "shown"_a, "tpath"_a, "fmt"_a, "events"_a,
        "Import a gem5 trace: a dict of names, int64 arrays (bytes), counters; or a str, the reason to use "
        "the Python importer instead.  Bad input raises ValueError with a short reason (the Python importer words "
        "the error the user sees).");
}
