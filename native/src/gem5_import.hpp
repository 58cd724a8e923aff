// tickpar's gem5 event-trace importer in C++: a faithful port of tickpar/gem5/lines.py (read_trace: both
// formats, auto-detection, banner and other-flag lines; on bad input it stops at the same line, and the Python
// importer re-reads the file to word the one-line error, so that each error has one text) and tickpar/gem5/importer.py
// (_Importer: every reconstruction rule, the same float positions, tie-breaks, levels and renumbering; the
// rules are written once, in importer.py's docstring).  Component assignment stays in Python
// (importer.assign_components, for both importers).  The Python binding is gem5_module.cpp.
//
// The Python importer stays the reference.  Where this port cannot promise the same answer it gives up
// and says so (a Fallback, the reason) and the caller reruns the Python importer: a non-ASCII byte (Python
// decodes UTF-8 and its regexes see Unicode whitespace and digits), a number beyond int64 (Python's ints
// are unbounded; MaxTick as a `when` is understood), a file that cannot be opened, and any .gz problem
// (Python's gzip errors name the line its buffering reached).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tickpar/engine.hpp"

#ifdef TICKPAR_HAVE_ZLIB
#include <zlib.h>
#endif

namespace tp::gem5 {

using sv = std::string_view;

struct Fallback {
  std::string why;
};
struct TraceErr {
  std::string msg;
};

// The operation kinds and `when` modes are the engine's own (engine.hpp), as tickpar.native.record's are.
using tp::ABSOLUTE;
using tp::CLOCK;
using tp::DESCHEDULE;
using tp::RESCHEDULE;
using tp::SCHEDULE;
constexpr int64_t PENDING = 0, RAN = 1, CANCELLED = 2, DROPPED = 3;
constexpr int64_t FIRST_LEVEL = -128, LAST_LEVEL = 99;

enum Rule {
  R_PARENT, R_NO_PARENT, R_RESCHEDULE, R_RAN_SILENTLY, R_CANCELLED, R_POINTER_REUSE, R_LIMIT_EVENT,
  R_UNTRACED, R_ORDER, R_WHEN, R_LAST_TICK, R_ORDER_LEVELS_EXHAUSTED, R_EXIT_EVENT, R_EXIT_UNREACHED, N_RULES
};
inline const char* const RULE_NAMES[N_RULES] = {
    "parent",   "no_parent", "reschedule", "ran_silently", "cancelled", "pointer_reuse",
    "limit_event", "untraced", "order", "when", "last_tick", "order_levels_exhausted", "exit_event",
    "exit_unreached"};

enum Action { A_INSERTED, A_SCHEDULED, A_RESCHEDULED, A_DESCHEDULED, A_EXECUTED };
inline const char* const ACTION_NAMES[5] = {"inserted", "scheduled", "rescheduled", "descheduled", "executed"};

// names.is_exit_event_name: ^Event_\d+$ (an event without a name of its own, as gem5's exit events are)
inline bool is_exit_event_name(sv name) {
  if (name.size() < 7 || name.substr(0, 6) != "Event_") return false;
  for (size_t i = 6; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  return true;
}
inline const sv ACTION_WORDS[4] = {"scheduled", "rescheduled", "descheduled", "executed"};  // the regex's order

// -- Python's str semantics on ASCII ----------------------------------------------------------------
inline bool pyspace(unsigned char c) { return c == ' ' || (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x1f); }
inline bool isdig(unsigned char c) { return c >= '0' && c <= '9'; }
inline bool ishex(unsigned char c) { return isdig(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

inline sv strip(sv s) {
  size_t a = 0, b = s.size();
  while (a < b && pyspace(s[a])) ++a;
  while (b > a && pyspace(s[b - 1])) --b;
  return s.substr(a, b - a);
}

inline bool all_digits(sv s) {  // str.isdigit() on ASCII
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!isdig(c)) return false;
  return true;
}

inline bool is_ptr(sv s) {  // ^(0x[0-9a-fA-F]+|\d+)$
  if (s.size() > 2 && s[0] == '0' && s[1] == 'x') {
    bool ok = true;
    for (size_t i = 2; i < s.size(); ++i)
      if (!ishex(s[i])) ok = false;
    if (ok) return true;
  }
  return all_digits(s);
}

// A fragment of the input as it reads in a message (the Python importer words the message the user sees:
// tickpar.gem5.importer re-reads a refused file).
inline std::string quoted(sv s) { return "'" + std::string(s) + "'"; }

// A digit string (already checked) as int64; `when` may be MaxTick (2^64-1): max_ok.
inline int64_t to_int(sv digits, bool* is_max = nullptr) {
  unsigned __int128 v = 0;
  for (unsigned char c : digits) {
    v = v * 10 + (c - '0');
    if (v > (unsigned __int128)UINT64_MAX) throw Fallback{"a number beyond 2^64"};
  }
  if (is_max) *is_max = false;
  if (v > (unsigned __int128)INT64_MAX) {
    if (is_max && v == (unsigned __int128)UINT64_MAX) {
      *is_max = true;
      return 0;
    }
    throw Fallback{"a number beyond int64"};
  }
  return int64_t(v);
}

// The tail every Event line ends with: ` <action> @ <when>\s*$`; t0 = the space before the action.
inline bool stock_tail(sv line, size_t& t0, int& action, size_t& when_a, size_t& when_b) {
  size_t e = line.size();
  while (e > 0 && pyspace(line[e - 1])) --e;
  size_t k = e;
  while (k > 0 && isdig(line[k - 1])) --k;
  if (k == e || k < 3 || line.substr(k - 3, 3) != " @ ") return false;
  size_t ae = k - 3;
  for (int a = 0; a < 4; ++a) {
    size_t n = ACTION_WORDS[a].size();
    if (ae >= n + 1 && line.substr(ae - n, n) == ACTION_WORDS[a] && line[ae - n - 1] == ' ') {
      t0 = ae - n - 1;
      action = a;
      when_a = k;
      when_b = e;
      return true;
    }
  }
  return false;
}

struct Stock {
  sv tick, name, inst, when;
  int action;
};

// _STOCK: ^\s*(\d+): (?:Event: )?(.+?): (.*?) ?(\S+) (scheduled|...|executed) @ (\d+)\s*$
inline bool match_stock(sv line, Stock& m) {
  size_t n = line.size(), i = 0;
  while (i < n && pyspace(line[i])) ++i;
  size_t ta = i;
  while (i < n && isdig(line[i])) ++i;
  if (i == ta || i + 2 > n || line[i] != ':' || line[i + 1] != ' ') return false;
  size_t p = i + 2;
  size_t t0, wa, wb;
  int action;
  if (!stock_tail(line, t0, action, wa, wb)) return false;
  if (t0 == 0 || pyspace(line[t0 - 1])) return false;  // the instance's last character
  auto find_name = [&](size_t n0) -> long {
    for (size_t ne = n0 + 1; ne + 3 <= t0; ++ne)
      if (line[ne] == ':' && line[ne + 1] == ' ') return long(ne);
    return -1;
  };
  size_t n0 = p;
  long ne = -1;
  if (line.substr(p, 7) == "Event: ") {
    n0 = p + 7;
    ne = find_name(n0);
  }
  if (ne < 0) {
    n0 = p;
    ne = find_name(n0);
  }
  if (ne < 0) return false;
  size_t j = t0;
  while (j > size_t(ne) + 2 && !pyspace(line[j - 1])) --j;
  m.tick = line.substr(ta, i - ta);
  m.name = line.substr(n0, size_t(ne) - n0);
  m.inst = line.substr(j, t0 - j);
  m.when = line.substr(wa, wb - wa);
  m.action = action;
  return true;
}

// _STOCK_NO_TICK: ^\s*(?:Event: )?\S.*: .* (?:scheduled|...|executed) @ \d+\s*$
inline bool match_no_tick(sv line) {
  size_t n = line.size(), a = 0;
  while (a < n && pyspace(line[a])) ++a;
  if (a == n) return false;
  size_t t0, wa, wb;
  int action;
  if (!stock_tail(line, t0, action, wa, wb)) return false;
  for (size_t q = a + 1; q + 2 <= t0; ++q)
    if (line[q] == ':' && line[q + 1] == ' ') return true;
  return false;
}

// _OTHER_FLAG: ^\s*\d+: \S
inline bool match_other_flag(sv line) {
  size_t n = line.size(), i = 0;
  while (i < n && pyspace(line[i])) ++i;
  size_t a = i;
  while (i < n && isdig(line[i])) ++i;
  return i > a && i + 3 <= n && line[i] == ':' && line[i + 1] == ' ' && !pyspace(line[i + 2]);
}

inline void split_commas(sv s, std::vector<sv>& out) {
  out.clear();
  size_t a = 0;
  while (true) {
    size_t c = s.find(',', a);
    if (c == sv::npos) {
      out.push_back(s.substr(a));
      return;
    }
    out.push_back(s.substr(a, c - a));
    a = c + 1;
  }
}

// -- the byte source: a plain file, or gzip members as Python's gzip reads them -------------------------
class Source {
 public:
  explicit Source(const std::string& path) {
    f_ = std::fopen(path.c_str(), "rb");
    if (!f_) throw Fallback{"the file cannot be opened"};
    unsigned char magic[2];
    size_t got = std::fread(magic, 1, 2, f_);
    gz_ = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    std::rewind(f_);
#ifdef TICKPAR_HAVE_ZLIB
    if (gz_) {
      in_.resize(1 << 18);
      std::memset(&zs_, 0, sizeof zs_);
      if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) throw Fallback{"zlib cannot start"};
      zinit_ = true;
    }
#else
    if (gz_) throw Fallback{"a .gz file and no zlib compiled in"};
#endif
  }
  ~Source() {
#ifdef TICKPAR_HAVE_ZLIB
    if (zinit_) inflateEnd(&zs_);
#endif
    if (f_) std::fclose(f_);
  }
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;

  // Up to n bytes; 0 at the end.
  size_t read(char* out, size_t n) {
    if (!gz_) {
      size_t got = std::fread(out, 1, n, f_);
      if (got == 0 && std::ferror(f_)) throw Fallback{"read error"};
      return got;
    }
#ifdef TICKPAR_HAVE_ZLIB
    while (!done_) {
      if (zs_.avail_in == 0 && !file_eof_) fill();
      zs_.next_out = reinterpret_cast<Bytef*>(out);
      zs_.avail_out = unsigned(n);
      int rc = inflate(&zs_, Z_NO_FLUSH);
      size_t got = n - zs_.avail_out;
      if (rc == Z_STREAM_END) {
        next_member();
      } else if (rc == Z_BUF_ERROR) {
        if (zs_.avail_in == 0 && file_eof_) throw Fallback{"a cut .gz"};
      } else if (rc != Z_OK) {
        throw Fallback{"a corrupt .gz"};
      }
      if (got) return got;
      if (rc == Z_OK && zs_.avail_in == 0 && file_eof_ && got == 0) throw Fallback{"a cut .gz"};
    }
#endif
    return 0;
  }

 private:
#ifdef TICKPAR_HAVE_ZLIB
  void fill() {
    size_t got = std::fread(in_.data(), 1, in_.size(), f_);
    if (got == 0) {
      if (std::ferror(f_)) throw Fallback{"read error"};
      file_eof_ = true;
    }
    zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
    zs_.avail_in = unsigned(got);
  }
  bool next_byte(unsigned char& c) {  // peek the next compressed byte (0: none left)
    while (zs_.avail_in == 0) {
      if (file_eof_) return false;
      fill();
    }
    c = *zs_.next_in;
    return true;
  }
  void next_member() {  // Python's gzip: zero padding, then another member or the end
    unsigned char c;
    while (next_byte(c) && c == 0) {
      ++zs_.next_in;
      --zs_.avail_in;
    }
    if (!next_byte(c)) {
      done_ = true;
      return;
    }
    if (c != 0x1f) throw Fallback{"trailing garbage after a gzip member"};
    // the second magic byte: inflate checks it (a bad header is a Z_DATA_ERROR, which falls back)
    if (inflateReset(&zs_) != Z_OK) throw Fallback{"zlib reset"};
  }
  z_stream zs_;
  bool zinit_ = false;
  std::vector<char> in_;
  bool file_eof_ = false;
  bool done_ = false;
#endif
  std::FILE* f_ = nullptr;
  bool gz_ = false;
};

// Lines as Python's text mode with newline="" splits them: \n, \r or \r\n ends a line.
class LineReader {
 public:
  explicit LineReader(Source& src) : src_(src), buf_(1 << 20) {}
  // The next line without its terminator; ends_nl: the terminator ends with \n.  false at the end.
  bool next(sv& line, bool& ends_nl) {
    while (true) {
      const char* base = buf_.data();
      size_t avail = end_ - start_;
      const char* s = base + start_;
      const char* nl = avail ? static_cast<const char*>(std::memchr(s, '\n', avail)) : nullptr;
      size_t lim = nl ? size_t(nl - s) : avail;
      const char* cr = lim ? static_cast<const char*>(std::memchr(s, '\r', lim)) : nullptr;
      if (cr) {
        size_t at = size_t(cr - s);
        if (at + 1 < avail || eof_) {
          bool crlf = at + 1 < avail && s[at + 1] == '\n';
          line = sv(s, at);
          ends_nl = crlf;
          start_ += at + (crlf ? 2 : 1);
          return true;
        }
      } else if (nl) {
        line = sv(s, lim);
        ends_nl = true;
        start_ += lim + 1;
        return true;
      } else if (eof_) {
        if (avail == 0) return false;
        line = sv(s, avail);
        ends_nl = false;
        start_ = end_;
        return true;
      }
      refill();
    }
  }

 private:
  void refill() {
    if (start_ > 0) {
      std::memmove(buf_.data(), buf_.data() + start_, end_ - start_);
      end_ -= start_;
      start_ = 0;
    }
    if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
    size_t got = src_.read(buf_.data() + end_, buf_.size() - end_);
    if (got == 0) eof_ = true;
    end_ += got;
  }
  Source& src_;
  std::vector<char> buf_;
  size_t start_ = 0, end_ = 0;
  bool eof_ = false;
};

struct Line {
  int64_t lineno = 0, tick = 0, when = 0;
  bool when_max = false;
  int action = A_INSERTED;
  int32_t ptr = -1, name = -1, parent = -1, parent_name = -1;  // pool ids; parent -1: none
};

struct HeapE {
  int64_t when;
  double negpos;
  int64_t inst;
};
struct HeapGreater {  // std's heap is a max-heap: this makes it heapq's min-heap on (when, -pos, inst)
  bool operator()(const HeapE& a, const HeapE& b) const {
    if (a.when != b.when) return a.when > b.when;
    if (a.negpos != b.negpos) return a.negpos > b.negpos;
    return a.inst > b.inst;
  }
};

// Strings interned by id: one arena, an open-addressing table (the importer sees ~one pointer per event).
class Interner {
 public:
  Interner() : table_(1 << 12, -1) {}
  int32_t intern(sv s, bool& added) {
    uint64_t h = hash(s);
    size_t mask = table_.size() - 1, i = size_t(h) & mask;
    while (true) {
      int32_t id = table_[i];
      if (id < 0) break;
      if (hash_[id] == h && len_[id] == s.size() && std::memcmp(arena_.data() + off_[id], s.data(), s.size()) == 0) {
        added = false;
        return id;
      }
      i = (i + 1) & mask;
    }
    int32_t id = int32_t(off_.size());
    off_.push_back(arena_.size());
    len_.push_back(uint32_t(s.size()));
    hash_.push_back(h);
    arena_.append(s.data(), s.size());
    table_[i] = id;
    if (off_.size() * 2 > table_.size()) grow();
    added = true;
    return id;
  }
  sv str(int32_t id) const { return sv(arena_.data() + off_[id], len_[id]); }

 private:
  static uint64_t hash(sv s) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
  }
  void grow() {
    std::vector<int32_t> t(table_.size() * 2, -1);
    size_t mask = t.size() - 1;
    for (int32_t id = 0; id < int32_t(off_.size()); ++id) {
      size_t i = size_t(hash_[id]) & mask;
      while (t[i] >= 0) i = (i + 1) & mask;
      t[i] = id;
    }
    table_.swap(t);
  }
  std::string arena_;
  std::vector<uint64_t> off_, hash_;
  std::vector<uint32_t> len_;
  std::vector<int32_t> table_;
};

// The objects at one address, in the order made: (name id, object); the first inline.
struct PtrObjs {
  int32_t nid0 = -1;
  int32_t more = -1;  // index into Importer::more_objs
  int64_t obj0 = -1;
};

struct Importer {
  std::string tpath;
  int64_t limit_events = 0;

