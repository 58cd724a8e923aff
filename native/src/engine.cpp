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

namespace tp {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t INF = std::numeric_limits<int64_t>::max();

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spin a while (the other side is usually on another core, a few hundred ns away), then yield the core:
// on a machine with fewer free cores than threads a pure spin would wait for a whole time slice.
struct Waiter {
  int spins = 0;
  void pause() {
    if (++spins < 4000) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
};

// Wait until `a` no longer holds `old`; returns what it holds then.  Spin first (the other side is usually
// on another core, a few hundred ns away), then yield the core a few times, then sleep in the kernel until
// a notify (C++20 atomic wait: a futex).  Without the last step, on a machine with fewer free cores than
// threads (more workers than cores) the waiting threads spin and yield on the cores that the late thread
// needs: measured here (README), conservative with 4 LPs on 2 cores took 5.1-5.5 ms a phold replay, 3.3-3.5
// with the sleep.  The writer of `a` calls notify_all after every change, which costs an atomic load when
// nobody sleeps (libstdc++ counts the sleepers).  Tick-barrier's pool does not sleep (TB::helper).
constexpr int WAIT_SPINS = 4000;
constexpr int WAIT_YIELDS = 64;

template <class T>
inline T wait_while_equal(const std::atomic<T>& a, T old) {
  T v;
  for (int i = 0; i < WAIT_SPINS; ++i) {
    if ((v = a.load(std::memory_order_acquire)) != old) return v;
    cpu_relax();
  }
  for (int i = 0; i < WAIT_YIELDS; ++i) {
    if ((v = a.load(std::memory_order_acquire)) != old) return v;
    std::this_thread::yield();
  }
  while ((v = a.load(std::memory_order_acquire)) == old) a.wait(old, std::memory_order_acquire);
  return v;
}

// A sense-free generation barrier for n threads (spin, then yield, then sleep: wait_while_equal).
class SpinBarrier {
 public:
  explicit SpinBarrier(int n) : n_(n) {}
  void wait() {
    uint64_t g = gen_.load(std::memory_order_acquire);
    if (count_.fetch_add(1, std::memory_order_acq_rel) == n_ - 1) {
      count_.store(0, std::memory_order_relaxed);
      gen_.store(g + 1, std::memory_order_release);
      gen_.notify_all();
      return;
    }
    wait_while_equal(gen_, g);
  }

 private:
  int n_;
  alignas(64) std::atomic<int> count_{0};
  alignas(64) std::atomic<uint64_t> gen_{0};
};

// Threads for one replay.  Creating a thread costs tens of microseconds, a sizeable share of a
// millisecond replay, and it is set-up, not event processing: as in the Python engine's LPs (``loop_s``
// from READY), every thread checks in at a start barrier before the clock starts, and the loop ends
// when the last thread leaves it.  ``spawn_s`` reports the creation cost on its own.
//
// Each thread is pinned to its own core of the process's CPU set while the replay runs (worker w to the
// w-th allowed CPU) when there are enough of them.  Without it, a replay that follows an idle spell (a
// pyperf worker between two values) starts its new thread on its parent's core: the idle core is halted,
// the load balancer moves the thread only after a scheduler tick (milliseconds, longer than the replay),
// and the two threads share one core, each waiting at every barrier for the other's time slice
// (measured here: 1.4 ms against 0.5 ms for one phold replay after a 50 ms sleep).  The caller's own mask
// is restored after the run.
class Crew {
 public:
  explicit Crew(int n) : n_(n), gate_(n), ends_(size_t(n)) {
#ifdef __linux__
    cpu_set_t mask;
    CPU_ZERO(&saved_);
    if (n > 1 && pthread_getaffinity_np(pthread_self(), sizeof(saved_), &saved_) == 0) {
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &saved_)) cpus_.push_back(c);
      if (int(cpus_.size()) >= n) {
        pinned_ = true;
        CPU_ZERO(&mask);
        CPU_SET(cpus_[0], &mask);
        pthread_setaffinity_np(pthread_self(), sizeof(mask), &mask);
      } else {
        cpus_.clear();  // fewer cores than threads: the scheduler shares them out
      }
    }
#endif
  }
  ~Crew() { restore(); }
  // Start n-1 threads running body(w) for w = 1..n-1 and return when all of them have reached the gate.
  template <class F>
  void start(F body) {
    auto s0 = Clock::now();
    for (int w = 1; w < n_; ++w)
      threads_.emplace_back([this, body, w] {
        pin(w);
        gate_.wait();
        body(w);
        ends_[size_t(w)] = Clock::now();
      });
    gate_.wait();
    t0_ = Clock::now();
    spawn_s_ = std::chrono::duration<double>(t0_ - s0).count();
  }
  // The calling thread (worker 0) is done with the loop.
  void finish_self() { ends_[0] = Clock::now(); }
  // Join the others; the loop's length: from the gate to the last thread's end.
  double join() {
    for (auto& t : threads_) t.join();
    threads_.clear();
    restore();
    Clock::time_point last = ends_[0];
    for (auto& e : ends_) last = std::max(last, e);
    return std::chrono::duration<double>(last - t0_).count();
  }
  double spawn_s() const { return spawn_s_; }
  bool pinned() const { return pinned_; }

 private:
  void pin(int w) {
#ifdef __linux__
    if (!pinned_) return;
    cpu_set_t mask;
    CPU_ZERO(&mask);
    CPU_SET(cpus_[size_t(w)], &mask);
    pthread_setaffinity_np(pthread_self(), sizeof(mask), &mask);  // migrates this thread before it returns
#else
    (void)w;
#endif
  }
  void restore() {
#ifdef __linux__
    if (pinned_ && !restored_) pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_);
#endif
    restored_ = true;
  }
  int n_;
  SpinBarrier gate_;
  std::vector<Clock::time_point> ends_;
  std::vector<std::thread> threads_;
  std::vector<int> cpus_;
  bool pinned_ = false, restored_ = false;
#ifdef __linux__
  cpu_set_t saved_;
#endif
  Clock::time_point t0_;
  double spawn_s_ = 0;
};

struct Entry {
  int64_t key;
  int64_t tie;
  uint64_t serial;
  int32_t obj;
};

inline bool before(const Entry& a, const Entry& b) {
  return (a.key < b.key) | ((a.key == b.key) & (a.tie < b.tie));  // no short-circuit: setcc, not branches
}

