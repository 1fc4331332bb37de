// The two pieces of a simulated engine's public face that do not depend on the GPU: the runner interface tests and
// hang reports use past the driver's seam, and the group that makes runners with one set of options and keeps what
// they share alive. Each engine names them with its own types (drivers/sim/{amd,nv}_engine/engine.hpp).
#pragma once

#include <chrono>
#include <memory>
#include <utility>

#include "sim/common/runner_core.hpp"

namespace hcq::sim {

// The runner an engine's factory makes. Seam: the driver's runner interface (QueueRunner, ChannelRunner); Fault: the
// engine's fault record.
template <class Seam, class Fault>
class EngineRunnerOf : public Seam {
 public:
  virtual RunnerState state() const = 0;
  // The fault that stopped the runner (reason empty if none).
  virtual Fault fault() const = 0;
  // Waits until the runner has looked at the ring since the last doorbell and is idle, waiting or faulted.
  // False on timeout.
  virtual bool wait_settled(std::chrono::milliseconds timeout) const = 0;
};

// Makes runners with one set of options (the engine adds create()). In the deterministic mode its runners share one
// simulator thread, which the group owns with them (it ends when the group and its last runner are gone).
// Options: the engine's options, with scheduling, poll_min and poll_max.
template <class Options>
class EngineGroupOf {
 public:
  explicit EngineGroupOf(Options options) : shared_(std::make_shared<Shared>(std::move(options))) {}
  EngineGroupOf(const EngineGroupOf&) = delete;
  EngineGroupOf& operator=(const EngineGroupOf&) = delete;

  const Options& options() const { return shared_->options; }

  // What the group and its runners share: the options (the runners' contexts refer to them) and the scheduling.
  struct Shared {
    explicit Shared(Options o)
        : options(std::move(o)), runners(options.scheduling, options.poll_min, options.poll_max) {}
    Options options;
    RunnerGroup runners;
  };

 protected:
  std::shared_ptr<Shared> shared_;
};

}  // namespace hcq::sim
