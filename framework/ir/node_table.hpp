// A thread's scratch table keyed by node address: open addressing with linear probing, emptied in O(1) by a
// generation count so one table is reused walk after walk (std::unordered_set/map allocate a bucket node per insert,
// and the toposorts and the callify walk run on every realize). Used as a set (toposort's seen nodes,
// framework/ir/node.cpp) and as a map to a 32-bit value (callify's key positions, framework/engine/callify.cpp).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hcq::fw {

struct NodeData;

class NodeTable {
 public:
  void clear() {
    if (++gen_ == 0) {  // wrapped: old entries could look current
      std::fill(slots_.begin(), slots_.end(), Slot{});
      gen_ = 1;
    }
    used_ = 0;
  }
  // The value stored for `key`, or null.
  const uint32_t* find(const NodeData* key) const {
    if (slots_.empty()) return nullptr;
    for (size_t k = index(key);; k = (k + 1) & mask_) {
      const Slot& s = slots_[k];
      if (s.gen != gen_) return nullptr;
      if (s.key == key) return &s.value;
    }
  }
  // Stores `key` with `value` unless it is there: true when it was not.
  bool insert(const NodeData* key, uint32_t value = 0) {
    if ((used_ + 1) * 2 > slots_.size()) grow();
    for (size_t k = index(key);; k = (k + 1) & mask_) {
      Slot& s = slots_[k];
      if (s.gen != gen_) {
        s = Slot{key, gen_, value};
        ++used_;
        return true;
      }
      if (s.key == key) return false;
    }
  }

 private:
  struct Slot {
    const NodeData* key = nullptr;
    uint32_t gen = 0;
    uint32_t value = 0;
  };
  size_t index(const NodeData* key) const {
    return static_cast<size_t>((reinterpret_cast<uint64_t>(key) * 0x9e3779b97f4a7c15ull) >> shift_) & mask_;
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t n = old.empty() ? 256 : old.size() * 2;
    slots_.assign(n, Slot{});
    mask_ = n - 1;
    shift_ = 64 - std::countr_zero(n);
    const uint32_t gen = gen_;
    gen_ = 1;
    used_ = 0;
    for (const Slot& s : old)
      if (s.gen == gen) insert(s.key, s.value);
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  uint32_t gen_ = 1;
  size_t used_ = 0;
};

}  // namespace hcq::fw
