// Runners: one per KFD queue, stepping its packet engine through the shared scheduling core
// (drivers/sim/common/runner_core.hpp): a simulator thread per queue (threaded mode) or the group's one shared
// thread (deterministic mode).
#include "sim/amd_engine/engine.hpp"
#include "sim/amd_engine/processor.hpp"

namespace hcq::sim::amd_engine {

namespace {
// Packets one queue runs per step, before the runner looks at stop requests (and, deterministic, at the next
// queue).
constexpr size_t kBudget = 64;

std::unique_ptr<Processor> make_processor(QueueContext& ctx) {
  switch (ctx.desc().type) {
    case SimQueueType::compute_pm4: return make_pm4_processor(ctx);
    case SimQueueType::sdma: return make_sdma_processor(ctx);
    case SimQueueType::compute_aql: return make_aql_processor(ctx);
  }
  return nullptr;
}

class Runner final : public EngineRunner, private SteppedEngine {
 public:
  Runner(const SimQueueDesc& desc, QueueHost& host, std::shared_ptr<EngineGroup::Shared> shared)
      : desc_(desc),
        ctx_(desc_, host, shared->options),
        shared_(std::move(shared)),
        proc_(make_processor(ctx_)),
        core_(*this, shared_->runners) {}

  void doorbell(uint64_t) override { core_.doorbell(); }

  std::string describe() const override {
    uint64_t r = 0, w = 0;
    const bool have_r = const_cast<QueueContext&>(ctx_).load<uint64_t>(desc_.rptr_va, r);
    const bool have_w = const_cast<QueueContext&>(ctx_).load<uint64_t>(desc_.wptr_va, w);
    return std::string(proc_->engine()) + " queue " + std::to_string(desc_.queue_id) + ": read pointer " +
           (have_r ? std::to_string(r) : "unmapped") + ", write pointer " + (have_w ? std::to_string(w) : "unmapped") +
           ", " + core_.state_text();
  }

  RunnerState state() const override { return core_.state(); }
  FaultRecord fault() const override {
    auto lk = core_.lock();
    return fault_;
  }
  bool wait_settled(std::chrono::milliseconds timeout) const override { return core_.wait_settled(timeout); }

 private:
  Step step() override { return proc_->run(kBudget); }
  std::string waiting_on() const override { return proc_->waiting_on(); }
  void keep_fault() override { fault_ = ctx_.last_fault(); }
  std::string fault_text() const override { return fault_.message(); }

  const SimQueueDesc desc_;
  QueueContext ctx_;
  std::shared_ptr<EngineGroup::Shared> shared_;
  std::unique_ptr<Processor> proc_;
  FaultRecord fault_;  // guarded by core_'s lock
  StepRunner core_;    // last: steps the members above, and stops before they go
};

}  // namespace

std::unique_ptr<EngineRunner> EngineGroup::create(const SimQueueDesc& desc, QueueHost& host) {
  if (!desc.target) throw std::invalid_argument("SimQueueDesc without a target");
  return std::make_unique<Runner>(desc, host, shared_);
}

QueueRunnerFactory make_queue_runner_factory(EngineOptions options) {
  auto group = std::make_shared<EngineGroup>(std::move(options));
  return [group](const SimQueueDesc& desc, QueueHost& host) -> std::unique_ptr<QueueRunner> {
    return group->create(desc, host);
  };
}

}  // namespace hcq::sim::amd_engine