// A 4-ary min-heap of entries by (key, tie).
class Heap {
 public:
  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }
  const Entry& top() const { return v_[0]; }
  void push(const Entry& e) {
    size_t i = v_.size();
    v_.push_back(e);
    while (i > 0) {
      size_t p = (i - 1) >> 2;
      if (!before(e, v_[p])) break;
      v_[i] = v_[p];
      i = p;
    }
    v_[i] = e;
  }
  void pop() {
    // Floyd's bottom-up pop: walk the hole down to a leaf along the smallest children, then put the
    // last entry there and sift it up (it usually stays): no compare against it on the way down.
    Entry last = v_.back();
    v_.pop_back();
    size_t n = v_.size();
    if (n == 0) return;
    size_t i = 0;
    while (true) {
      size_t c = 4 * i + 1;
      if (c >= n) break;
      size_t best = c;
      if (c + 4 <= n) {  // a full node: a branch-free tournament
        size_t b01 = before(v_[c + 1], v_[c]) ? c + 1 : c;
        size_t b23 = before(v_[c + 3], v_[c + 2]) ? c + 3 : c + 2;
        best = before(v_[b23], v_[b01]) ? b23 : b01;
      } else {
        for (size_t k = c + 1; k < n; ++k)
          if (before(v_[k], v_[best])) best = k;
      }
      v_[i] = v_[best];
      i = best;
    }
    while (i > 0) {
      size_t p = (i - 1) >> 2;
      if (!before(last, v_[p])) break;
      v_[i] = v_[p];
      i = p;
    }
    v_[i] = last;
  }
  void reserve(size_t n) { v_.reserve(n); }

 private:
  std::vector<Entry> v_;
};

// One event object: its replay state and, on the same cache line, what the DAG says about it.
struct alignas(64) ObjState {  // a line each: two threads write neighbouring events
  uint64_t stamp = 0;  // 0: not scheduled; else the serial of its live entry (or a pending op id)
  int64_t when = 0;
  int64_t occ_begin = 0;
  int32_t comp = 0;
  int32_t name = 0;
  uint32_t occ_next = 0;
  uint32_t nocc = 0;
  int16_t prio = 0;
  uint8_t flags = 0;
  uint8_t pad = 0;
  uint32_t ndups = 0;  // entries left live by double schedules (checks=false)
};

struct Queue {
  Heap heap;
  uint64_t serial = 0;
  int64_t cur_tick = 0;
};

// Everything one replay shares between its threads.
struct Run {
  const Dag& d;
  const Options& o;
  std::vector<ObjState> objs;
  std::unique_ptr<CompOut[]> comps;
  int32_t nnames = 0;
  double rate = 0;  // spin iterations per microsecond
  int64_t end_key = INF;
  std::atomic<bool> stop{false};

  std::mutex dup_mu;
  std::unordered_map<int32_t, std::vector<uint64_t>> dups;

  std::mutex rec_mu;
  Failure failure;
  std::vector<Violation> violations;
  int64_t violations_total = 0;
  std::vector<RaceRec> races;
  int64_t races_total = 0;
  int64_t executed = 0;  // events processed (without direct calls)

  Run(const Dag& dag, const Options& opt) : d(dag), o(opt), objs(size_t(dag.nobj())), comps(new CompOut[dag.ncomp]) {
    for (int32_t i = 0; i < dag.nobj(); ++i) {
      ObjState& s = objs[size_t(i)];
      s.comp = dag.obj_comp[size_t(i)];
      s.name = dag.obj_name[size_t(i)];
      s.prio = dag.obj_prio[size_t(i)];
      s.flags = dag.obj_flags[size_t(i)];
      s.occ_begin = dag.occ_off[size_t(i)];
      s.nocc = uint32_t(dag.occ_off[size_t(i) + 1] - dag.occ_off[size_t(i)]);
    }
    for (int32_t n : d.obj_name) nnames = std::max(nnames, n + 1);
    for (int32_t n : d.touch_name) nnames = std::max(nnames, n + 1);
    rate = opt.spin_per_us > 0 ? opt.spin_per_us : spin_rate();
    if (d.end_tick != NO_END) end_key = pack_key(d.end_tick, SIM_EXIT_PRI);
  }

  // -- recording -----------------------------------------------------------------------
  inline void record(int32_t comp, int64_t when, int prio, int32_t name) {
    CompOut& c = comps[comp];
    c.count++;
    c.digest = fold(c.digest, when, prio, name);
    if (prio != CALL_PRIORITY) c.last_when = when;
    if (o.trace) c.trace.push_back({when, prio, name});
  }
  inline void record_locked(int32_t comp, int64_t when, int prio, int32_t name) {
    CompOut& c = comps[comp];
    while (c.lock.test_and_set(std::memory_order_acquire)) cpu_relax();
    record(comp, when, prio, name);
    c.lock.clear(std::memory_order_release);
  }

  void set_failure(const Failure& f) {
    std::lock_guard<std::mutex> g(rec_mu);
    if (!failure.set) {
      failure = f;
      failure.set = true;
    }
    stop.store(true, std::memory_order_release);
  }
  // A failed gem5 assertion: raise (checks on: stop the run) or record a violation (checks off).
  bool fail_now(const char* op, int32_t obj, int64_t when, int64_t now, const char* reason) {
    if (o.checks) {
      Failure f;
      f.kind = "causality";
      f.op = op;
      f.obj = obj;
      f.when = when;
      f.cur_tick = now;
      f.reason = reason;
      set_failure(f);
      return false;
    }
    add_violation(Violation{op, obj, when, now, reason});
    return true;
  }
  void add_violation(const Violation& v) {
    std::lock_guard<std::mutex> g(rec_mu);
    violations_total++;
    if (violations.size() < 1000) violations.push_back(v);
  }
  void race(int32_t comp, int32_t obj, int64_t when, std::string detail) {
    std::lock_guard<std::mutex> g(rec_mu);
    races_total++;
    if (races.size() < 100) races.push_back(RaceRec{comp, obj, when, std::move(detail)});
  }
  void crash_not_found(int32_t obj, int64_t when, int64_t now) {
    Failure f;
    f.kind = "crash";
    f.op = "deschedule";
    f.obj = obj;
    f.when = when;
    f.cur_tick = now;
    f.reason = "event not found!";
    f.message = "event not found!";
    set_failure(f);
  }
  void crash(const std::string& message) {
    Failure f;
    f.kind = "crash";
    f.message = message;
    set_failure(f);
  }

  // -- double schedules (checks=false) ------------------------------------------------------------
  void add_dup(int32_t obj, uint64_t stamp) {
    std::lock_guard<std::mutex> g(dup_mu);
    dups[obj].push_back(stamp);
    objs[obj].ndups++;
  }
  bool take_dup(int32_t obj, uint64_t stamp) {
    std::lock_guard<std::mutex> g(dup_mu);
    auto it = dups.find(obj);
    if (it == dups.end()) return false;
    auto& v = it->second;
    auto f = std::find(v.begin(), v.end(), stamp);
    if (f == v.end()) return false;
    v.erase(f);
    objs[obj].ndups--;
    return true;
  }
  bool has_dup(int32_t obj, uint64_t stamp) {
    std::lock_guard<std::mutex> g(dup_mu);
    auto it = dups.find(obj);
    return it != dups.end() && std::find(it->second.begin(), it->second.end(), stamp) != it->second.end();
  }
  bool pop_any_dup(int32_t obj) {
    std::lock_guard<std::mutex> g(dup_mu);
    auto it = dups.find(obj);
    if (it == dups.end() || it->second.empty()) return false;
    it->second.pop_back();
    objs[obj].ndups--;
    return true;
  }
  bool replace_dup(int32_t obj, uint64_t from, uint64_t to) {
    std::lock_guard<std::mutex> g(dup_mu);
    auto it = dups.find(obj);
    if (it == dups.end()) return false;
    for (auto& s : it->second)
      if (s == from) {
        s = to;
        return true;
      }
    return false;
  }

