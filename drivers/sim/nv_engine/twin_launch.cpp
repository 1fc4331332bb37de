#include "sim/nv_engine/twin_launch.hpp"

#include "twins/twin_registry.hpp"

namespace hcq::sim::nv_engine {
namespace {

MmuAccess mmu_access(GuestAccess a) {
  switch (a) {
    case GuestAccess::read: return MmuAccess::read;
    case GuestAccess::write: return MmuAccess::write;
    case GuestAccess::atomic: return MmuAccess::atomic;
  }
  return MmuAccess::read;
}

}  // namespace

LaunchFn twin_launcher(const TwinRegistry& twins) {
  return [&twins](const Launch& l, ChannelHost& host) -> std::string {
    TwinDispatch d;
    d.by = KernelRef::code_address;
    d.address = l.program_va;
    d.kernarg_va = l.cbank0_va;  // the registry adds the kernel's own parameter offset (its cubin says where)
    d.groups = l.groups;
    d.local = l.local;
    for (const Launch::Bank& b : l.banks) d.banks.push_back({b.bank, b.va, b.size});
    // The twin runs on the GPU's mirror: its first access to memory the GPU does not map is the SM's MMU fault, with
    // the access it was (guarded_run.hpp).
    const TwinMemory mem{[&host](uint64_t va, uint64_t size) { return host.translate(va, size); }, host.view()};
    if (const std::optional<GuestFault> f = twins.run(d, mem)) throw KernelAccessFault(f->va, mmu_access(f->access));
    return {};
  };
}

}  // namespace hcq::sim::nv_engine