  // strings: pointers and names share one pool; a pool string becomes a name when name_id() first sees it
  Interner pool;
  std::vector<int32_t> name_of;  // pool -> name id (-1: not a name yet)
  std::vector<int32_t> names;    // name id -> pool
  int64_t n_objs = 0;
  std::vector<int32_t> obj_ptr;  // object -> pool (its instance string or address)
  int64_t last_executed = -1;    // the occurrence of the last `executed` line: gem5's exit event?
  std::vector<std::pair<int32_t, int64_t>> exit_events;  // (name pool id, tick)
  std::vector<PtrObjs> by_ptr;  // pool -> its objects, in insertion order
  std::vector<std::vector<std::pair<int32_t, int64_t>>> more_objs;
  std::vector<char> limit_ptr;

  std::vector<int64_t> inst_obj, inst_name, inst_when, inst_state, inst_occ, inst_level, inserter;
  std::vector<double> ins_pos;
  std::vector<int64_t> occ_inst, occ_tick;
  std::vector<double> served_pos, last_pos;
  std::vector<char> force_up;
  std::vector<std::pair<int64_t, int64_t>> moved_due;  // (occurrence, instance): it moved one pending at its tick
  std::vector<int64_t> op_occ, op_kind, op_inst, op_mode, op_value, op_delay;
  std::vector<int64_t> live;  // object -> its latest instance
  std::vector<HeapE> heap;

