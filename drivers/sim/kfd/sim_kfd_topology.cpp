// The simulated KFD's files: /dev/kfd and the render nodes it opens, and the sysfs topology it reads.
#include "sim/kfd/sim_kfd.hpp"

#include <linux/kfd_ioctl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "amd/kfd/compat/kfd_runtime_enable.hpp"
#include "amd/target.hpp"
#include "hcq/backend/align.hpp"
#include "hcq/error.hpp"
#include "sim/common/memfd_backing.hpp"
#include "sim/kfd/sim_kfd_objects.hpp"

namespace hcq::sim {

using namespace sim_kfd_detail;

// ---------------------------------------------------------------------------------------------------------------
// Files and sysfs

namespace {
constexpr std::string_view kTopology = "/sys/devices/virtual/kfd/kfd/topology";
constexpr std::string_view kTopologyAlias = "/sys/class/kfd/kfd/topology";

// The path below the topology root ("" for the root itself), or nullopt if `path` is not in the topology.
std::optional<std::string> topology_rel(std::string_view path) {
  for (std::string_view root : {kTopology, kTopologyAlias}) {
    if (path.substr(0, root.size()) != root) continue;
    std::string_view rest = path.substr(root.size());
    while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
    if (rest.empty()) return std::string();
    if (rest.front() != '/') continue;
    return std::string(rest.substr(1));
  }
  return std::nullopt;
}

bool parse_uint(std::string_view s, uint32_t& out) {
  if (s.empty() || s.size() > 9) return false;
  out = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<uint32_t>(c - '0');
  }
  return true;
}
}  // namespace

bool SimKfd::handles_path(std::string_view path) const {
  if (path == "/dev/kfd" || topology_rel(path)) return true;
  constexpr std::string_view render = "/dev/dri/renderD";
  uint32_t minor = 0;
  if (path.substr(0, render.size()) != render || !parse_uint(path.substr(render.size()), minor)) return false;
  for (const auto& g : gpus_)
    if (g->render_minor == minor) return true;
  return false;
}

int SimKfd::open(const std::string& path, int /*flags*/) {
  File f{File::Kind::kfd, 0};
  if (path != "/dev/kfd") {
    constexpr std::string_view render = "/dev/dri/renderD";
    uint32_t minor = 0;
    if (std::string_view(path).substr(0, render.size()) != render ||
        !parse_uint(std::string_view(path).substr(render.size()), minor))
      return -ENOENT;  // sysfs files are read with read_file, not opened
    Gpu* g = gpu_by_minor(minor);
    if (g == nullptr) return -ENOENT;
    f = File{File::Kind::render, g->index};
  }
  std::lock_guard lock(mu_);
  const int id = next_file_++;
  files_.emplace(id, f);
  return id;
}

void SimKfd::close(int file) {
  std::vector<std::shared_ptr<Queue>> dying;
  {
    std::lock_guard lock(mu_);
    auto it = files_.find(file);
    if (it == files_.end()) return;
    const bool was_kfd = it->second.kind == File::Kind::kfd;
    files_.erase(it);
    // The KFD process goes away with the last /dev/kfd descriptor (the kernel keeps it until the address space
    // goes; a simulator that outlives many devices in one process must not).
    const bool any_kfd =
        std::any_of(files_.begin(), files_.end(), [](const auto& kv) { return kv.second.kind == File::Kind::kfd; });
    if (was_kfd && !any_kfd) teardown_process_locked(dying);
  }
}

