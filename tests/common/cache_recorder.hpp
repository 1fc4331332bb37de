// What a test host (an engine's QueueHost or ChannelHost double) records of the cache actions the engine reports
// through caches(): each one in order, and an optional hook that runs at the call, on the engine's thread, so a test
// can look at memory as it stands at that moment.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace hcq::test {

class CacheRecorder {
 public:
  void record(uint8_t ops) {
    if (on_caches) on_caches(ops);
    std::lock_guard<std::mutex> lk(mu_);
    ops_.push_back(ops);
  }
  std::vector<uint8_t> cache_ops() {
    std::lock_guard<std::mutex> lk(mu_);
    return ops_;
  }
  std::function<void(uint8_t)> on_caches;

 private:
  std::mutex mu_;
  std::vector<uint8_t> ops_;
};

}  // namespace hcq::test