  double pos = 0.0, tick_start = 0.0;
  int64_t cur = -1, current = -1;
  int32_t cur_parent_ptr = -1, cur_parent_name = -1;  // -1: None
  bool self_reinserted = false;
  bool has_cutoff = false;
  int64_t cutoff = 0;
  int64_t end_tick = 0, first_tick = 0;

  std::array<int64_t, N_RULES> rules{};
  std::vector<int> rule_order;  // Counter keys in the order first incremented

  void rule(Rule r) {
    if (rules[r] == 0) rule_order.push_back(r);
    ++rules[r];
  }

  int32_t intern(sv s) {
    bool added;
    int32_t id = pool.intern(s, added);
    if (added) {
      name_of.push_back(-1);
      by_ptr.emplace_back();
      limit_ptr.push_back(0);
    }
    return id;
  }

  int64_t name_id(int32_t p) {
    if (name_of[p] < 0) {
      name_of[p] = int32_t(names.size());
      names.push_back(p);
    }
    return name_of[p];
  }

  // Calls f(name id, object) for each object at `ptr`, in insertion order.
  template <class F>
  void each_obj(int32_t ptr, F&& f) {
    const PtrObjs& po = by_ptr[ptr];
    if (po.nid0 < 0) return;
    f(po.nid0, po.obj0);
    if (po.more >= 0)
      for (size_t i = 0; i < more_objs[po.more].size(); ++i) {
        auto [nid, obj] = more_objs[po.more][i];
        f(nid, obj);
      }
  }

