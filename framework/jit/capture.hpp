// The JIT's capture (call 1): installed as this thread's engine capture sink (engine/realize.hpp) while the jitted
// function runs, it keeps every realize's schedule and bound buffers, in order, instead of letting them run.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "framework/engine/realize.hpp"
#include "framework/schedule/schedule.hpp"

namespace hcq::fw {

class Capture : public CaptureSink {
 public:
  // `inputs`: the BUFFER nodes the jitted function gets for its tensor inputs (null for a bound Variable), and the
  // inputs' shapes. Any other node over one of their buffers is a tensor the function closes over that is also an
  // input: JitError.
  Capture(std::vector<Node> inputs, std::vector<Shape> shapes)
      : inputs_(std::move(inputs)), shapes_(std::move(shapes)) {}

  struct Record {
    std::shared_ptr<const Schedule> schedule;   // owns the kernels the steps launch
    std::vector<std::shared_ptr<Buffer>> bufs;  // per slot
    std::vector<Node> bound;                    // per variable of the schedule: the BIND that gave its value
  };

  void record(std::shared_ptr<const Schedule> schedule, std::vector<std::shared_ptr<Buffer>> bufs,
              std::vector<Node> bound, const std::vector<Node>& params) override;
  // A host read cannot be captured: the replay would not read again, and nothing has run yet to read.
  [[noreturn]] void host_read() override;
  void rng_draw(const Node& key, uint64_t k) override;

  // A random tensor the function built: the variable its key is bound to, and which draw it was.
  struct Draw {
    Node key;
    uint64_t k;
  };

  const std::vector<Record>& records() const { return records_; }
  const std::vector<Draw>& draws() const { return draws_; }

 private:
  std::vector<Node> inputs_;
  std::vector<Shape> shapes_;
  std::vector<Record> records_;
  std::vector<Draw> draws_;
};

// Installs a sink on this thread for its lifetime (and puts the previous one back).
class CaptureScope {
 public:
  explicit CaptureScope(CaptureSink& sink) : previous_(set_capture_sink(&sink)) {}
  ~CaptureScope() { set_capture_sink(previous_); }
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;

 private:
  CaptureSink* previous_;
};

}  // namespace hcq::fw