std::optional<std::string> SimKfd::read_file(const std::string& path) {
  const std::optional<std::string> rel = topology_rel(path);
  if (!rel) return std::nullopt;
  if (*rel == "generation_id") return "1\n";
  if (*rel == "system_properties") return "platform_oem 0\nplatform_id 0\nplatform_rev 0\n";
  // nodes/<n>/<file>
  constexpr std::string_view nodes = "nodes/";
  if (rel->rfind(nodes, 0) != 0) return std::nullopt;
  const std::string_view rest = std::string_view(*rel).substr(nodes.size());
  const size_t slash = rest.find('/');
  uint32_t node = 0;
  if (slash == std::string_view::npos || !parse_uint(rest.substr(0, slash), node)) return std::nullopt;
  const std::string_view file = rest.substr(slash + 1);
  if (node == 0) {  // the CPU node
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    if (file == "gpu_id") return "0\n";
    if (file == "name") return "\n";
    if (file == "properties")
      return cat("cpu_cores_count ", cores, "\nsimd_count 0\nmem_banks_count 1\ncaches_count 0\nio_links_count ",
                 gpus_.size(), "\np2p_links_count 0\ncpu_core_id_base 0\nsimd_id_base 0\nmax_waves_per_simd 0\n",
                 "lds_size_in_kb 0\ngds_size_in_kb 0\nnum_gws 0\nwave_front_size 0\narray_count 0\n",
                 "simd_arrays_per_engine 0\ncu_per_simd_array 0\nsimd_per_cu 0\nmax_slots_scratch_cu 0\n",
                 "gfx_target_version 0\nvendor_id 0\ndevice_id 0\nlocation_id 0\ndomain 0\ndrm_render_minor 0\n",
                 "hive_id 0\nnum_sdma_engines 0\nnum_sdma_xgmi_engines 0\nnum_sdma_queues_per_engine 0\n",
                 "num_cp_queues 0\nmax_engine_clk_ccompute 3000\n");
    return std::nullopt;
  }
  if (node > gpus_.size()) return std::nullopt;
  const Gpu& g = *gpus_[node - 1];
  const SimGpuSpec& s = *g.spec;
  if (file == "gpu_id") return cat(g.gpu_id, "\n");
  if (file == "name") return cat(s.gfx, "\n");
  if (file == "mem_banks/0/properties")
    return cat("heap_type 1\nsize_in_bytes ", s.vram_bytes, "\nflags 0\nwidth 4096\nmem_clk_max 1300\n");
  if (file != "properties") return std::nullopt;
  // local_mem_size reads 0 on current kernels (the size is in mem_banks); capability bits as the parts report.
  return cat("cpu_cores_count 0\nsimd_count ", s.simd_count, "\nmem_banks_count 1\ncaches_count 0\n",
             "io_links_count 1\np2p_links_count 0\ncpu_core_id_base 0\nsimd_id_base ", 2147487744u + 4096 * g.index,
             "\nmax_waves_per_simd ", s.max_waves_per_simd, "\nlds_size_in_kb ", s.lds_size_in_kb,
             "\ngds_size_in_kb 0\nnum_gws 64\nwave_front_size ", s.wave_front_size, "\narray_count ", s.array_count,
             "\nsimd_arrays_per_engine ", s.simd_arrays_per_engine, "\ncu_per_simd_array ", s.cu_per_simd_array,
             "\nsimd_per_cu ", s.simd_per_cu, "\nmax_slots_scratch_cu 32\ngfx_target_version ", s.gfx_target_version,
             "\nvendor_id 4098\ndevice_id ", s.device_id, "\nlocation_id ", 768 + 256 * g.index,
             "\ndomain 0\ndrm_render_minor ", g.render_minor, "\nhive_id 0\nnum_sdma_engines ", s.num_sdma_engines,
             "\nnum_sdma_xgmi_engines ", s.num_sdma_xgmi_engines, "\nnum_sdma_queues_per_engine ",
             s.num_sdma_queues_per_engine, "\nnum_cp_queues ", s.num_cp_queues, "\nmax_engine_clk_fcompute ",
             s.max_engine_clk_fcompute, "\nlocal_mem_size 0\nfw_version ", s.fw_version,
             "\ncapability 671588992\ndebug_prop 1495\nsdma_fw_version ", s.sdma_fw_version, "\nunique_id ",
             0x5a17000000000000ull + g.gpu_id, "\nnum_xcc ", s.num_xcc, "\nmax_engine_clk_ccompute 3000\n");
}

std::vector<std::string> SimKfd::list_dir(const std::string& path) {
  const std::optional<std::string> rel = topology_rel(path);
  if (!rel) return {};
  if (rel->empty()) return {"generation_id", "nodes", "system_properties"};
  if (*rel == "nodes") {
    std::vector<std::string> v{"0"};
    for (const auto& g : gpus_) v.push_back(std::to_string(g->node));
    std::sort(v.begin(), v.end());
    return v;
  }
  constexpr std::string_view nodes = "nodes/";
  if (rel->rfind(nodes, 0) != 0) return {};
  const std::string_view rest = std::string_view(*rel).substr(nodes.size());
  const size_t slash = rest.find('/');
  uint32_t node = 0;
  if (!parse_uint(rest.substr(0, slash), node) || node > gpus_.size()) return {};
  const std::string_view sub = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  if (sub.empty()) return {"gpu_id", "io_links", "mem_banks", "name", "properties"};
  if (sub == "mem_banks") return {"0"};
  if (sub == "mem_banks/0") return {"properties"};
  return {};
}

}  // namespace hcq::sim