  int64_t obj_id(int32_t ptr, int64_t nid) {
    PtrObjs& po = by_ptr[ptr];
    if (po.nid0 == nid) return po.obj0;
    if (po.more >= 0)
      for (auto& [n, obj] : more_objs[po.more])
        if (n == nid) return obj;
    int64_t found = n_objs++;
    if (po.nid0 < 0) {
      po.nid0 = int32_t(nid);
      po.obj0 = found;
    } else {
      if (po.more < 0) {
        po.more = int32_t(more_objs.size());
        more_objs.emplace_back();
      }
      more_objs[po.more].emplace_back(int32_t(nid), found);
    }
    live.push_back(-1);
    obj_ptr.push_back(ptr);
    return found;
  }

  int64_t new_instance(int64_t obj, int64_t name, int64_t when) {
    int64_t inst = int64_t(inst_obj.size());
    inst_obj.push_back(obj);
    inst_name.push_back(name);
    inst_when.push_back(when);
    inst_state.push_back(PENDING);
    inst_occ.push_back(-1);
    inst_level.push_back(LAST_LEVEL);
    ins_pos.push_back(pos);
    inserter.push_back(current);
    live[obj] = inst;
    heap.push_back({when, -pos, inst});
    std::push_heap(heap.begin(), heap.end(), HeapGreater{});
    return inst;
  }