  // -- the queue ---------------------------------------------------------------------------------
  inline void insert(Queue& q, int32_t obj, int64_t when, int64_t source) {
    uint64_t serial = ++q.serial;
    int64_t tie;
    if (o.canonical)
      tie = source == NO_SOURCE ? UNSOURCED_BASE + int64_t(serial) : source;
    else
      tie = -int64_t(serial);
    ObjState& s = objs[obj];
    s.stamp = serial;
    s.when = when;
    q.heap.push(Entry{pack_key(when, s.prio), tie, serial, obj});
  }
  inline bool live(const Entry& e) {
    const ObjState& s = objs[e.obj];
    return s.stamp == e.serial || (s.ndups && has_dup(e.obj, e.serial));
  }
  // The live head (stale entries on top are dropped); false when nothing is queued.
  inline bool live_head(Queue& q, Entry& out) {
    while (!q.heap.empty()) {
      const Entry& e = q.heap.top();
      if (live(e)) {
        out = e;
        return true;
      }
      q.heap.pop();
    }
    return false;
  }
  // Take a live entry out of the object (it is being served): clears Scheduled, or forgets the duplicate.
  inline void unschedule(const Entry& e) {
    ObjState& s = objs[e.obj];
    if (s.stamp == e.serial)
      s.stamp = 0;
    else
      take_dup(e.obj, e.serial);
  }

  // gem5's schedule / reschedule / deschedule on a queue, now; false: the run stops.
  bool apply_now(Queue& q, const Op& op, int64_t when, int64_t now) {
    int32_t t = op.target;
    ObjState& s = objs[t];
    switch (op.kind) {
      case SCHEDULE:
        if (when < now && !fail_now("schedule", t, when, now, "past")) return false;
        if (s.stamp != 0) {
          if (!fail_now("schedule", t, when, now, "already-scheduled")) return false;
          add_dup(t, s.stamp);
        }
        insert(q, t, when, op.source);
        return true;
      case RESCHEDULE:
      case RESCHEDULE_ALWAYS:
        if (when < now && !fail_now("reschedule", t, when, now, "past")) return false;
        if (s.stamp == 0 && op.kind == RESCHEDULE && !fail_now("reschedule", t, when, now, "not-scheduled"))
          return false;
        insert(q, t, when, op.source);
        return true;
      case DESCHEDULE:
        if (s.stamp == 0) {
          if (!fail_now("deschedule", t, s.when, now, "not-scheduled")) return false;
          if (!pop_any_dup(t)) {
            crash_not_found(t, s.when, now);
            return false;
          }
          return true;
        }
        s.stamp = 0;
        return true;
      default:
        crash("unknown op kind " + std::to_string(int(op.kind)));
        return false;
    }
  }

  // Replay the next occurrence of `obj` at tick `when` through the context `c`.
  template <class Ctx>
  inline bool execute(Ctx& c, int32_t obj, int64_t when) {
    ObjState& s = objs[size_t(obj)];
    uint32_t k = s.occ_next++;
    int32_t comp = s.comp;
    c.enter(comp, obj, when);
    c.record(comp, when, s.prio, s.name);
    bool ok = true;
    if (k < s.nocc) {
      const Occ& oc = d.occ[size_t(s.occ_begin + k)];
      for (int64_t t = oc.touch_begin; t < oc.touch_end; ++t)
        c.touch(d.touch_comp[size_t(t)], d.touch_name[size_t(t)], when, obj);
      if (oc.work_us > 0) spin_iters(uint64_t(oc.work_us * rate + 0.5));
      for (int64_t i = oc.ops_begin; i < oc.ops_end; ++i) {
        const Op& op = d.ops[size_t(i)];
        int64_t w = op.mode == CLOCK ? c.now() + op.value : op.value;
        if (!c.apply(op, w)) {
          ok = false;
          break;
        }
      }
    }
    c.leave(comp);
    return ok;
  }

  bool init_ops(Queue& q) {
    for (int64_t i = 0; i < d.init_ops; ++i) {
      const Op& op = d.ops[size_t(i)];
      int64_t w = op.mode == CLOCK ? q.cur_tick + op.value : op.value;
      if (!apply_now(q, op, w, q.cur_tick)) return false;
    }
    return true;
  }
};

// -- sequential ------------------------------------------------------------------------------
struct SeqCtx {
  Run& r;
  Queue& q;
  inline int64_t now() const { return q.cur_tick; }
  inline void enter(int32_t, int32_t, int64_t) {}
  inline void leave(int32_t) {}
  inline void record(int32_t comp, int64_t when, int prio, int32_t name) { r.record(comp, when, prio, name); }
  inline void touch(int32_t comp, int32_t name, int64_t when, int32_t) { r.record(comp, when, CALL_PRIORITY, name); }
  inline bool apply(const Op& op, int64_t when) { return r.apply_now(q, op, when, q.cur_tick); }
};

// gem5's serviceOne on `q` once (the caller checked the head is live and before the end).
inline bool service_one(Run& r, Queue& q, const Entry& e) {
  q.heap.pop();
  r.unschedule(e);
  int64_t when = key_when(e.key);
  q.cur_tick = when;
  r.executed++;
  SeqCtx c{r, q};
  return r.execute(c, e.obj, when);
}

// doSimLoop: serve until the limit (the exit event at (end_tick, SIM_EXIT)) or an empty queue.
void seq_loop(Run& r, Queue& q) {
  Entry e;
  while (r.live_head(q, e)) {
    if (e.key >= r.end_key) {
      q.cur_tick = r.d.end_tick;
      return;
    }
    if (!service_one(r, q, e)) return;
  }
}

void run_sequential(Run& r, Result& res) {
  Queue q;
  q.heap.reserve(1024);
  if (!r.init_ops(q)) return;
  auto t0 = Clock::now();
  seq_loop(r, q);
  res.stats.push_back({"loop_s", seconds_since(t0)});
  res.stats.push_back({"batches", double(r.executed)});
  res.cur_tick = q.cur_tick;
}

// -- split: the prototype --------------------------------------------------------------------
struct SplitShared {
  std::mutex qmu;
  Queue q;
  std::atomic<int64_t> cur_tick{0};
  int busy = 0;
  uint64_t progress = 0;
  std::mutex table_mu;
  std::unordered_map<int64_t, std::unique_ptr<std::mutex>> table;
  std::unique_ptr<std::atomic<int32_t>[]> occupant;
  std::vector<int64_t> pops, executed, lock_waits, stale_now;
  std::vector<double> idle_s;
};

