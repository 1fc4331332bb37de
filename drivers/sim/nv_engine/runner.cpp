// Runners: one per GPFIFO channel, stepping its executor through the shared scheduling core
// (drivers/sim/common/runner_core.hpp): a simulator thread per channel (threaded mode) or the group's one shared
// thread (deterministic mode).
#include <stdexcept>

#include "sim/nv_engine/engine.hpp"
#include "sim/nv_engine/executor.hpp"

namespace hcq::sim::nv_engine {

namespace {
// Methods one channel runs per step, before the runner looks at stop requests (and, deterministic, at the next
// channel).
constexpr size_t kBudget = 256;

class Runner final : public EngineRunner, private SteppedEngine {
 public:
  Runner(const ChannelDesc& desc, ChannelHost& host, std::shared_ptr<EngineGroup::Shared> shared)
      : desc_(desc),
        ctx_(desc_, host, shared->options),
        exec_(ctx_),
        shared_(std::move(shared)),
        core_(*this, shared_->runners) {}

  void doorbell() override { core_.doorbell(); }

  std::string describe() const override {
    return std::string(desc_.engine == NvEngineKind::compute ? "compute" : "copy") + " channel " +
           std::to_string(desc_.channel_id) + ": " + exec_.describe_pointers() + ", " + core_.state_text();
  }

  RunnerState state() const override { return core_.state(); }
  ChannelFault fault() const override {
    auto lk = core_.lock();
    return fault_;
  }
  bool wait_settled(std::chrono::milliseconds timeout) const override { return core_.wait_settled(timeout); }

 private:
  Step step() override { return exec_.run(kBudget); }
  std::string waiting_on() const override { return exec_.waiting_on(); }
  void keep_fault() override { fault_ = ctx_.last_fault(); }
  std::string fault_text() const override { return fault_.reason; }

  const ChannelDesc desc_;
  ChannelContext ctx_;
  Executor exec_;
  std::shared_ptr<EngineGroup::Shared> shared_;
  ChannelFault fault_;  // guarded by core_'s lock
  StepRunner core_;     // last: steps the members above, and stops before they go
};

}  // namespace

std::unique_ptr<EngineRunner> EngineGroup::create(const ChannelDesc& desc, ChannelHost& host) {
  if (desc.gpfifo_entries == 0 || (desc.gpfifo_entries & (desc.gpfifo_entries - 1)))
    throw std::invalid_argument("ChannelDesc: GPFIFO entry count " + std::to_string(desc.gpfifo_entries) +
                                " is not a power of two");
  return std::make_unique<Runner>(desc, host, shared_);
}

ChannelRunnerFactory make_channel_runner_factory(EngineOptions options) {
  auto group = std::make_shared<EngineGroup>(std::move(options));
  return [group](const ChannelDesc& desc, ChannelHost& host) -> std::unique_ptr<ChannelRunner> {
    return group->create(desc, host);
  };
}

}  // namespace hcq::sim::nv_engine
