// tickpar's native engine, public API (7/8): hand-off slots and messages between workers.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "tickpar/sync.hpp"

namespace tp {

// A piece of work posted to one worker and its completion, by generation number (1, 2, ...): the poster writes
// what the work is, then post(g); the worker waits for it (wait_posted), does it, and calls finish(g); the
// poster waits for that (wait_finished).  Waiting spins, then yields, then sleeps on a futex (wait_while_equal).
struct alignas(64) HandoffSlot {
  std::atomic<uint64_t> posted{0};
  alignas(64) std::atomic<uint64_t> finished{0};
  void post(uint64_t gen) {
    posted.store(gen, std::memory_order_release);
    posted.notify_all();
  }
  // The next generation after `seen` (blocks until one is posted).
  uint64_t wait_posted(uint64_t seen) { return wait_while_equal(posted, seen); }
  void finish(uint64_t gen) {
    finished.store(gen, std::memory_order_release);
    finished.notify_all();
  }
  void wait_finished(uint64_t gen) {
    uint64_t v;
    while ((v = finished.load(std::memory_order_acquire)) != gen) wait_while_equal(finished, v);
  }
};

// Messages between P workers in rounds separated by a barrier: worker `from` appends to its own outbox for
// `to` (no lock: one writer per box), and after the barrier `to` drains the round's boxes addressed to it.
// Two sets of boxes, by the round's parity, so that the next round's sends never meet this round's reads.
template <class T>
class Mailboxes {
 public:
  explicit Mailboxes(int workers) : p_(workers), boxes_(size_t(2 * workers * workers)) {}
  void send(int from, int to, int64_t round, const T& message) { box(from, to, round).push_back(message); }
  // Call f(message) for every message sent to `to` in `round`, by sender, in the order sent; empties the boxes.
  template <class F>
  void receive(int to, int64_t round, F f) {
    for (int from = 0; from < p_; ++from) {
      std::vector<T>& b = box(from, to, round);
      for (const T& m : b) f(m);
      b.clear();
    }
  }

 private:
  std::vector<T>& box(int from, int to, int64_t round) {
    return boxes_[size_t(((round & 1) * p_ + from) * p_ + to)];
  }
  int p_;
  std::vector<std::vector<T>> boxes_;
};

}  // namespace tp