struct SplitCtx {
  Run& r;
  SplitShared& S;
  int w;
  bool claimed = false;
  inline int64_t now() const { return S.cur_tick.load(std::memory_order_relaxed); }
  inline void enter(int32_t comp, int32_t obj, int64_t when) {
    int32_t exp = -1;
    if (S.occupant[comp].compare_exchange_strong(exp, w, std::memory_order_acq_rel)) {
      claimed = true;
    } else {
      claimed = false;
      if (exp != w)
        r.race(comp, obj, when,
               "worker " + std::to_string(w) + " entered while worker " + std::to_string(exp) + " was inside");
    }
  }
  inline void leave(int32_t comp) {
    if (claimed) S.occupant[comp].store(-1, std::memory_order_release);
  }
  inline void record(int32_t comp, int64_t when, int prio, int32_t name) { r.record_locked(comp, when, prio, name); }
  inline void touch(int32_t comp, int32_t name, int64_t when, int32_t) {
    int32_t exp = -1;
    bool mine = S.occupant[comp].compare_exchange_strong(exp, w, std::memory_order_acq_rel);
    if (!mine && exp != w)
      r.race(comp, -1, when,
             "direct call: worker " + std::to_string(w) + " entered while " + std::to_string(exp) + " inside");
    r.record_locked(comp, when, CALL_PRIORITY, name);
    if (mine) S.occupant[comp].store(-1, std::memory_order_release);
  }
  inline bool apply(const Op& op, int64_t when) {
    std::lock_guard<std::mutex> g(S.qmu);  // gem5 expects schedule under the queue's service mutex
    return r.apply_now(S.q, op, when, S.cur_tick.load(std::memory_order_relaxed));
  }
};

void split_worker(Run& r, SplitShared& S, int w) {
  const bool by_name = r.o.lock_by_name;
  double idle = 0;
  while (true) {
    std::unique_lock<std::mutex> lk(S.qmu);
    Entry e;
    bool have = false;
    Waiter wait;
    Clock::time_point t0 = Clock::now(), stall0 = t0;
    uint64_t seen = S.progress;
    while (true) {
      if (r.stop.load(std::memory_order_acquire)) {
        S.idle_s[size_t(w)] = idle;
        return;
      }
      have = r.live_head(S.q, e);
      if (have || S.busy == 0) break;
      lk.unlock();
      wait.pause();
      lk.lock();
      if (S.progress != seen) {
        seen = S.progress;
        stall0 = Clock::now();
      } else if (seconds_since(stall0) > r.o.stall_s) {
        Failure f;
        f.kind = "deadlock";
        f.message = "split: no event finished for " + std::to_string(r.o.stall_s) + " s";
        r.set_failure(f);
        return;
      }
    }
    idle += seconds_since(t0);
    if (!have) {  // drained: nothing queued and nobody holds an event
      r.stop.store(true, std::memory_order_release);
      S.idle_s[size_t(w)] = idle;
      return;
    }
    if (e.key >= r.end_key) {  // the popped event is simulate()'s exit event: setCurTick, stop everyone
      S.cur_tick.store(r.d.end_tick, std::memory_order_relaxed);
      r.stop.store(true, std::memory_order_release);
      S.idle_s[size_t(w)] = idle;
      return;
    }
    S.q.heap.pop();
    r.unschedule(e);
    int64_t when = key_when(e.key);
    S.cur_tick.store(when, std::memory_order_relaxed);  // popNextEvent: setCurTick at the pop
    S.busy++;
    S.pops[size_t(w)]++;
    lk.unlock();
    // The name (or component) mutex, from a table guarded by its own lock.
    int64_t key = by_name ? int64_t(r.objs[size_t(e.obj)].name) : int64_t(r.objs[size_t(e.obj)].comp);
    std::mutex* m;
    {
      std::lock_guard<std::mutex> g(S.table_mu);
      auto& slot = S.table[key];
      if (!slot) slot.reset(new std::mutex);
      m = slot.get();
    }
    if (!m->try_lock()) {
      S.lock_waits[size_t(w)]++;
      auto t1 = Clock::now();
      m->lock();
      idle += seconds_since(t1);
    }
    if (S.cur_tick.load(std::memory_order_relaxed) != when) S.stale_now[size_t(w)]++;
    SplitCtx c{r, S, w};
    bool ok = r.execute(c, e.obj, when);
    m->unlock();
    S.executed[size_t(w)]++;
    lk.lock();
    S.busy--;
    S.progress++;
    lk.unlock();
    if (!ok) {
      S.idle_s[size_t(w)] = idle;
      return;
    }
  }
}

void run_split(Run& r, Result& res) {
  SplitShared S;
  int n = std::max(1, r.o.workers);
  S.occupant.reset(new std::atomic<int32_t>[size_t(r.d.ncomp)]);
  for (int32_t i = 0; i < r.d.ncomp; ++i) S.occupant[i].store(-1);
  S.pops.assign(size_t(n), 0);
  S.executed.assign(size_t(n), 0);
  S.lock_waits.assign(size_t(n), 0);
  S.stale_now.assign(size_t(n), 0);
  S.idle_s.assign(size_t(n), 0.0);
  if (!r.init_ops(S.q)) return;
  Crew crew(n);
  crew.start([&r, &S](int w) { split_worker(r, S, w); });
  split_worker(r, S, 0);
  crew.finish_self();
  res.stats.push_back({"loop_s", crew.join()});
  res.stats.push_back({"spawn_s", crew.spawn_s()});
  res.stats.push_back({"pinned", crew.pinned() ? 1.0 : 0.0});
  int64_t pops = 0, waits = 0, stale = 0, execd = 0;
  std::vector<double> vp, ve, vw;
  for (int w = 0; w < n; ++w) {
    pops += S.pops[size_t(w)];
    waits += S.lock_waits[size_t(w)];
    stale += S.stale_now[size_t(w)];
    execd += S.executed[size_t(w)];
    vp.push_back(double(S.pops[size_t(w)]));
    ve.push_back(double(S.executed[size_t(w)]));
    vw.push_back(double(S.lock_waits[size_t(w)]));
  }
  r.executed = execd;
  res.stats.push_back({"batches", double(pops)});
  res.stats.push_back({"lock_waits", double(waits)});
  res.stats.push_back({"stale_now", double(stale)});
  res.stats_lists.push_back({"pops", vp});
  res.stats_lists.push_back({"executed", ve});
  res.stats_lists.push_back({"lock_waits_per_worker", vw});
  res.stats_lists.push_back({"idle_s", S.idle_s});
  res.cur_tick = S.cur_tick.load();
}

// -- tick-barrier ------------------------------------------------------------------------------
struct PendOp {
  int32_t obj;
  int64_t when;
  int64_t source;
  uint64_t pid;
};
struct Exec {
  int64_t key;
  int64_t tie;
  int64_t ops_begin;
};
struct Child {
  int64_t key;
  int64_t tie;
  int64_t n;
  int64_t op;  // index into the group's ops
};
inline bool child_after(const Child& a, const Child& b) {  // std heap comparator: min-heap by (key, tie, n)
  if (a.key != b.key) return a.key > b.key;
  if (a.tie != b.tie) return a.tie > b.tie;
  return a.n > b.n;
}

