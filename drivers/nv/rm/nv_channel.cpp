#include "nv/rm/nv_channel.hpp"

#include <cstring>

#include "hcq/backend/process.hpp"
#include "hcq/error.hpp"
#include "hcq/memory.hpp"
#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/ctrl.hpp"

namespace hcq::nv {

using namespace abi;

namespace {
// RM writes channel error notifications here; one page holds them all.
constexpr uint64_t kNotifierBytes = 4096;
// UVM maps a channel's instance block and context buffers into a range of our VA it is given: 64 MiB, as CUDA
// reserves per channel.
constexpr uint64_t kChannelUvmRange = uint64_t{64} << 20;
constexpr uint64_t kChannelUvmAlign = uint64_t{2} << 20;
}  // namespace

NvChannelGroup::NvChannelGroup(NvGpu& gpu, const std::vector<NvEngine>& engines, uint32_t entries) : gpu_(gpu) {
  if (entries < 64 || entries > (1u << 20) || (entries & (entries - 1)) != 0)
    throw InvalidArgument(cat(gpu.describe(), ": a GPFIFO ring of ", entries, " entries (a power of two 64..2^20)"));
  RmClient& rm = gpu.rm();
  const NvClasses& cls = gpu.facts().arch->classes;
  ChannelGroupAllocParams g{};
  g.engine_type = engine_type::graphics;  // compute and copy channels share one graphics TSG
  group_ = RmObject(rm, gpu.device(), rm.alloc(gpu.device(), cls.channel_group, g));
  ContextShareAllocParams cs{};
  cs.vaspace = gpu.vaspace();
  cs.flags = kContextShareAsync;
  context_share_ = RmObject(rm, group_.handle(), rm.alloc(group_.handle(), cls.context_share, cs));
  for (NvEngine e : engines) channels_.push_back(make_channel(e, entries));
  GpfifoScheduleParams s{};
  s.enable = 1;
  rm.control(group_.handle(), ctrl::channel_group_gpfifo_schedule, &s, rm.branch().controls.gpfifo_schedule);
}

NvChannelGroup::~NvChannelGroup() {
  while (!channels_.empty()) channels_.pop_back();  // last made, first freed
  context_share_.reset();
  group_.reset();
}

std::unique_ptr<NvChannel> NvChannelGroup::make_channel(NvEngine engine, uint32_t entries) {
  RmClient& rm = gpu_.rm();
  const NvClasses& cls = gpu_.facts().arch->classes;
  std::unique_ptr<NvChannel> c(new NvChannel(gpu_));
  NvChannelView& v = c->view_;
  v.engine = engine;
  v.entries = entries;
  v.gpfifo_class = cls.gpfifo;
  v.engine_class = engine == NvEngine::compute ? cls.compute : cls.copy;

  // Ring then USERD, in VRAM the host writes (entries * 8 is a multiple of the 512-byte USERD alignment).
  const uint64_t ring_bytes = uint64_t{entries} * 8;
  NvAllocOptions ro;
  ro.cpu_access = true;
  ro.contiguous = true;
  c->ring_ = gpu_.alloc(ring_bytes + kUserdSize, ro);
  std::memset(c->ring_->host(), 0, ring_bytes + kUserdSize);
  v.ring = static_cast<uint64_t*>(c->ring_->host());
  v.ring_va = c->ring_->va();
  v.userd = reinterpret_cast<volatile uint32_t*>(static_cast<std::byte*>(c->ring_->host()) + ring_bytes);
  v.userd_va = v.ring_va + ring_bytes;

  NvAllocOptions no;
  no.where = NvAllocOptions::Where::rm_sysmem;
  no.cpu_access = true;  // polled by the device's waits (NvDevice::poll_fault)
  c->notifier_ = gpu_.alloc(kNotifierBytes, no);
  std::memset(c->notifier_->host(), 0, kNotifierBytes);
  v.error_notifier = static_cast<const volatile ErrorNotification*>(c->notifier_->host());

  ChannelAllocParams p{};
  p.error_notifier = c->notifier_->handle();
  p.buffer = c->ring_->handle();
  p.gpfifo_offset = v.ring_va;
  p.gpfifo_entries = entries;
  p.context_share = context_share_.handle();
  p.userd_memory[0] = c->ring_->handle();
  p.userd_offset[0] = ring_bytes;
  p.engine_type = 0;  // taken from the group
  c->channel_ = RmObject(rm, group_.handle(), rm.alloc(group_.handle(), cls.gpfifo, p));
  v.channel = c->channel_.handle();
  c->engine_object_ = RmObject(rm, v.channel, rm.alloc(v.channel, v.engine_class));
  v.engine_object = c->engine_object_.handle();

  WorkSubmitTokenParams t{};
  t.token = 0xffffffff;
  rm.control(v.channel, ctrl::gpfifo_get_work_submit_token, t);
  v.token = t.token;
  v.doorbell = gpu_.doorbell();

  c->uvm_length_ = kChannelUvmRange;
  c->uvm_base_ = process().va.alloc(c->uvm_length_, kChannelUvmAlign);
  gpu_.uvm().register_channel(gpu_.facts().uuid, rm.ctl_fd(), rm.root(), v.channel, c->uvm_base_, c->uvm_length_);
  c->uvm_registered_ = true;
  return c;
}

NvChannel::~NvChannel() {
  if (uvm_registered_) gpu_.uvm().unregister_channel(gpu_.facts().uuid, gpu_.rm().root(), view_.channel);
  engine_object_.reset();
  channel_.reset();
  if (uvm_base_) {
    try {
      process().va.free(uvm_base_, uvm_length_);
    } catch (const Error&) {
      // Only a range it did not hand out: cannot happen for one we took from it.
    }
  }
  notifier_.reset();
  ring_.reset();
}

}  // namespace hcq::nv
