// UVM ioctls (/dev/nvidia-uvm): command numbers from drivers/nv/rm/abi/uvm.hpp to names, and their blocks decoded.
#include <string>

#include "nv/rm/abi/uvm.hpp"
#include "trace/ioctl_args.hpp"

namespace hcq::trace::detail {
namespace {

template <class Block>
void uvm_status(const void* p, Args& a, DecodedIoctl&) {
  a.status(load<Block>(p).status);
}
void uvm_initialize(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<abi::UvmInitializeParams>(p);
  a.num("flags", v.flags).status(v.status);
}
void uvm_mm_initialize(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<abi::UvmMmInitializeParams>(p);
  a.sint("uvmFd", v.uvm_fd).status(v.status);
}
void uvm_register_gpu(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<abi::UvmRegisterGpuParams>(p);
  a.sint("rmCtrlFd", v.rm_ctrl_fd).num("hClient", v.client).num("numaEnabled", v.numa_enabled);
  a.sint("numaNodeId", v.numa_node_id).status(v.status);
}
void uvm_register_vaspace(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<abi::UvmRegisterGpuVaspaceParams>(p);
  a.sint("rmCtrlFd", v.rm_ctrl_fd).num("hClient", v.client).num("hVaSpace", v.vaspace).status(v.status);
}
void uvm_register_channel(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<abi::UvmRegisterChannelParams>(p);
  a.sint("rmCtrlFd", v.rm_ctrl_fd).num("hClient", v.client).num("hChannel", v.channel);
  a.num("base", v.base).num("length", v.length).status(v.status);
}
void uvm_unregister_channel(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<abi::UvmUnregisterChannelParams>(p);
  a.num("hClient", v.client).num("hChannel", v.channel).status(v.status);
}
void uvm_range(const void* p, Args& a, DecodedIoctl&) {  // CREATE_EXTERNAL_RANGE and FREE share the layout
  const auto v = load<abi::UvmFreeParams>(p);
  a.num("base", v.base).num("length", v.length).status(v.status);
}
void uvm_map_external(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<abi::UvmMapExternalAllocationParams>(p);
  a.num("base", v.base).num("length", v.length).num("offset", v.offset).num("gpuAttributesCount", v.gpu_count);
  a.sint("rmCtrlFd", v.rm_ctrl_fd).num("hClient", v.client).num("hMemory", v.memory).status(v.status);
}
void uvm_unmap_external(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<abi::UvmUnmapExternalParams>(p);
  a.num("base", v.base).num("length", v.length).status(v.status);
}

#define UVM(NAME, CMD, FN) {abi::uvm::CMD, "UVM_" #NAME, FN}
const Entry kUvm[] = {
    UVM(INITIALIZE, initialize, uvm_initialize),
    {abi::uvm::deinitialize, "UVM_DEINITIALIZE", nullptr},
    UVM(REGISTER_GPU_VASPACE, register_gpu_vaspace, uvm_register_vaspace),
    UVM(UNREGISTER_GPU_VASPACE, unregister_gpu_vaspace, uvm_status<abi::UvmUnregisterGpuVaspaceParams>),
    UVM(REGISTER_CHANNEL, register_channel, uvm_register_channel),
    UVM(UNREGISTER_CHANNEL, unregister_channel, uvm_unregister_channel),
    {abi::uvm::enable_peer_access, "UVM_ENABLE_PEER_ACCESS", nullptr},
    UVM(UNMAP_EXTERNAL, unmap_external, uvm_unmap_external),
    UVM(MAP_EXTERNAL_ALLOCATION, map_external_allocation, uvm_map_external),
    UVM(FREE, free, uvm_range),
    UVM(REGISTER_GPU, register_gpu, uvm_register_gpu),
    UVM(UNREGISTER_GPU, unregister_gpu, uvm_status<abi::UvmUnregisterGpuParams>),
    UVM(CREATE_EXTERNAL_RANGE, create_external_range, uvm_range),
    UVM(MM_INITIALIZE, mm_initialize, uvm_mm_initialize),
};
#undef UVM

}  // namespace

DecodedIoctl decode_uvm(unsigned long request, const void* arg, bool readable) {
  DecodedIoctl d;
  d.family = Family::uvm;
  for (const Entry& e : kUvm) {
    if (e.request == request) {
      run_entry(e, arg, readable, d);
      return d;
    }
  }
  d.name = "UVM_" + std::to_string(request);
  return d;
}

}  // namespace hcq::trace::detail