struct Group {
  int32_t gid = 0;
  std::vector<Entry> members;
  std::vector<Child> children;
  std::vector<PendOp> ops;
  std::vector<Exec> execs;
  std::vector<std::pair<int64_t, Violation>> viols;  // (exec index, violation)
  Failure error;
  int64_t nchild = 0, local_children = 0, late_children = 0;
  uint32_t pid_next = 0;
  std::vector<int32_t> claimed;
  void reset(int32_t id) {
    gid = id;
    members.clear();
    children.clear();
    ops.clear();
    execs.clear();
    viols.clear();
    error = Failure();
    nchild = local_children = late_children = 0;
    pid_next = 0;
    claimed.clear();
  }
};

struct TB {
  Run& r;
  Queue q;
  std::unique_ptr<std::atomic<int32_t>[]> owner;  // per component: the group that owns it in this batch
  bool lock_records = false;
  int64_t kbatch = 0, tick = 0;
  std::vector<Group> groups;
  size_t ngroups = 0;
  // pool (its threads: the run's Crew)
  alignas(64) std::atomic<uint64_t> gen{0};
  alignas(64) std::atomic<int> next{0};
  alignas(64) std::atomic<int> done{0};
  std::atomic<bool> closing{false};
  explicit TB(Run& run) : r(run) {}

  bool claim(int32_t comp, Group& g) {
    int32_t exp = -1;
    if (owner[comp].compare_exchange_strong(exp, g.gid, std::memory_order_acq_rel)) {
      g.claimed.push_back(comp);
      return true;
    }
    return exp == g.gid;
  }
  void run_group(Group& g);
  void work() {
    while (true) {
      int i = next.fetch_add(1, std::memory_order_acq_rel);
      if (size_t(i) >= ngroups) return;
      run_group(groups[size_t(i)]);
    }
  }
  void helper() {
    uint64_t seen = 0;
    while (true) {
      // Spin and yield, never sleep: every helper checks in at every batch, so sleeping helpers cost a
      // wake-up each per batch (measured: no faster than yielding with 4 and 8 threads on 2 cores).
      Waiter w;
      uint64_t g;
      while ((g = gen.load(std::memory_order_acquire)) == seen) w.pause();
      seen = g;
      if (closing.load(std::memory_order_acquire)) return;
      work();
      done.fetch_add(1, std::memory_order_acq_rel);
    }
  }
};

struct TBCtx {
  Run& r;
  TB& tb;
  Group& g;
  inline int64_t now() const { return tb.tick; }
  inline void enter(int32_t, int32_t, int64_t) {}
  inline void leave(int32_t) {}
  inline void record(int32_t comp, int64_t when, int prio, int32_t name) {
    if (tb.lock_records)
      r.record_locked(comp, when, prio, name);
    else
      r.record(comp, when, prio, name);
  }
  inline void touch(int32_t comp, int32_t name, int64_t when, int32_t obj) {
    if (!(tb.owner[comp].load(std::memory_order_acquire) == g.gid || tb.claim(comp, g)))
      r.race(comp, -1, when,
             "direct call from event " + std::to_string(obj) + ": group " + std::to_string(g.gid) +
                 " entered while group " + std::to_string(tb.owner[comp].load()) + " inside");
    r.record_locked(comp, when, CALL_PRIORITY, name);
  }
  bool gfail(const char* op, int32_t obj, int64_t when, const char* reason) {
    Violation v{op, obj, when, tb.tick, reason};
    if (r.o.checks) {
      g.error.set = true;
      g.error.kind = "causality";
      g.error.op = op;
      g.error.obj = obj;
      g.error.when = when;
      g.error.cur_tick = tb.tick;
      g.error.reason = reason;
      return false;
    }
    g.viols.push_back({int64_t(g.execs.size()) - 1, v});
    return true;
  }
  void own(int32_t t) {  // an operation on a long-lived event: the group must own its component
    int32_t comp = r.objs[size_t(t)].comp;
    if (tb.owner[comp].load(std::memory_order_acquire) == g.gid || tb.claim(comp, g)) return;
    r.race(comp, t, tb.tick,
           "group " + std::to_string(g.gid) + " operates on event " + std::to_string(t) + " while group " +
               std::to_string(tb.owner[comp].load()) + " owns its component");
  }
  void defer(int32_t t, int64_t when, int64_t source) {
    ObjState& s = r.objs[size_t(t)];
    uint64_t pid = PENDING_BIT | (uint64_t(uint32_t(g.gid)) << 32) | uint64_t(++g.pid_next);
    s.stamp = pid;
    s.when = when;
    int64_t opi = int64_t(g.ops.size());
    g.ops.push_back(PendOp{t, when, source, pid});
    bool message = r.objs[size_t(t)].flags & 1;
    if (!message) own(t);
    int64_t key = pack_key(when, r.objs[size_t(t)].prio);
    if (key <= tb.kbatch) {  // a zero-delay child: the sequential run serves it before the rest of the bin
      int32_t comp = r.objs[size_t(t)].comp;
      if (tb.owner[comp].load(std::memory_order_acquire) != g.gid && !tb.claim(comp, g)) {
        r.race(comp, t, when,
               "zero-delay child of group " + std::to_string(g.gid) + " into a component owned by group " +
                   std::to_string(tb.owner[comp].load()));
        g.late_children++;
        return;
      }
      g.nchild++;
      int64_t tie = r.o.canonical ? (source == NO_SOURCE ? CHILD_UNSOURCED + g.nchild : source) : CHILD_GEM5 - g.nchild;
      g.children.push_back(Child{key, tie, g.nchild, opi});
      std::push_heap(g.children.begin(), g.children.end(), child_after);
      g.local_children++;
    }
  }
  bool apply(const Op& op, int64_t when) {
    int32_t t = op.target;
    ObjState& s = r.objs[size_t(t)];
    switch (op.kind) {
      case SCHEDULE:
        if (when < tb.tick && !gfail("schedule", t, when, "past")) return false;
        if (s.stamp != 0) {
          if (!gfail("schedule", t, when, "already-scheduled")) return false;
          r.add_dup(t, s.stamp);
        }
        defer(t, when, op.source);
        return true;
      case RESCHEDULE:
      case RESCHEDULE_ALWAYS:
        if (when < tb.tick && !gfail("reschedule", t, when, "past")) return false;
        if (s.stamp == 0 && op.kind == RESCHEDULE && !gfail("reschedule", t, when, "not-scheduled")) return false;
        defer(t, when, op.source);
        return true;
      case DESCHEDULE:
        if (!(r.objs[size_t(t)].flags & 1)) own(t);
        if (s.stamp == 0) {
          if (!gfail("deschedule", t, s.when, "not-scheduled")) return false;
          if (!r.pop_any_dup(t)) {
            g.error.set = true;
            g.error.kind = "crash";
            g.error.op = "deschedule";
            g.error.obj = t;
            g.error.when = s.when;
            g.error.cur_tick = tb.tick;
            g.error.reason = "event not found!";
            g.error.message = "event not found!";
            return false;
          }
          return true;
        }
        s.stamp = 0;
        return true;
      default:
        return false;
    }
  }
};

