// tickpar's native engine, public API (6/8): claiming a component for one group of a batch.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace tp {

// Per component, the batch and group that claimed it, (batch << 32) | group.  A claim of an earlier batch is
// no claim, so nobody releases claims: starting the next batch (set_batch) lets them all lapse at once, and a
// component's cache line moves only when a group claims it.  Two groups of one batch that reach one component
// are a race: the second claim fails, and the caller reports it (Run::race).
class ComponentClaims {
 public:
  explicit ComponentClaims(int32_t ncomp) : owner_(new std::atomic<int64_t>[size_t(ncomp > 0 ? ncomp : 1)]) {
    for (int32_t c = 0; c < ncomp; ++c) owner_[size_t(c)].store(0);  // batch 0: none (batches count from 1)
  }
  // The batch whose claims count from now on (>= 1, increasing); its writer publishes it to the groups' threads
  // (a release store they acquire) before they claim.
  void set_batch(uint64_t batch) { batch_ = batch; }
  uint64_t batch() const { return batch_; }
  // Group `group`'s claim on `comp` in this batch: true if it holds it (now or already), false if another does.
  bool claim(int32_t comp, int32_t group) {
    int64_t mine = (int64_t(batch_) << 32) | int64_t(uint32_t(group));
    int64_t v = owner_[size_t(comp)].load(std::memory_order_acquire);
    while (true) {
      if (v == mine) return true;
      if ((v >> 32) == int64_t(batch_)) return false;
      if (owner_[size_t(comp)].compare_exchange_weak(v, mine, std::memory_order_acq_rel)) return true;
    }
  }
  // The group that holds `comp` in this batch (-1: none).
  int32_t holder(int32_t comp) const {
    int64_t v = owner_[size_t(comp)].load(std::memory_order_acquire);
    return (v >> 32) == int64_t(batch_) ? int32_t(uint32_t(v)) : -1;
  }

 private:
  std::unique_ptr<std::atomic<int64_t>[]> owner_;
  uint64_t batch_ = 0;
};

}  // namespace tp
