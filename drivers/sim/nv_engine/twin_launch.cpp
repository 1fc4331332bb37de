#include "sim/nv_engine/twin_launch.hpp"

#include "twins/twin_registry.hpp"

namespace hcq::sim::nv_engine {

LaunchFn twin_launcher(const TwinRegistry& twins) {
  return [&twins](const Launch& l, ChannelHost& host) -> std::string {
    TwinDispatch d;
    d.by = KernelRef::code_address;
    d.address = l.program_va;
    d.kernarg_va = l.cbank0_va;  // the registry adds the kernel's own parameter offset (its cubin says where)
    d.groups = l.groups;
    d.local = l.local;
    twins.run(d, [&host](uint64_t va, uint64_t size) { return host.translate(va, size); });
    return {};
  };
}

}  // namespace hcq::sim::nv_engine