void TB::run_group(Group& g) {
  TBCtx c{r, *this, g};
  auto run_child = [&](const Child& ch) -> bool {
    PendOp op = g.ops[size_t(ch.op)];
    ObjState& s = r.objs[size_t(op.obj)];
    if (s.stamp == op.pid) {
      s.stamp = 0;
    } else if (!(s.ndups && r.take_dup(op.obj, op.pid))) {
      return true;  // no longer live: rescheduled or descheduled meanwhile
    }
    g.execs.push_back(Exec{ch.key, ch.tie, int64_t(g.ops.size())});
    return r.execute(c, op.obj, op.when);
  };
  for (const Entry& e : g.members) {
    while (!g.children.empty() && (g.children.front().key < kbatch || g.children.front().tie < e.tie)) {
      std::pop_heap(g.children.begin(), g.children.end(), child_after);
      Child ch = g.children.back();
      g.children.pop_back();
      if (!run_child(ch)) return;
    }
    ObjState& s = r.objs[size_t(e.obj)];
    if (s.stamp == e.serial) {
      s.stamp = 0;
    } else if (!(s.ndups && r.take_dup(e.obj, e.serial))) {
      continue;  // an earlier event of the batch rescheduled or descheduled it
    }
    g.execs.push_back(Exec{e.key, e.tie, int64_t(g.ops.size())});
    if (!r.execute(c, e.obj, key_when(e.key))) return;
  }
  while (!g.children.empty()) {
    std::pop_heap(g.children.begin(), g.children.end(), child_after);
    Child ch = g.children.back();
    g.children.pop_back();
    if (!run_child(ch)) return;
  }
}

void run_tick_barrier(Run& r, Result& res) {
  TB tb(r);
  Queue& q = tb.q;
  q.heap.reserve(1024);
  const Dag& d = r.d;
  int workers = std::max(1, r.o.workers);
  bool by_name = r.o.lock_by_name;
  tb.lock_records = by_name || !d.touch_comp.empty();
  tb.owner.reset(new std::atomic<int32_t>[size_t(d.ncomp)]);
  for (int32_t i = 0; i < d.ncomp; ++i) tb.owner[i].store(-1);
  if (!r.init_ops(q)) return;
  // The helpers idle in their pool between batches; the clock starts once all of them run.
  Crew crew(workers);
  if (workers > 1) crew.start([&tb](int) { tb.helper(); });
  auto t0 = Clock::now();
  double loop_s = 0;
  int64_t parallel_batches = 0, serial_runs = 0, ngroups_total = 0, parallel_events = 0, local_children = 0,
          late_children = 0, replayed = 0;
  if (workers == 1) {
    seq_loop(r, q);
    loop_s = seconds_since(t0);
  } else {
    size_t nkeys = size_t(by_name ? std::max(r.nnames, 1) : std::max(d.ncomp, 1));
    std::vector<int64_t> key_batch(nkeys, -1);
    std::vector<int32_t> key_gid(nkeys, -1);
    std::vector<Entry> members;
    int64_t batch_no = 0;
    Entry head;
    while (!r.stop.load(std::memory_order_relaxed) && r.live_head(q, head)) {
      if (head.key >= r.end_key) {
        q.cur_tick = d.end_tick;
        break;
      }
      int64_t K = head.key;
      members.clear();
      Entry e;
      while (r.live_head(q, e) && e.key == K) {
        members.push_back(e);
        q.heap.pop();
      }
      tb.ngroups = 0;
      if (int(members.size()) >= std::max(2, r.o.min_parallel)) {
        batch_no++;
        for (const Entry& m : members) {
          size_t k = size_t(by_name ? r.objs[size_t(m.obj)].name : r.objs[size_t(m.obj)].comp);
          if (key_batch[k] != batch_no) {
            key_batch[k] = batch_no;
            key_gid[k] = int32_t(tb.ngroups);
            if (tb.groups.size() <= tb.ngroups) tb.groups.emplace_back();
            tb.groups[tb.ngroups].reset(int32_t(tb.ngroups));
            tb.ngroups++;
          }
          tb.groups[size_t(key_gid[k])].members.push_back(m);
        }
      }
      if (tb.ngroups < 2) {
        // The plain gem5 loop: the popped bin (with whatever the queue would serve before each entry),
        // then whatever else is due up to its key.
        serial_runs++;
        bool ok = true;
        for (const Entry& m : members) {
          Entry h;
          while (ok && r.live_head(q, h) && before(h, m)) ok = service_one(r, q, h);
          if (!ok) break;
          if (!r.live(m)) continue;
          r.unschedule(m);
          q.cur_tick = key_when(m.key);
          r.executed++;
          SeqCtx c{r, q};
          if (!r.execute(c, m.obj, q.cur_tick)) {
            ok = false;
            break;
          }
        }
        Entry h;
        while (ok && r.live_head(q, h) && h.key <= K) ok = service_one(r, q, h);
        if (!ok) break;
        continue;
      }
      // A parallel batch.
      parallel_batches++;
      ngroups_total += int64_t(tb.ngroups);
      tb.kbatch = K;
      tb.tick = key_when(K);
      q.cur_tick = tb.tick;
      std::vector<int32_t> start_claims;
      for (size_t gi = 0; gi < tb.ngroups; ++gi) {
        Group& g = tb.groups[gi];
        int32_t last = -1;
        for (const Entry& m : g.members) {
          int32_t comp = r.objs[size_t(m.obj)].comp;
          if (comp == last) continue;
          last = comp;
          int32_t exp = -1;
          if (tb.owner[comp].compare_exchange_strong(exp, g.gid)) {
            start_claims.push_back(comp);
          } else if (exp != g.gid) {
            r.race(comp, m.obj, tb.tick,
                   "lock key splits a component: event " + std::to_string(m.obj) + " in group " +
                       std::to_string(g.gid) + ", other events in group " + std::to_string(exp) +
                       " of the same batch");
          }
        }
      }
      tb.next.store(0, std::memory_order_relaxed);
      tb.done.store(0, std::memory_order_relaxed);
      tb.gen.fetch_add(1, std::memory_order_acq_rel);  // release the helpers
      tb.work();
      Waiter w;
      while (tb.done.load(std::memory_order_acquire) < workers - 1) w.pause();  // the barrier
      for (int32_t comp : start_claims) tb.owner[comp].store(-1, std::memory_order_relaxed);
      for (size_t gi = 0; gi < tb.ngroups; ++gi) {
        for (int32_t comp : tb.groups[gi].claimed) tb.owner[comp].store(-1, std::memory_order_relaxed);
        local_children += tb.groups[gi].local_children;
        late_children += tb.groups[gi].late_children;
      }
      // Commit in the order the sequential run would have made the insertions: the global queue would
      // always serve the smallest (key, tie) among the groups' next events.
      std::vector<size_t> pos(tb.ngroups, 0);
      bool failed = false;
      while (true) {
        int best = -1;
        for (size_t gi = 0; gi < tb.ngroups; ++gi) {
          const Group& g = tb.groups[gi];
          if (pos[gi] >= g.execs.size()) continue;
          const Exec& x = g.execs[pos[gi]];
          if (best < 0) {
            best = int(gi);
            continue;
          }
          const Exec& y = tb.groups[size_t(best)].execs[pos[size_t(best)]];
          if (x.key < y.key || (x.key == y.key && x.tie < y.tie)) best = int(gi);
        }
        if (best < 0) break;
        Group& g = tb.groups[size_t(best)];
        size_t j = pos[size_t(best)]++;
        if (g.error.set && j + 1 == g.execs.size()) {
          r.set_failure(g.error);  // the sequential run stops inside this event
          failed = true;
          break;
        }
        parallel_events++;
        int64_t end = j + 1 < g.execs.size() ? g.execs[j + 1].ops_begin : int64_t(g.ops.size());
        for (int64_t k = g.execs[j].ops_begin; k < end; ++k) {
          const PendOp& op = g.ops[size_t(k)];
          uint64_t serial = ++q.serial;
          int64_t tie = r.o.canonical ? (op.source == NO_SOURCE ? UNSOURCED_BASE + int64_t(serial) : op.source)
                                      : -int64_t(serial);
          ObjState& s = r.objs[size_t(op.obj)];
          if (s.stamp == op.pid) {
            s.stamp = serial;
          } else if (!(s.ndups && r.replace_dup(op.obj, op.pid, serial))) {
            continue;  // overridden, descheduled or already run: its insertion number is used up all the same
          }
          q.heap.push(Entry{pack_key(op.when, r.objs[size_t(op.obj)].prio), tie, serial, op.obj});
          replayed++;
        }
        for (auto& gv : g.viols)
          if (gv.first == int64_t(j)) r.add_violation(gv.second);
      }
      if (!failed) {
        for (size_t gi = 0; gi < tb.ngroups; ++gi)
          if (tb.groups[gi].error.set) {
            r.set_failure(tb.groups[gi].error);
            failed = true;
            break;
          }
      }
      for (size_t gi = 0; gi < tb.ngroups; ++gi) r.executed += int64_t(tb.groups[gi].execs.size());
      if (failed) break;
    }
    loop_s = seconds_since(t0);  // the last batch committed: the helpers only idle from here
    tb.closing.store(true, std::memory_order_release);
    tb.gen.fetch_add(1, std::memory_order_acq_rel);
    crew.finish_self();
    crew.join();
    res.stats.push_back({"spawn_s", crew.spawn_s()});
    res.stats.push_back({"pinned", crew.pinned() ? 1.0 : 0.0});
  }
  res.stats.push_back({"loop_s", loop_s});
  res.stats.push_back({"parallel_batches", double(parallel_batches)});
  res.stats.push_back({"serial_runs", double(serial_runs)});
  res.stats.push_back({"batches", double(workers > 1 ? parallel_batches + serial_runs : r.executed)});
  res.stats.push_back({"barriers", double(parallel_batches)});
  res.stats.push_back({"groups", double(ngroups_total)});
  res.stats.push_back({"parallel_events", double(parallel_events)});
  res.stats.push_back({"local_children", double(local_children)});
  res.stats.push_back({"late_children", double(late_children)});
  res.stats.push_back({"replayed_ops", double(replayed)});
  res.cur_tick = q.cur_tick;
}

