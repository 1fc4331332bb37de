#include "sim/nv_engine/twin_launch.hpp"

#include "sim/nv_engine/access_trap.hpp"
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
    // What the GPU does not map, the twin gets as a trap's stand-in: the kernel runs, and its first access there is
    // the MMU fault, with the access it was (access_trap.hpp).
    AccessTrap trap;
    twins.run(d, [&host, &trap](uint64_t va, uint64_t size) {
      std::byte* p = host.translate(va, size);
      return p ? p : trap.stand_in(va);
    });
    if (const std::optional<AccessTrap::Access> a = trap.first_fault()) throw KernelAccessFault(a->va, a->access);
    return {};
  };
}

}  // namespace hcq::sim::nv_engine
