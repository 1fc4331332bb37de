// One channel's host unit (PBDMA): fetches GPFIFO entries from GPGet to GPPut, decodes the pushbuffer segment each
// names (method headers INC, NON_INC, ONE_INC, IMMD; END_PB_SEGMENT), binds classes to subchannels (SET_OBJECT),
// executes host methods on every subchannel and hands the rest to the class engine bound there. Method data is
// kept per subchannel as the engines' state (the "shadow"); an engine acts when a trigger method arrives.
//
// Resumable: a method that must wait (a semaphore acquire not yet satisfied) leaves the cursor on its data word, so
// the next run() re-executes it; storing method state again is harmless.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nv/facts/bits.hpp"
#include "sim/nv_engine/channel_context.hpp"

namespace hcq::sim::nv_engine {

// What executing one method came to.
enum class Outcome : uint8_t { done, wait, fault };

// One method as the host hands it to a class engine: the method (from the class table), its data and the state of
// the subchannel it was sent on (data of every method so far, indexed by offset / 4, this one included).
struct MethodCall {
  const nv::ClassMethods& cls;
  const nv::Method& method;
  uint32_t data = 0;
  std::span<const uint32_t> state;
  Where at;

  uint32_t value(const nv::Method* m) const { return m ? state[m->offset / 4] : 0; }
};

// A class engine (host semaphores, compute, copy): what a trigger method does.
class ClassEngine {
 public:
  virtual ~ClassEngine() = default;
  virtual Outcome execute(const MethodCall& call) = 0;
  // What the engine waits for, after execute() returned wait.
  virtual std::string waiting_on() const { return {}; }
};

std::unique_ptr<ClassEngine> make_host_engine(ChannelContext& ctx, const nv::ClassMethods& cls);
std::unique_ptr<ClassEngine> make_compute_engine(ChannelContext& ctx, const nv::ClassMethods& cls);
std::unique_ptr<ClassEngine> make_copy_engine(ChannelContext& ctx, const nv::ClassMethods& cls);

class Executor {
 public:
  explicit Executor(ChannelContext& ctx);
  ~Executor();
  // Executes up to `budget` method data words (and the GPFIFO entries they sit in).
  Step run(size_t budget);
  std::string waiting_on() const;
  // "GPGet 3, GPPut 5" as USERD holds them now, for describe().
  std::string describe_pointers() const;

 private:
  static constexpr size_t kMethodWords = 4096;  // METHOD_ADDRESS is 12 bits of dwords

  struct Subchannel {
    const nv::ClassMethods* cls = nullptr;
    std::unique_ptr<ClassEngine> engine;
    std::vector<uint32_t> state;
  };

  Step fetch_entry();
  Step finish_entry();
  Step decode_header(uint32_t header);
  Outcome method(uint32_t subchannel, uint32_t offset, uint32_t data);
  Outcome set_object(uint32_t subchannel, uint32_t data);
  Step pbdma_fault(const std::string& reason) { return ctx_.fault(ChannelFaultKind::pbdma_error, where(), 0, reason); }
  Where where() const { return Where{get_, in_entry_ ? segment_va_ : 0, pos_}; }

  ChannelContext& ctx_;
  const nv::ClassMethods* host_cls_ = nullptr;
  std::unique_ptr<ClassEngine> host_engine_;
  std::vector<uint32_t> host_state_;
  std::array<Subchannel, 8> subchannels_;
  ClassEngine* waiting_engine_ = nullptr;

  // GPFIFO cursor: the entry at GPGet and where in its segment execution stands.
  uint32_t get_ = 0;
  bool in_entry_ = false;
  uint64_t segment_va_ = 0;
  std::vector<uint32_t> segment_;  // the segment's words, fetched when the entry starts (as the PBDMA does)
  uint32_t pos_ = 0;

  // The method header being executed: data words left, where the next goes.
  uint32_t remaining_ = 0;
  uint32_t subchannel_ = 0;
  uint32_t offset_ = 0;
  uint8_t sec_op_ = 0;
};

}  // namespace hcq::sim::nv_engine