// -- conservative (window) and quantum: LPs with their own queues ---------------------------------
struct Msg {
  int32_t obj;
  int64_t when;
  int64_t source;
};

struct LPState {
  Queue q;
  std::vector<std::vector<Msg>> out[2];  // [parity][dst]
  int64_t out_min = INF;
  int64_t boundary = 0;
  int64_t windows = 0, rounds = 0, messages = 0, served = 0, dropped = 0;
  int64_t late_events = 0, lateness_total = 0, lateness_max = 0;
  int64_t round = 0;
  double idle_s = 0;
};

struct LPRun {
  Run& r;
  int P;
  std::vector<int32_t> lp_of_obj;
  std::vector<std::unique_ptr<LPState>> lps;
  std::vector<int64_t> next_time[2];
  std::vector<uint8_t> aborted[2];  // per LP and round parity: it saw the run stop (read by all after the barrier)
  SpinBarrier barrier;
  LPRun(Run& run, int p) : r(run), P(p), barrier(p) {}
};

struct LPCtx {
  Run& r;
  LPRun& R;
  LPState& L;
  int me;
  inline int64_t now() const { return L.q.cur_tick; }
  inline void enter(int32_t, int32_t, int64_t) {}
  inline void leave(int32_t) {}
  inline void record(int32_t comp, int64_t when, int prio, int32_t name) { r.record(comp, when, prio, name); }
  inline void touch(int32_t comp, int32_t name, int64_t when, int32_t obj) {
    if (r.o.lp_of[size_t(comp)] != me) {
      r.race(comp, -1, when, "direct call from event " + std::to_string(obj) + " across LPs");
      r.record_locked(comp, when, CALL_PRIORITY, name);
      return;
    }
    r.record(comp, when, CALL_PRIORITY, name);
  }
  bool apply(const Op& op, int64_t when) {
    int dst = R.lp_of_obj[size_t(op.target)];
    if (dst == me) return r.apply_now(L.q, op, when, L.q.cur_tick);
    if (op.kind != SCHEDULE) {
      r.crash("a reschedule or deschedule of another LP's event (gem5: a foreign queue's event)");
      return false;
    }
    if (!r.o.quantum_mode && r.o.lookahead >= 0 && when < L.q.cur_tick + r.o.lookahead) {
      Failure f;
      f.kind = "causality";
      f.op = "schedule";
      f.obj = op.target;
      f.when = when;
      f.cur_tick = L.q.cur_tick;
      f.reason = "lookahead";
      f.message = "lookahead violation: LP " + std::to_string(me) + " sent at tick " + std::to_string(L.q.cur_tick) +
                  " for tick " + std::to_string(when) + ", less than the lookahead " +
                  std::to_string(r.o.lookahead) + " ahead";
      r.set_failure(f);
      return false;
    }
    if (r.d.end_tick != NO_END && when > r.d.end_tick) {
      L.dropped++;  // never runs: the single-queue run leaves it queued too
      return true;
    }
    L.out[(L.round + 1) & 1][size_t(dst)].push_back(Msg{op.target, when, op.source});
    L.messages++;
    if (when < L.out_min) L.out_min = when;
    return true;
  }
};

int64_t local_next(Run& r, Queue& q) {
  Entry e;
  if (!r.live_head(q, e)) return INF;
  int64_t when = key_when(e.key);
  return (r.d.end_tick == NO_END || when <= r.d.end_tick) ? when : INF;
}

