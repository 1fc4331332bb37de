#include "sim/nv/sim_nv_device.hpp"

#include "cpu/cpu_compiler.hpp"
#include "hcq/error.hpp"
#include "nv/rm/nv_device.hpp"
#include "sim/nv_engine/twin_launch.hpp"
#include "sim/sim_os.hpp"
#include "sim/twins/nv_twins.hpp"
#include "sim/twins/twin_registry.hpp"

namespace hcq::sim {

namespace {

// The SMs of one simulated GPU: host twins of the loaded cubins, built when a program is loaded (from the source the
// NV compiler embeds) and mapped at the image's GPU VA, so a QMD's program address finds its twin.
struct ShaderArray {
  TwinRegistry twins;
  cpu::CpuCompiler cpu_cc{real_os()};

  void loaded(uint64_t base, const nv::Cubin& cubin) {
    add_from_source(twins, cubin, cpu_cc);  // 0 twins (no source): its launches fault with a clear reason
    twins.map_image(base, image_of(cubin, base));
  }
  void unloaded(uint64_t base) { twins.unmap_image(base); }
};

// What the simulated GPU `gpu` of `driver` knows of a channel (its token is its channel id). Holds the driver
// weakly: the device's Os owns it.
nv::NvDevice::ChannelDetails channel_details(const std::shared_ptr<SimNv>& driver, size_t gpu) {
  return [weak = std::weak_ptr<SimNv>(driver), gpu](const nv::NvChannelView& ch) {
    const std::shared_ptr<SimNv> d = weak.lock();
    return d ? d->describe_channel(gpu, ch.token) : std::string();
  };
}

// "<gpu>-gvisor" names the GPU <gpu> as a process sees it inside gVisor with the proxy's default capabilities.
constexpr std::string_view kBehindNvproxy = "-gvisor";

}  // namespace

std::unique_ptr<Device> open_sim_nv_device(const std::string& name, const std::string& gpu,
                                           ChannelRunnerFactory runner_factory, const std::string& driver_version) {
  auto driver = std::make_shared<SimNv>(std::vector<std::string>{gpu}, std::move(runner_factory), driver_version);
  auto os = std::make_shared<SimOs>(std::vector<std::shared_ptr<SimDriver>>{driver});
  std::unique_ptr<Device> dev = nv::open_nv_device_on(name, std::move(os), 0, "sim-rm");
  static_cast<nv::NvDevice&>(*dev).set_channel_details(channel_details(driver, 0));
  return dev;
}

std::unique_ptr<Device> open_sim_nv_gpu(const std::string& name, const std::string& gpu,
                                        nv_engine::Scheduling scheduling, unsigned gpus) {
  if (gpus == 0) throw InvalidArgument(cat(name, ": a simulated machine of 0 GPUs"));
  // The shader array outlives every runner: the launcher (held by the factory, held by the driver, held by the
  // device's Os) keeps it.
  auto shaders = std::make_shared<ShaderArray>();
  nv_engine::EngineOptions o;
  o.scheduling = scheduling;
  o.launch = [shaders, launch = nv_engine::twin_launcher(shaders->twins)](
                 const nv_engine::Launch& l, ChannelHost& host) { return launch(l, host); };
  const bool behind_nvproxy = gpu.ends_with(kBehindNvproxy);
  const std::string model = behind_nvproxy ? gpu.substr(0, gpu.size() - kBehindNvproxy.size()) : gpu;
  auto driver = std::make_shared<SimNv>(std::vector<std::string>(gpus, model),
                                        nv_engine::make_channel_runner_factory(std::move(o)));
  if (behind_nvproxy) driver->refuse_as_nvproxy();
  auto os = std::make_shared<SimOs>(std::vector<std::shared_ptr<SimDriver>>{driver});
  std::unique_ptr<Device> dev = nv::open_nv_device_on(name, std::move(os), 0, "sim-rm");
  auto* nvd = dynamic_cast<nv::NvDevice*>(dev.get());
  if (nvd == nullptr) throw UnsupportedDriver(cat(name, ": the simulated RM did not open an NVIDIA device"));
  nv::NvProgramHooks hooks;
  hooks.loaded = [shaders](uint64_t base, const nv::Cubin& cubin) { shaders->loaded(base, cubin); };
  hooks.unloaded = [shaders](uint64_t base) { shaders->unloaded(base); };
  nvd->set_program_hooks(std::move(hooks));
  nvd->set_channel_details(channel_details(driver, 0));
  return dev;
}

std::unique_ptr<Device> open_sim_nv_peer(const std::string& name, Device& first, unsigned index) {
  auto* nvd = dynamic_cast<nv::NvDevice*>(&first);
  if (nvd == nullptr || nvd->info().interface != "sim-rm")
    throw InvalidArgument(cat(name, ": ", first.name(), " is not a simulated NVIDIA GPU"));
  std::shared_ptr<Os> os = nvd->shared_os();
  auto* sim_os = dynamic_cast<SimOs*>(os.get());
  std::shared_ptr<SimNv> driver;
  if (sim_os != nullptr)
    for (const std::shared_ptr<SimDriver>& d : sim_os->drivers())
      if (auto nv = std::dynamic_pointer_cast<SimNv>(d)) driver = nv;
  if (!driver) throw InvalidArgument(cat(name, ": ", first.name(), " is not over a simulated NVIDIA driver"));
  std::unique_ptr<Device> dev = nv::open_nv_device_on(name, std::move(os), index, "sim-rm");
  auto& peer = static_cast<nv::NvDevice&>(*dev);
  peer.set_program_hooks(nvd->program_hooks());
  peer.set_channel_details(channel_details(driver, index));
  return dev;
}

}  // namespace hcq::sim