  int64_t run_instance(int64_t inst, int64_t tick, double served) {
    int64_t occ = int64_t(occ_inst.size());
    occ_inst.push_back(inst);
    occ_tick.push_back(tick);
    inst_state[inst] = RAN;
    inst_occ[inst] = occ;
    served_pos.push_back(served);
    last_pos.push_back(served);
    force_up.push_back(0);
    if (limit_events != 0 && !has_cutoff && occ >= limit_events) {
      has_cutoff = true;
      cutoff = std::max(tick, cur);
    }
    return occ;
  }

  void add_op(int64_t kind, int64_t inst, int64_t tick, int64_t when, bool parented) {
    int64_t occ = current, ctx, mode, value;
    if (occ < 0) {
      ctx = -1, mode = ABSOLUTE, value = when;
    } else if (parented && occ_tick[occ] == tick) {
      ctx = occ, mode = CLOCK, value = when - tick;
    } else {
      ctx = occ, mode = ABSOLUTE, value = when;
      rule(R_NO_PARENT);
    }
    if (kind != SCHEDULE && ctx >= 0 && inst_when[inst] == occ_tick[ctx] && inst_state[inst] == PENDING) {
      force_up[ctx] = 1;
      moved_due.emplace_back(ctx, inst);
    }
    if (ctx >= 0) last_pos[ctx] = pos;
    op_occ.push_back(ctx);
    op_kind.push_back(kind);
    op_inst.push_back(inst);
    op_mode.push_back(kind != DESCHEDULE ? mode : ABSOLUTE);
    op_value.push_back(kind != DESCHEDULE ? value : 0);
    op_delay.push_back(kind != DESCHEDULE ? when - tick : 0);
  }

  int64_t pending(int64_t obj) {
    int64_t inst = live[obj];
    return inst >= 0 && inst_state[inst] == PENDING ? inst : -1;
  }

  void advance(int64_t tick, const Line& line) {
    if (tick < cur)
      throw TraceErr{tpath + ":" + std::to_string(line.lineno) + ": curTick goes back from " + std::to_string(cur) +
                     " to " + std::to_string(tick) +
                     ": lines of several event queues interleave (a multi-queue run) and cannot be attributed; "
                     "tickpar imports one queue's trace"};
    if (tick > cur) {
      flush(tick);
      cur = tick;
      tick_start = pos;
      cur_parent_ptr = cur_parent_name = -1;
      self_reinserted = false;
    }
  }

  void flush(int64_t tick) {
    while (!heap.empty() && heap.front().when < tick) {
      HeapE e = heap.front();
      std::pop_heap(heap.begin(), heap.end(), HeapGreater{});
      heap.pop_back();
      int64_t inst = e.inst;
      if (inst_state[inst] != PENDING || inst_when[inst] != e.when || ins_pos[inst] != -e.negpos) continue;
      run_instance(inst, e.when, silent_served(inst, e.when));
      rule(R_RAN_SILENTLY);
    }
  }

  double silent_served(int64_t inst, int64_t when) {
    if (when != cur) return pos;
    double ins = ins_pos[inst];
    if (ins < tick_start) return tick_start - 0.5;
    int64_t by = inserter[inst];
    return (by >= 0 ? last_pos[by] : ins) + 0.5;
  }

  void start(int32_t ptr, int32_t name, int64_t tick) {
    int64_t nid = name_id(name);
    int64_t obj = obj_id(ptr, nid);
    int64_t inst = pending(obj);
    if (inst < 0 || inst_when[inst] != tick) {
      rule(R_UNTRACED);
      int64_t saved = current;
      current = -1;
      inst = new_instance(obj, nid, tick);
      add_op(SCHEDULE, inst, tick, tick, false);
      current = saved;
    }
    current = run_instance(inst, tick, pos);
    rule(R_PARENT);
  }

  void insert(const Line& line, int kind, bool parented) {
    int32_t ptr = line.ptr;
    int64_t tick = line.tick, when = line.when;
    if (line.when_max || limit_ptr[ptr]) {
      if (!limit_ptr[ptr]) {
        limit_ptr[ptr] = 1;
        each_obj(ptr, [&](int32_t, int64_t obj) {
          int64_t inst = pending(obj);
          if (inst >= 0) inst_state[inst] = DROPPED;
        });
      }
      rule(R_LIMIT_EVENT);
      return;
    }
    int64_t nid = name_id(line.name);
    int64_t obj = obj_id(ptr, nid);
    reuse(ptr, nid, tick, parented);
    int64_t inst = pending(obj);
    if (kind == A_DESCHEDULED) {
      if (inst >= 0) {
        add_op(DESCHEDULE, inst, tick, inst_when[inst], parented);
        inst_state[inst] = CANCELLED;
        rule(R_CANCELLED);
      }
      return;
    }
    if (inst >= 0 && inst_when[inst] == tick && current >= 0 && kind == A_INSERTED) {
      rule(R_RAN_SILENTLY);
      run_instance(inst, tick, served_pos[current] - 0.5);
      inst = -1;
    }
    if (inst >= 0) {
      add_op(RESCHEDULE, inst, tick, when, parented);
      inst_when[inst] = when;
      ins_pos[inst] = pos;
      inserter[inst] = current;
      heap.push_back({when, -pos, inst});
      std::push_heap(heap.begin(), heap.end(), HeapGreater{});
      rule(R_RESCHEDULE);
    } else {
      inst = new_instance(obj, nid, when);
      add_op(SCHEDULE, inst, tick, when, parented);
    }
    if (parented && current >= 0 && occ_inst[current] >= 0 && when == tick) {
      int64_t running = occ_inst[current];
      if (inst_obj[running] == obj) self_reinserted = true;
    }
  }