void lp_thread(LPRun& R, int me) {
  Run& r = R.r;
  LPState& L = *R.lps[size_t(me)];
  const bool quantum = r.o.quantum_mode;
  const int64_t Q = r.o.quantum;
  const int64_t end_tick = r.d.end_tick;
  LPCtx c{r, R, L, me};
  while (true) {
    // exchange: my next time, then the barrier, then everyone's minimum and my inbound messages
    if (quantum) {
      int64_t clock = end_tick == NO_END ? L.boundary : std::min(L.boundary, end_tick);
      if (clock > L.q.cur_tick) L.q.cur_tick = clock;
    }
    int64_t head = local_next(r, L.q);
    int64_t mine = std::min(head, L.out_min);
    L.out_min = INF;
    int parity = int(L.round & 1);
    R.next_time[parity][size_t(me)] = mine;
    R.aborted[parity][size_t(me)] = r.stop.load(std::memory_order_acquire) ? 1 : 0;
    auto tw = Clock::now();
    R.barrier.wait();
    L.idle_s += seconds_since(tw);
    // Every LP decides from the same published flags, so all leave at the same barrier.
    bool abort = false;
    for (int p = 0; p < R.P; ++p) abort = abort || R.aborted[parity][size_t(p)];
    if (abort) return;
    int64_t gmin = INF;
    for (int p = 0; p < R.P; ++p) gmin = std::min(gmin, R.next_time[parity][size_t(p)]);
    for (int src = 0; src < R.P; ++src) {
      if (src == me) continue;
      auto& box = R.lps[size_t(src)]->out[parity][size_t(me)];
      for (const Msg& m : box) {
        int64_t when = m.when;
        if (quantum && r.o.late_clamp && when < L.boundary) {
          int64_t late = L.boundary - when;
          L.late_events++;
          L.lateness_total += late;
          L.lateness_max = std::max(L.lateness_max, late);
          when = L.boundary;
        }
        Op op{when, m.source, m.obj, SCHEDULE, ABSOLUTE};
        if (!r.apply_now(L.q, op, when, L.q.cur_tick)) break;
      }
      box.clear();
    }
    if (gmin == INF) return;
    int64_t limit;
    if (quantum) {
      gmin = std::max(gmin, L.boundary);
      L.boundary = Q > 0 ? (gmin / Q + 1) * Q : INF;
      limit = L.boundary;
    } else {
      limit = r.o.lookahead >= 0 ? gmin + r.o.lookahead : INF;
    }
    // serve: events with when < limit, before simulate()'s limit
    int64_t h = local_next(r, L.q);
    bool ran = false;
    if (h < limit && !r.stop.load(std::memory_order_relaxed)) {
      int64_t bound, stop_tick;
      if (end_tick != NO_END && end_tick < limit) {
        bound = r.end_key;
        stop_tick = end_tick;
      } else if (limit != INF) {
        bound = pack_key(limit, -128);
        stop_tick = limit - 1;
      } else {
        bound = r.end_key;
        stop_tick = -1;
      }
      Entry e;
      bool ok = true;
      while (r.live_head(L.q, e) && e.key < bound) {
        L.q.heap.pop();
        r.unschedule(e);
        int64_t when = key_when(e.key);
        L.q.cur_tick = when;
        L.served++;
        if (!r.execute(c, e.obj, when)) {
          ok = false;
          break;
        }
      }
      ran = true;
      if (ok && stop_tick >= 0 && stop_tick > L.q.cur_tick) L.q.cur_tick = stop_tick;
    }
    L.windows++;
    if (ran) L.rounds++;
    L.round++;
  }
}

void run_partitioned(Run& r, Result& res) {
  const Dag& d = r.d;
  int P = std::max(1, r.o.workers);
  if (int(r.o.lp_of.size()) != d.ncomp) {
    r.crash("lp_of has " + std::to_string(r.o.lp_of.size()) + " entries for " + std::to_string(d.ncomp) +
            " components");
    return;
  }
  for (int32_t lp : r.o.lp_of)
    if (lp < 0 || lp >= P) {
      r.crash("lp_of holds LP " + std::to_string(lp) + " outside [0, " + std::to_string(P) + ")");
      return;
    }
  LPRun R(r, P);
  R.lp_of_obj.resize(size_t(d.nobj()));
  for (int32_t o = 0; o < d.nobj(); ++o) R.lp_of_obj[size_t(o)] = r.o.lp_of[size_t(r.objs[size_t(o)].comp)];
  for (int p = 0; p < P; ++p) {
    R.lps.emplace_back(new LPState);
    R.lps.back()->out[0].resize(size_t(P));
    R.lps.back()->out[1].resize(size_t(P));
  }
  R.next_time[0].assign(size_t(P), INF);
  R.next_time[1].assign(size_t(P), INF);
  R.aborted[0].assign(size_t(P), 0);
  R.aborted[1].assign(size_t(P), 0);
  // init(): every component's first schedules, into its own LP's queue
  for (int64_t i = 0; i < d.init_ops; ++i) {
    const Op& op = d.ops[size_t(i)];
    LPState& L = *R.lps[size_t(R.lp_of_obj[size_t(op.target)])];
    int64_t w = op.mode == CLOCK ? op.value : op.value;
    if (!r.apply_now(L.q, op, w, 0)) return;
  }
  Crew crew(P);
  crew.start([&R](int p) { lp_thread(R, p); });
  lp_thread(R, 0);
  crew.finish_self();
  res.stats.push_back({"loop_s", crew.join()});
  res.stats.push_back({"spawn_s", crew.spawn_s()});
  res.stats.push_back({"pinned", crew.pinned() ? 1.0 : 0.0});
  int64_t windows = 0, rounds = 0, messages = 0, late = 0, lt = 0, lm = 0, dropped = 0;
  std::vector<double> served, idle;
  int64_t ct = 0;
  for (auto& L : R.lps) {
    windows = std::max(windows, L->windows);
    rounds += L->rounds;
    messages += L->messages;
    late += L->late_events;
    lt += L->lateness_total;
    lm = std::max(lm, L->lateness_max);
    dropped += L->dropped;
    served.push_back(double(L->served));
    idle.push_back(L->idle_s);
    r.executed += L->served;
    ct = std::max(ct, L->q.cur_tick);
  }
  res.stats.push_back({"windows", double(windows)});
  res.stats.push_back({"batches", double(windows)});
  res.stats.push_back({"rounds", double(rounds)});
  res.stats.push_back({"messages", double(messages)});
  res.stats.push_back({"dropped", double(dropped)});
  if (r.o.quantum_mode) {
    res.stats.push_back({"quanta", double(windows)});
    res.stats.push_back({"late_events", double(late)});
    res.stats.push_back({"lateness_total_ticks", double(lt)});
    res.stats.push_back({"lateness_max_ticks", double(lm)});
  }
  res.stats_lists.push_back({"events_per_lp", served});
  res.stats_lists.push_back({"idle_s", idle});
  res.cur_tick = ct;
}

}  // namespace

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

Result run(const Dag& dag, const Options& opt) {
  Run r(dag, opt);
  Result res;
  const std::string& s = opt.strategy;
  if (s == "sequential") {
    run_sequential(r, res);
  } else if (s == "split") {
    run_split(r, res);
  } else if (s == "tick-barrier") {
    run_tick_barrier(r, res);
  } else if (s == "conservative" || s == "quantum") {
    run_partitioned(r, res);
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

}  // namespace tp
