// Test harness for the AMD packet engines: a QueueHost over test memory (regions at chosen GPU VAs, backed by
// owned buffers), and a queue on it (ring + read/write pointers) that tests submit encoder output to.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "../common/cache_recorder.hpp"
#include "../common/test_regions.hpp"

#include "amd/target.hpp"
#include "sim/amd_engine/engine.hpp"

namespace hcq::sim::amd_engine::testing {

// Test memory (map, unmap, get, set, write, must) comes from TestRegions.
class TestHost final : public QueueHost, public sim::test::TestRegions {
 public:
  std::byte* translate(uint64_t va, uint64_t size) override {
    if (va == watch_va_.load()) watched_.fetch_add(1);
    return TestRegions::translate(va, size);
  }
  // Counts the engine's accesses that start at `va` (a poll's reads).
  void watch(uint64_t va) { watch_va_.store(va); }
  int watched() const { return watched_.load(); }
  uint64_t gpu_clock() override { return tick(); }
  void interrupt(uint32_t context_id) override {
    std::lock_guard<std::mutex> lk(mu_);
    interrupts_.push_back(context_id);
  }
  void fault(uint64_t address, bool is_memory_fault, const std::string& reason) override {
    std::lock_guard<std::mutex> lk(mu_);
    faults_.push_back({address, is_memory_fault, reason});
  }
  // Each cache action in order (recorder.on_caches runs at the call).
  void caches(uint8_t ops) override { recorder.record(ops); }
  std::vector<uint8_t> cache_ops() { return recorder.cache_ops(); }
  hcq::test::CacheRecorder recorder;

  struct Fault {
    uint64_t address;
    bool memory;
    std::string reason;
  };
  std::vector<uint32_t> interrupts() {
    std::lock_guard<std::mutex> lk(mu_);
    return interrupts_;
  }
  std::vector<Fault> faults() {
    std::lock_guard<std::mutex> lk(mu_);
    return faults_;
  }

 private:
  std::mutex mu_;
  std::atomic<uint64_t> watch_va_{~uint64_t{0}};
  std::atomic<int> watched_{0};
  std::vector<uint32_t> interrupts_;
  std::vector<Fault> faults_;
};

// Addresses the tests use (any VAs: the host maps them to its own buffers).
inline constexpr uint64_t kRingVa = 0x10000000, kPtrVa = 0x10100000, kDataVa = 0x20000000, kIbVa = 0x30000000;

// A queue on a TestHost: ring at kRingVa, read pointer at kPtrVa, write pointer at kPtrVa + 8.
class TestQueue {
 public:
  TestQueue(TestHost& host, EngineGroup& group, const amd::Target& t, SimQueueType type, uint64_t ring_bytes = 4096,
            uint32_t queue_id = 1, uint64_t start = 0)
      : host_(host), w_(start) {
    desc_.queue_id = queue_id;
    desc_.target = &t;
    desc_.type = type;
    desc_.ring_va = kRingVa + (uint64_t{queue_id} << 24);
    desc_.ring_size = ring_bytes;
    desc_.rptr_va = kPtrVa + uint64_t{queue_id} * 64;
    desc_.wptr_va = desc_.rptr_va + 8;
    host.map(desc_.ring_va, ring_bytes);
    host.map(desc_.rptr_va, 16);
    host.set<uint64_t>(desc_.rptr_va, start);
    host.set<uint64_t>(desc_.wptr_va, start);
    runner_ = group.create(desc_, host);
  }
  ~TestQueue() { runner_.reset(); }

  // Appends words at the write pointer (PM4: dwords; SDMA: bytes; AQL: whole 64-byte packets), wrapping as a ring
  // does, then stores the write pointer and rings the doorbell.
  void submit(std::span<const uint32_t> words, bool ring = true) {
    const uint64_t unit = desc_.type == SimQueueType::compute_pm4 ? 4 : desc_.type == SimQueueType::sdma ? 1 : 64;
    for (size_t i = 0; i < words.size(); ++i) {
      const uint64_t byte = (w_ * unit + i * 4) % desc_.ring_size;
      host_.set<uint32_t>(desc_.ring_va + byte, words[i]);
    }
    w_ += words.size() * 4 / unit;
    if (ring) publish();
  }
  void publish() {
    host_.set<uint64_t>(desc_.wptr_va, w_);
    runner_->doorbell(w_);
  }
  uint64_t rptr() { return host_.get<uint64_t>(desc_.rptr_va); }
  uint64_t wptr() const { return w_; }
  EngineRunner& runner() { return *runner_; }
  const SimQueueDesc& desc() const { return desc_; }
  // Waits (up to 5 s) until the runner settles; returns its state.
  RunnerState settle() {
    EXPECT_TRUE(runner_->wait_settled(std::chrono::seconds(5))) << runner_->describe();
    return runner_->state();
  }

 private:
  TestHost& host_;
  uint64_t w_;
  SimQueueDesc desc_;
  std::unique_ptr<EngineRunner> runner_;
};

}  // namespace hcq::sim::amd_engine::testing