  void reuse(int32_t ptr, int64_t nid, int64_t tick, bool parented) {
    each_obj(ptr, [&](int32_t other, int64_t obj) {
      if (other == nid) return;
      int64_t inst = pending(obj);
      if (inst < 0) return;
      rule(R_POINTER_REUSE);
      if (inst_when[inst] > tick || current < 0) {
        add_op(DESCHEDULE, inst, tick, inst_when[inst], parented);
        inst_state[inst] = CANCELLED;
        rule(R_CANCELLED);
      } else {
        rule(R_RAN_SILENTLY);
        double served = current >= 0 ? served_pos[current] - 0.5 : pos - 0.5;
        run_instance(inst, tick, served);
      }
    });
  }

  void line(const Line& l) {
    pos += 1.0;
    if (!l.when_max && l.when < l.tick && l.action != A_DESCHEDULED) {
      sv name = pool.str(l.name);
      throw TraceErr{tpath + ":" + std::to_string(l.lineno) + ": " + std::string(name) + " " + ACTION_NAMES[l.action] +
                     " @ " + std::to_string(l.when) + " at tick " + std::to_string(l.tick) +
                     ": a schedule into the past (gem5 asserts when >= curTick)"};
    }
    advance(l.tick, l);
    if (l.action == A_INSERTED) {
      bool parented = l.parent >= 0;
      if (parented) {
        if (l.parent != cur_parent_ptr || l.parent_name != cur_parent_name || self_reinserted) {
          self_reinserted = false;
          cur_parent_ptr = l.parent;
          cur_parent_name = l.parent_name;
          start(l.parent, l.parent_name, l.tick);
        }
      }
      insert(l, A_INSERTED, parented);
    } else if (l.action == A_EXECUTED) {
      start(l.ptr, l.name, l.tick);
      last_executed = current;
    } else {
      insert(l, l.action, true);
    }
  }

