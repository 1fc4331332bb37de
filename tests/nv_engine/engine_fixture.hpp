// Test harness for the simulated NVIDIA channel executor: a ChannelHost over test memory (regions at chosen GPU VAs,
// backed by owned buffers), a channel on it (GPFIFO ring, USERD, pushbuffer area) that tests submit segments to, and
// a small pushbuffer builder that takes every method offset and field position from drivers/nv/facts.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../common/cache_recorder.hpp"
#include "../common/test_regions.hpp"

#include "nv/facts/arch.hpp"
#include "nv/facts/gpfifo.hpp"
#include "nv/facts/methods.hpp"
#include "sim/nv_engine/engine.hpp"

namespace hcq::sim::nv_engine::testing {

// Test memory (map, get, set, write, must) comes from TestRegions.
class TestHost final : public ChannelHost, public sim::test::TestRegions {
 public:
  std::byte* translate(uint64_t va, uint64_t size) override { return TestRegions::translate(va, size); }
  uint64_t gpu_time_ns() override { return tick(); }
  std::vector<uint32_t> engine_classes() override {
    std::lock_guard<std::mutex> lk(mu_);
    return classes_;
  }
  void nonstall_interrupt() override { interrupts_.fetch_add(1); }
  void fault(const ChannelFault& f) override {
    std::lock_guard<std::mutex> lk(mu_);
    faults_.push_back(f);
  }
  // One channel, no group, unless a test stops it "with its group" once the word at `va` holds `value` (as RM would
  // have done before the process wrote that word).
  bool stopped_by_group(ChannelFault& why) override {
    std::lock_guard<std::mutex> lk(mu_);
    if (!stop_word_ || get<uint32_t>(stop_word_->first) != stop_word_->second) return false;
    why = ChannelFault{ChannelFaultKind::pbdma_error, 0, 0, "stopped with its channel group"};
    return true;
  }
  void stop_with_group_once(uint64_t va, uint32_t value) {
    std::lock_guard<std::mutex> lk(mu_);
    stop_word_ = {va, value};
  }
  // Each cache action in order (recorder.on_caches runs at the call).
  void caches(uint8_t ops) override { recorder.record(ops); }
  std::vector<uint8_t> cache_ops() { return recorder.cache_ops(); }
  hcq::test::CacheRecorder recorder;

  void allow_classes(std::vector<uint32_t> c) {
    std::lock_guard<std::mutex> lk(mu_);
    classes_ = std::move(c);
  }
  int interrupts() const { return interrupts_.load(); }
  std::vector<ChannelFault> faults() {
    std::lock_guard<std::mutex> lk(mu_);
    return faults_;
  }

