#include "sim/kfd/sim_amd_device.hpp"

#include <map>
#include <mutex>
#include <optional>

#include "amd/codeobj/code_object.hpp"
#include "amd/kfd/amd_device.hpp"
#include "cpu/cpu_compiler.hpp"
#include "hcq/error.hpp"
#include "sim/common/gpu_view.hpp"
#include "sim/kfd/sim_kfd.hpp"
#include "sim/sim_os.hpp"
#include "sim/twins/twin_registry.hpp"

namespace hcq::sim {

namespace {

// The shader array of one simulated GPU: host twins of the loaded kernels, and per kernel entry whether its
// user SGPRs start with the dispatch pointer (then the kernarg pointer is USER_DATA_2/3 rather than 0/1).
struct ShaderArray {
  TwinRegistry twins;
  cpu::CpuCompiler cpu_cc{real_os()};
  std::mutex mu;
  std::map<uint64_t, bool> dispatch_ptr_at_code;            // code VA -> the kernel wants the dispatch pointer
  std::map<uint64_t, std::vector<uint64_t>> code_of_image;  // image base -> its kernels' code VAs

  void loaded(uint64_t base, const amd::CodeObject& co) {
    twins.add_from_source(co, cpu_cc);  // 0 twins (IR without source): its dispatches fault with a clear reason
    twins.map_image(base, co);
    std::lock_guard lock(mu);
    std::vector<uint64_t>& codes = code_of_image[base];
    for (const amd::CodeObjectKernel& k : co.kernels()) {
      const uint64_t va = base + k.code_offset;
      dispatch_ptr_at_code[va] = (k.descriptor.kernel_code_properties & amd::KernelDescriptor::kDispatchPtr) != 0;
      codes.push_back(va);
    }
  }
  void unloaded(uint64_t base) {
    twins.unmap_image(base);
    std::lock_guard lock(mu);
    auto it = code_of_image.find(base);
    if (it == code_of_image.end()) return;
    for (uint64_t va : it->second) dispatch_ptr_at_code.erase(va);
    code_of_image.erase(it);
  }
  bool wants_dispatch_ptr(uint64_t code_va) {
    std::lock_guard lock(mu);
    auto it = dispatch_ptr_at_code.find(code_va);
    return it != dispatch_ptr_at_code.end() && it->second;
  }

  std::string dispatch(const amd_engine::DispatchInfo& d, QueueHost& host) {
    TwinDispatch t;
    if (d.queue_type == SimQueueType::compute_aql) {
      t.by = KernelRef::kernel_object;
      t.address = d.kernel_object;
      t.kernarg_va = d.kernarg_addr;
    } else {
      t.by = KernelRef::code_address;
      t.address = d.code_addr;
      t.kernarg_va = wants_dispatch_ptr(d.code_addr) ? d.user_data64(2) : d.user_data64(0);
    }
    t.groups = d.groups;
    t.local = d.local;
    const TwinMemory mem{[&host](uint64_t va, uint64_t size) { return host.translate(va, size); }, host.view()};
    std::optional<GuestFault> f;
    try {
      f = twins.run(t, mem);
    } catch (const FetchFault& e) {
      // A fetch the MMU refused (code, kernargs): the queue's page fault, as for a kernel's own access.
      throw amd_engine::MemoryFault(e.address(), e.what(),
                                    e.no_execute() ? MemoryFailure::no_execute : MemoryFailure::not_present);
    } catch (const Error& e) {
      return e.what();
    }
    if (f) {
      // Mapped but refused: a write (or atomic) to a page the GPU maps read-only.
      const std::optional<GpuView::Range> at = mem.view ? mem.view->find(f->va) : std::nullopt;
      const bool read_only = at && !at->writable && f->access != GuestAccess::read;
      throw amd_engine::MemoryFault(f->va,
                                    cat("kernel ", to_string(f->access), " of GPU VA ", hex(f->va), ", which the GPU ",
                                        read_only ? "maps read-only" : "does not map"),
                                    read_only ? MemoryFailure::read_only : MemoryFailure::not_present);
    }
    return {};
  }
};

}  // namespace

std::unique_ptr<Device> open_sim_amd_device(const std::string& name, const std::string& target,
                                            QueueRunnerFactory runner_factory, unsigned gpus) {
  if (gpus == 0) throw InvalidArgument(cat(name, ": a simulated machine needs at least one GPU"));
  auto kfd = std::make_shared<SimKfd>(std::vector<std::string>(gpus, target), std::move(runner_factory));
  auto os = std::make_shared<SimOs>(std::vector<std::shared_ptr<SimDriver>>{kfd});
  return amd::open_kfd_device_on(name, std::move(os), 0, "sim-kfd");
}

std::unique_ptr<Device> open_sim_amd_gpu(const std::string& name, const std::string& target,
                                         amd_engine::Scheduling scheduling, unsigned gpus) {
  // One shader array for the machine: host twins are found by GPU VA, which is unique across its GPUs.
  auto shaders = std::make_shared<ShaderArray>();
  amd_engine::EngineOptions o;
  o.scheduling = scheduling;
  o.dispatch = [shaders](const amd_engine::DispatchInfo& d, QueueHost& host) { return shaders->dispatch(d, host); };
  std::unique_ptr<Device> dev = open_sim_amd_device(name, target, amd_engine::make_queue_runner_factory(o), gpus);
  auto* amd = dynamic_cast<amd::AmdDevice*>(dev.get());
  if (!amd) throw UnsupportedDriver(cat(name, ": the simulated KFD did not open an AMD device"));
  amd::ProgramHooks hooks;
  hooks.loaded = [shaders](uint64_t base, const amd::CodeObject& co) { shaders->loaded(base, co); };
  hooks.unloaded = [shaders](uint64_t base) { shaders->unloaded(base); };
  amd->set_program_hooks(std::move(hooks));
  return dev;
}

std::unique_ptr<Device> open_sim_amd_peer(const std::string& name, Device& first, unsigned index) {
  auto* amd = dynamic_cast<amd::AmdDevice*>(&first);
  if (!amd || amd->info().interface != "sim-kfd")
    throw InvalidArgument(cat(name, ": ", first.name(), " is not a simulated AMD GPU"));
  std::unique_ptr<Device> dev = amd::open_kfd_device_on(name, amd->shared_os(), index, "sim-kfd");
  static_cast<amd::AmdDevice&>(*dev).set_program_hooks(amd->program_hooks());
  return dev;
}

}  // namespace hcq::sim
