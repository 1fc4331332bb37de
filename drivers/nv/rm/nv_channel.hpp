// GPFIFO channels: a channel group (TSG) with its context share, and in it the channels queues submit to. Each
// channel has its ring and USERD in one VRAM allocation mapped on the host, an engine object bound (compute or copy),
// its work-submit token, and is registered with UVM. RAII: the group frees its channels, then itself.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nv/facts/gpfifo.hpp"
#include "nv/rm/abi/notifier.hpp"
#include "nv/rm/nv_gpu.hpp"

namespace hcq::nv {

enum class NvEngine { compute, copy };

// What a queue needs of its channel. Pointers stay valid while the channel lives.
struct NvChannelView {
  NvEngine engine;
  abi::Handle channel = 0, engine_object = 0;
  uint32_t gpfifo_class = 0, engine_class = 0;
  uint64_t* ring = nullptr;  // host view of the GPFIFO entries
  uint64_t ring_va = 0;      // their GPU VA
  uint32_t entries = 0;
  volatile uint32_t* userd = nullptr;  // host view of USERD (GPGet, GPPut: gpfifo.hpp)
  uint64_t userd_va = 0;
  volatile uint32_t* doorbell = nullptr;  // the usermode NOTIFY_CHANNEL_PENDING register
  uint32_t token = 0;                     // what to store there to ring this channel
  // Host view of the channel's error notifier: RM writes an abi::ErrorNotification there when it stops the channel
  // after a fault (nv/rm/abi/notifier.hpp).
  const volatile abi::ErrorNotification* error_notifier = nullptr;
  volatile uint32_t* gp_get() const { return userd + gpfifo::kUserdGpGetOffset / 4; }
  volatile uint32_t* gp_put() const { return userd + gpfifo::kUserdGpPutOffset / 4; }
};

class NvChannelGroup;

class NvChannel {
 public:
  NvChannel(const NvChannel&) = delete;
  NvChannel& operator=(const NvChannel&) = delete;
  ~NvChannel();
  const NvChannelView& view() const { return view_; }

 private:
  friend class NvChannelGroup;
  explicit NvChannel(NvGpu& gpu) : gpu_(gpu) {}
  NvGpu& gpu_;
  NvChannelView view_{};
  std::unique_ptr<NvMemory> ring_;      // entries * 8 bytes of ring, then USERD
  std::unique_ptr<NvMemory> notifier_;  // where RM writes the channel's errors (mapped on the host)
  RmObject channel_, engine_object_;
  uint64_t uvm_base_ = 0, uvm_length_ = 0;
  bool uvm_registered_ = false;
};

// A channel group on `gpu` with one channel per engine in `engines`, each with a ring of `entries` GPFIFO entries
// (a power of two, 64 .. 2^20), scheduled once all exist.
class NvChannelGroup {
 public:
  NvChannelGroup(NvGpu& gpu, const std::vector<NvEngine>& engines, uint32_t entries);
  ~NvChannelGroup();
  NvChannelGroup(const NvChannelGroup&) = delete;
  NvChannelGroup& operator=(const NvChannelGroup&) = delete;
  size_t size() const { return channels_.size(); }
  const NvChannel& channel(size_t i) const { return *channels_.at(i); }

 private:
  std::unique_ptr<NvChannel> make_channel(NvEngine engine, uint32_t entries);
  NvGpu& gpu_;
  RmObject group_, context_share_;
  std::vector<std::unique_ptr<NvChannel>> channels_;
};

}  // namespace hcq::nv