 private:
  std::mutex mu_;
  std::atomic<int> interrupts_{0};
  std::vector<uint32_t> classes_;
  std::vector<ChannelFault> faults_;
  std::optional<std::pair<uint64_t, uint32_t>> stop_word_;
};

inline constexpr uint64_t kGpfifoVa = 0x10000000, kUserdVa = 0x10100000, kPbVa = 0x10200000, kDataVa = 0x20000000;

// A pushbuffer under construction. Methods are named as NVIDIA's class headers name them; offsets and fields come
// from the facts tables.
class Push {
 public:
  // INC_METHOD: data to `first` and the methods after it.
  Push& inc(uint32_t sub, const nv::ClassMethods& cls, std::string_view first, std::initializer_list<uint32_t> data) {
    const nv::Method* m = cls.find(first);
    if (!m) throw std::logic_error("no method " + std::string(first));
    w.push_back(nv::pb::header(nv::SecOp::inc_method, sub, m->offset, static_cast<uint32_t>(data.size())));
    w.insert(w.end(), data.begin(), data.end());
    return *this;
  }
  Push& set_object(uint32_t sub, uint32_t class_id) {
    w.push_back(nv::pb::header(nv::SecOp::inc_method, sub, 0, 1));
    w.push_back(class_id);
    return *this;
  }
  std::vector<uint32_t> w;
};

// Field `field` of `method` set to `value` (a number) or to the enum called `value_name`.
inline uint32_t field(const nv::ClassMethods& cls, std::string_view method, std::string_view field, uint64_t value) {
  const nv::Method* m = cls.find(method);
  const nv::BitField* f = m ? m->field(field) : nullptr;
  if (!f) throw std::logic_error("no field " + std::string(method) + "." + std::string(field));
  return static_cast<uint32_t>(f->place(value));
}
inline uint32_t field(const nv::ClassMethods& cls, std::string_view method, std::string_view f, std::string_view name) {
  const nv::Method* m = cls.find(method);
  const nv::BitField* bf = m ? m->field(f) : nullptr;
  if (!bf || bf->value_of(name) == ~0u) throw std::logic_error("no enum " + std::string(f) + "=" + std::string(name));
  return static_cast<uint32_t>(bf->place(bf->value_of(name)));
}

// A channel on a TestHost: GPFIFO ring, USERD and a pushbuffer area per channel id.
class TestChannel {
 public:
  TestChannel(TestHost& host, EngineGroup& group, nv::NvArch arch, NvEngineKind kind, uint32_t entries = 16,
              uint32_t id = 1)
      : host_(host), info_(nv::arch_info(arch)) {
    desc_.arch = arch;
    desc_.channel_id = id;
    desc_.gpfifo_class = info_.classes.gpfifo;
    desc_.engine = kind;
    desc_.gpfifo_va = kGpfifoVa + (uint64_t{id} << 20);
    desc_.gpfifo_entries = entries;
    desc_.userd_va = kUserdVa + (uint64_t{id} << 12);
    pb_va_ = kPbVa + (uint64_t{id} << 22);
    host.map(desc_.gpfifo_va, uint64_t{entries} * 8);
    host.map(desc_.userd_va, 4096);
    host.map(pb_va_, 1 << 22);
    runner_ = group.create(desc_, host);
  }
  ~TestChannel() { runner_.reset(); }

  const nv::ClassMethods& host_class() const { return *nv::find_class(info_.classes.gpfifo); }
  const nv::ClassMethods& compute_class() const { return *nv::find_class(info_.classes.compute); }
  const nv::ClassMethods& copy_class() const { return *nv::find_class(info_.classes.copy); }

  // Writes `words` as a new pushbuffer segment and a GPFIFO entry for it; publishes GPPut and rings when `ring`.
  void submit(std::span<const uint32_t> words, bool ring = true) {
    const uint64_t va = pb_va_ + pb_off_;
    host_.write(va, words);
    pb_off_ = (pb_off_ + words.size() * 4 + 255) & ~uint64_t{255};
    entry(va, static_cast<uint32_t>(words.size()), ring);
  }
  // A raw GPFIFO entry for the segment [va, va + dwords*4).
  void entry(uint64_t va, uint32_t dwords, bool ring = true) {
    namespace gp = nv::gpfifo;
    raw_entry(gp::kGet.place(va >> 2) | gp::kGetHi.place(va >> 32) | gp::kLength.place(dwords) |
                  gp::kLevel.place(gp::kLevel.value_of("SUBROUTINE")),
              ring);
  }
  void raw_entry(uint64_t e, bool ring = true) {
    host_.set<uint64_t>(desc_.gpfifo_va + uint64_t{put_} * 8, e);
    put_ = (put_ + 1) % desc_.gpfifo_entries;
    if (ring) publish();
  }
  void publish() {
    host_.set<uint32_t>(desc_.userd_va + nv::gpfifo::kUserdGpPutOffset, put_);
    runner_->doorbell();
  }
  uint32_t gpget() { return host_.get<uint32_t>(desc_.userd_va + nv::gpfifo::kUserdGpGetOffset); }
  uint32_t gpput() const { return put_; }
  EngineRunner& runner() { return *runner_; }
  const ChannelDesc& desc() const { return desc_; }
  const nv::NvArchInfo& info() const { return info_; }
  RunnerState settle() {
    EXPECT_TRUE(runner_->wait_settled(std::chrono::seconds(5))) << runner_->describe();
    return runner_->state();
  }

 private:
  TestHost& host_;
  const nv::NvArchInfo& info_;
  ChannelDesc desc_;
  uint64_t pb_va_ = 0, pb_off_ = 0;
  uint32_t put_ = 0;
  std::unique_ptr<EngineRunner> runner_;
};

}  // namespace hcq::sim::nv_engine::testing