  void finish() {
    int64_t last = cur;
    if (has_cutoff) last = std::min(last, cutoff);
    flush(last);
    bool exited = exit_event(last);
    bool unseen = false;
    for (const HeapE& e : heap)
      if (e.when == last && inst_state[e.inst] == PENDING && ins_pos[e.inst] == -e.negpos) {
        unseen = true;
        break;
      }
    end_tick = (unseen || has_cutoff) && !exited ? last - 1 : last;
    if (end_tick != last) rule(R_LAST_TICK);
    first_tick = occ_tick.empty() ? 0 : *std::min_element(occ_tick.begin(), occ_tick.end());
    std::vector<int64_t> order;
    order.reserve(occ_tick.size());
    for (int64_t k = 0; k < int64_t(occ_tick.size()); ++k)
      if (occ_tick[k] <= end_tick && inst_state[occ_inst[k]] != DROPPED) order.push_back(k);
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      if (occ_tick[a] != occ_tick[b]) return occ_tick[a] < occ_tick[b];
      if (served_pos[a] != served_pos[b]) return served_pos[a] < served_pos[b];
      double ia = -ins_pos[occ_inst[a]], ib = -ins_pos[occ_inst[b]];
      if (ia != ib) return ia < ib;
      return a < b;  // sorted() is stable
    });
    renumber(order);
    assign_levels();
  }

  // importer.py _Importer.exit_event: leave out gem5's exit event, and what it left pending at its tick
  bool exit_event(int64_t last) {
    int64_t occ = last_executed;
    if (has_cutoff || occ < 0 || occ_tick[occ] != last) return false;
    int64_t inst = occ_inst[occ];
    int32_t p = names[inst_name[inst]];
    if (!is_exit_event_name(pool.str(p))) return false;
    inst_state[inst] = DROPPED;
    exit_events.emplace_back(p, last);
    rule(R_EXIT_EVENT);
    for (const HeapE& e : heap)
      if (e.when == last && inst_state[e.inst] == PENDING && ins_pos[e.inst] == -e.negpos) {
        inst_state[e.inst] = DROPPED;
        rule(R_EXIT_UNREACHED);
      }
    return true;
  }

  template <class T>
  static void pick(std::vector<T>& col, const std::vector<int64_t>& idx) {
    std::vector<T> out;
    out.reserve(idx.size());
    for (int64_t i : idx) out.push_back(col[i]);
    col.swap(out);
  }

  void renumber(const std::vector<int64_t>& order) {
    std::vector<int64_t> new_id(occ_inst.size(), -1);
    for (size_t n = 0; n < order.size(); ++n) new_id[order[n]] = int64_t(n);
    pick(occ_inst, order);
    pick(occ_tick, order);
    pick(served_pos, order);
    pick(force_up, order);
    {
      std::vector<std::pair<int64_t, int64_t>> kept;
      for (auto [k, inst] : moved_due)
        if (new_id[size_t(k)] >= 0) kept.emplace_back(new_id[size_t(k)], inst);
      moved_due.swap(kept);
    }
    for (size_t inst = 0; inst < inst_occ.size(); ++inst) {
      int64_t occ = inst_occ[inst];
      if (occ >= 0) {
        inst_occ[inst] = new_id[occ];
        if (inst_occ[inst] < 0 && inst_state[inst] == RAN) inst_state[inst] = PENDING;
      }
    }
    std::vector<int64_t> keep;
    keep.reserve(op_occ.size());
    for (size_t i = 0; i < op_occ.size(); ++i)
      if (op_occ[i] < 0 || new_id[op_occ[i]] >= 0) keep.push_back(int64_t(i));
    pick(op_kind, keep);
    pick(op_inst, keep);
    pick(op_mode, keep);
    pick(op_value, keep);
    pick(op_delay, keep);
    pick(op_occ, keep);
    for (int64_t& k : op_occ)
      if (k >= 0) k = new_id[k];
    bool any_dropped = false;
    for (int64_t s : inst_state)
      if (s == DROPPED) any_dropped = true;
    if (any_dropped) {
      keep.clear();
      for (size_t i = 0; i < op_inst.size(); ++i)
        if (inst_state[op_inst[i]] != DROPPED) keep.push_back(int64_t(i));
      pick(op_occ, keep);
      pick(op_kind, keep);
      pick(op_inst, keep);
      pick(op_mode, keep);
      pick(op_value, keep);
      pick(op_delay, keep);
    }
  }

  void assign_levels() {
    const std::vector<double>& ins = ins_pos;
    const std::vector<double>& served = served_pos;
    // per occurrence, the objects its operations target (CSR, in operation order)
    size_t nocc = occ_inst.size();
    std::vector<int64_t> tgt_off(nocc + 1, 0), tgt;
    for (int64_t occ : op_occ)
      if (occ >= 0) ++tgt_off[size_t(occ) + 1];
    for (size_t k = 0; k < nocc; ++k) tgt_off[k + 1] += tgt_off[k];
    tgt.resize(size_t(tgt_off[nocc]));
    {
      std::vector<int64_t> fill(tgt_off.begin(), tgt_off.end() - 1);
      for (size_t i = 0; i < op_occ.size(); ++i)
        if (op_occ[i] >= 0) tgt[size_t(fill[size_t(op_occ[i])]++)] = inst_obj[size_t(op_inst[i])];
    }
    // per occurrence, the instances it moved away from its own tick; per instance, the lowest level it may take
    std::vector<std::vector<int64_t>> moved(nocc);
    for (auto [k, inst] : moved_due) moved[size_t(k)].push_back(inst);
    std::vector<int64_t> above(inst_obj.size(), FIRST_LEVEL);
    // objects the level's occurrences ran or operated on: a stamp per object (the level's number)
    std::vector<int64_t> touched(size_t(n_objs), -1);
    int64_t stamp = 0;
    bool have_tick = false;
    int64_t tick = 0, level = FIRST_LEVEL;
    std::vector<int64_t> group;
    bool up = false;
    for (size_t k = 0; k < nocc; ++k) {
      int64_t inst = occ_inst[k];
      if (!have_tick || occ_tick[k] != tick) {
        have_tick = true;
        tick = occ_tick[k];
        level = FIRST_LEVEL;
        group.clear();
        ++stamp;
        up = false;
      }
      double mine = ins[inst];
      int64_t floor = above[size_t(inst)];
      bool bump = up || floor > level;
      if (!bump)
        for (int64_t j : group)
          if (ins[j] < mine && mine < served[inst_occ[j]]) {
            bump = true;
            break;
          }
      if (!bump)
        for (int64_t t = tgt_off[k]; t < tgt_off[k + 1]; ++t)
          if (touched[size_t(tgt[size_t(t)])] == stamp) {
            bump = true;
            break;
          }
      if (bump) {
        int64_t next = std::max(level + 1, floor);
        if (next <= LAST_LEVEL - 1)
          level = next;
        else
          rule(R_ORDER_LEVELS_EXHAUSTED);
        group.clear();
        ++stamp;
        rule(R_ORDER);
      }
      inst_level[inst] = level;
      group.push_back(inst);
      touched[size_t(inst_obj[inst])] = stamp;
      for (int64_t t = tgt_off[k]; t < tgt_off[k + 1]; ++t) touched[size_t(tgt[size_t(t)])] = stamp;
      up = force_up[k] != 0;
      for (int64_t other : moved[k]) above[size_t(other)] = std::max(above[size_t(other)], level + 1);
    }
  }
};

enum Fmt { F_AUTO, F_EVENT, F_INSERT };
inline const char* const FMT_NAMES[3] = {"auto", "event", "insert-log"};

struct Reader {
  std::string shown;  // str(Path(path)): the reader's errors name it
  int fmt = F_AUTO;
  int64_t lines = 0, events = 0, skipped_banner = 0, skipped_other = 0;
  std::vector<std::string> warnings;

  TraceErr bad(int64_t lineno, const std::string& what) const {
    return TraceErr{shown + ":" + std::to_string(lineno) + ": " + what};
  }
};

inline int detect_format(sv line, std::vector<sv>& fields) {
  split_commas(strip(line), fields);
  size_t n = fields.size();
  if ((n == 4 || n == 6) && is_ptr(fields[0]) && all_digits(fields[n - 1]) && all_digits(fields[n - 2]))
    return F_INSERT;
  Stock m;
  if (match_stock(line, m)) return F_EVENT;
  return F_AUTO;
}

inline std::string fields_what(size_t n) {
  return std::to_string(n) + " comma-separated fields: the insert log has 4 or 6";
}

// _insert_line: "" on success, else its error text
inline std::string insert_line(const std::vector<sv>& f, Line& out, Importer& imp) {
  sv parent, parent_name, ptr, name, tick, when;
  bool has_parent = f.size() == 6;
  if (has_parent) {
    parent = f[0], parent_name = f[1], ptr = f[2], name = f[3], tick = f[4], when = f[5];
  } else if (f.size() == 4) {
    ptr = f[0], name = f[1], tick = f[2], when = f[3];
  } else {
    return fields_what(f.size());
  }
  if (!(all_digits(tick) && all_digits(when)))
    return "curTick " + quoted(tick) + " and when " + quoted(when) + " must be non-negative integers";
  if (!is_ptr(ptr) || (has_parent && !is_ptr(parent)))
    return "event pointer " + quoted(has_parent ? parent : ptr) + ": expected 0x<hex>";
  out.tick = to_int(tick);
  out.when = to_int(when, &out.when_max);
  out.action = A_INSERTED;
  out.ptr = imp.intern(ptr);
  out.name = imp.intern(name);
  if (has_parent) {
    out.parent = imp.intern(parent);
    out.parent_name = imp.intern(parent_name);
  } else {
    out.parent = out.parent_name = -1;
  }
  return "";
}

inline void run_import(const std::string& path, int req_fmt, Reader& rd, Importer& imp) {
  Source src(path);
  LineReader lr(src);
  rd.fmt = req_fmt;
  bool pending_bad = false;
  int64_t pending_line = 0;
  std::string pending_what;
  std::vector<sv> fields;
  sv line;
  bool ends_nl;
  int64_t lineno = 0;
  Line out;
  static const std::string expected = "'<tick>: <name>: <description> <instance> <action> @ <when>'";
  while (lr.next(line, ends_nl)) {
    ++lineno;
    rd.lines = lineno;
    if (pending_bad) throw rd.bad(pending_line, pending_what);
    for (unsigned char c : line)
      if (c >= 0x80) throw Fallback{"a non-ASCII byte"};
    if (strip(line).empty()) continue;
    if (rd.fmt == F_AUTO) {
      int found = detect_format(line, fields);
      if (found == F_AUTO) {
        if (match_no_tick(line)) throw rd.bad(lineno, "an Event line without its tick: rerun gem5 without FmtTicksOff");
        ++rd.skipped_banner;
        continue;
      }
      rd.fmt = found;
    }
    out.lineno = lineno;
    if (rd.fmt == F_INSERT) {
      split_commas(line, fields);
      if (fields.size() != 4 && fields.size() != 6) {
        if (rd.events == 0) {
          ++rd.skipped_banner;
          continue;
        }
        std::string what = fields_what(fields.size());
        if (!ends_nl) {
          pending_bad = true, pending_line = lineno, pending_what = what;
          continue;
        }
        throw rd.bad(lineno, what);
      }
      std::string err = insert_line(fields, out, imp);
      if (!err.empty()) {
        if (!ends_nl) {
          pending_bad = true, pending_line = lineno, pending_what = "cut";
          continue;
        }
        throw rd.bad(lineno, err);
      }
    } else {
      Stock m;
      if (!match_stock(line, m)) {
        if (match_no_tick(line)) throw rd.bad(lineno, "an Event line without its tick: rerun gem5 without FmtTicksOff");
        if (!ends_nl && rd.events) {
          pending_bad = true, pending_line = lineno, pending_what = "cut";
          continue;
        }
        if (rd.events == 0) {
          ++rd.skipped_banner;
          continue;
        }
        if (match_other_flag(line)) {
          ++rd.skipped_other;
          continue;
        }
        throw rd.bad(lineno, "not an Event line: expected " + expected + ", got " + quoted(line.substr(0, 80)));
      }
      out.tick = to_int(m.tick);
      out.when = to_int(m.when, &out.when_max);
      out.action = A_SCHEDULED + m.action;
      out.ptr = imp.intern(m.inst);
      out.name = imp.intern(m.name);
      out.parent = out.parent_name = -1;
    }
    ++rd.events;
    // import_trace: a line past the --events cutoff ends the read (the reader stops where it is)
    if (imp.has_cutoff && out.tick > imp.cutoff) return;
    imp.line(out);
  }
  if (pending_bad) rd.warnings.push_back(rd.shown + ":" + std::to_string(pending_line) + ": the last line is cut mid-way: dropped");
  if (rd.events == 0)
    throw TraceErr{rd.shown + ": no event lines in " + std::to_string(rd.lines) +
                   " line(s): expected the stock Event trace or the insert log (format=" + FMT_NAMES[req_fmt] + ")"};
}

}  // namespace tp::gem5
