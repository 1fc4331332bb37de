// Why a GPU on the PCI bus is not usable: every reason, from fabricated facts; the facts gathered through a
// fabricated sysfs, /dev and /proc; the NVIDIA version parser; and what libdrm / KFD are asked (never a simulator's
// fd handed to libdrm).
#include "common/gpu_diagnosis.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>

#include "amd/kfd/drm_query.hpp"
#include "nv/rm/abi/branch.hpp"
#include "sim/kfd/sim_kfd.hpp"
#include "sim/sim_os.hpp"

namespace hcq {
namespace {

constexpr const char* kOpen580 =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  (dvs-builder@U16-I3-B03-4-3)"
    "  Sun Jul 27 07:09:12 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
constexpr const char* kProprietary550 =
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
constexpr const char* kOpen575 =
    "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  575.57.08  Release Build  (dvs-builder@U16-I3-B03-4-3)"
    "  Sat May 24 07:12:41 UTC 2025\n";

constexpr NodeAccess kOk{NodeAccess::State::ok, 0};
constexpr NodeAccess kAbsent{NodeAccess::State::absent, ENOENT};
constexpr NodeAccess kNoPermission{NodeAccess::State::no_permission, EACCES};

PciGpu amd_gpu(std::string driver = "amdgpu") {
  PciGpu g;
  g.address = "0000:03:00.0";
  g.vendor_id = kPciVendorAmd;
  g.device_id = 0x744c;
  g.class_code = 0x030000;
  g.kernel_driver = std::move(driver);
  g.render_minors = {128};
  return g;
}

PciGpu nv_gpu(std::string driver = "nvidia") {
  PciGpu g;
  g.address = "0000:41:00.0";
  g.vendor_id = kPciVendorNvidia;
  g.device_id = 0x2335;
  g.class_code = 0x030200;
  g.kernel_driver = std::move(driver);
  return g;
}

// Everything in place for one AMD GPU: KFD 1.11 lists it, every node opens.
GpuFacts usable_amd() {
  GpuFacts f;
  f.pci.gpus = {amd_gpu()};
  f.amdgpu_loaded = true;
  f.kfd = kOk;
  f.kfd_version = KfdVersion{1, 11};
  f.kfd_render_minors = {128};
  f.render_nodes[128] = kOk;
  return f;
}

// Everything in place for one NVIDIA GPU on the open 580 driver.
GpuFacts usable_nv() {
  GpuFacts f;
  f.pci.gpus = {nv_gpu()};
  f.nvidia_loaded = f.nvidia_uvm_loaded = true;
  f.nvidiactl = f.nvidia_uvm = kOk;
  f.nvidia_minor_by_address["0000:41:00.0"] = 0;
  f.nvidia_nodes[0] = kOk;
  f.nvidia_version_text = kOpen580;
  f.nvidia_module = NvidiaModule{"580.65.06", 580, true};
  return f;
}

BackendSupport support() {
  BackendSupport s;
  s.kfd_major = 1;
  s.kfd_min_minor = 1;
  s.nv_backend_built = true;
  s.nv_branches = {570, 580};
  s.nv_needs_open_module = false;
  return s;
}

// The single finding's reason; fails the test when there is not exactly one.
std::string reason(const GpuFacts& f, const BackendSupport& s = support()) {
  const std::vector<GpuFinding> found = diagnose_gpus(f, s);
  EXPECT_EQ(found.size(), 1u);
  return found.empty() ? std::string("<none>") : found.front().reason;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(GpuDiagnosis, UsableGpusYieldNothing) {
  EXPECT_TRUE(diagnose_gpus(usable_amd(), support()).empty());
  EXPECT_TRUE(diagnose_gpus(usable_nv(), support()).empty());
  EXPECT_TRUE(diagnose_gpus(GpuFacts{}, support()).empty());
}

// ---- AMD -------------------------------------------------------------------------------------------------------
TEST(GpuDiagnosis, AmdgpuNotLoaded) {
  GpuFacts f = usable_amd();
  f.pci.gpus[0] = amd_gpu("");
  f.amdgpu_loaded = false;
  const std::vector<GpuFinding> found = diagnose_gpus(f, support());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].gpu.address, "0000:03:00.0");
  EXPECT_EQ(found[0].reason, "amdgpu not loaded (modprobe amdgpu)");
}

TEST(GpuDiagnosis, AmdgpuLoadedButNotBound) {
  GpuFacts f = usable_amd();
  f.pci.gpus[0] = amd_gpu("");
  EXPECT_TRUE(has(reason(f), "amdgpu is loaded but not bound to it")) << reason(f);
}

TEST(GpuDiagnosis, AmdBoundToAnotherDriver) {
  GpuFacts f = usable_amd();
  f.pci.gpus[0] = amd_gpu("vfio-pci");
  EXPECT_TRUE(has(reason(f), "bound to vfio-pci")) << reason(f);
  f.pci.gpus[0] = amd_gpu("radeon");
  EXPECT_TRUE(has(reason(f), "bound to radeon, the legacy driver")) << reason(f);
  f.pci.gpus[0] = amd_gpu("pci-stub");
  EXPECT_EQ(reason(f), "bound to pci-stub, not amdgpu");
}

TEST(GpuDiagnosis, NoKfdNode) {
  GpuFacts f = usable_amd();
  f.kfd = kAbsent;
  EXPECT_TRUE(has(reason(f), "/dev/kfd is absent")) << reason(f);
}

TEST(GpuDiagnosis, NoPermissionOnKfd) {
  GpuFacts f = usable_amd();
  f.kfd = kNoPermission;
  EXPECT_TRUE(has(reason(f), "no permission on /dev/kfd (join the render group")) << reason(f);
}

TEST(GpuDiagnosis, KfdOpenFailsOtherwise) {
  GpuFacts f = usable_amd();
  f.kfd = NodeAccess{NodeAccess::State::error, EBUSY};
  EXPECT_TRUE(has(reason(f), "/dev/kfd does not open: ")) << reason(f);
  EXPECT_TRUE(has(reason(f), std::strerror(EBUSY))) << reason(f);
}

TEST(GpuDiagnosis, KfdTooOld) {
  GpuFacts f = usable_amd();
  f.kfd_version = KfdVersion{1, 0};
  EXPECT_EQ(reason(f), "KFD too old: ioctl ABI 1.0, the AMD backend needs 1.1 or newer");
  f.kfd_version = KfdVersion{0, 9};
  EXPECT_TRUE(has(reason(f), "KFD too old: ioctl ABI 0.9")) << reason(f);
  BackendSupport s = support();
  s.kfd_min_minor = 14;
  f.kfd_version = KfdVersion{1, 11};
  EXPECT_EQ(reason(f, s), "KFD too old: ioctl ABI 1.11, the AMD backend needs 1.14 or newer");
}

TEST(GpuDiagnosis, KfdMajorNewerThanKnown) {
  GpuFacts f = usable_amd();
  f.kfd_version = KfdVersion{2, 0};
  EXPECT_EQ(reason(f), "KFD ioctl ABI 2.0 is newer than the AMD backend knows (1.x)");
}

TEST(GpuDiagnosis, UnknownKfdVersionIsNotAReason) {
  GpuFacts f = usable_amd();
  f.kfd_version.reset();  // not asked: the other facts decide
  EXPECT_TRUE(diagnose_gpus(f, support()).empty());
}

TEST(GpuDiagnosis, NoRenderNode) {
  GpuFacts f = usable_amd();
  f.pci.gpus[0].render_minors.clear();
  EXPECT_TRUE(has(reason(f), "made no render node")) << reason(f);
  f = usable_amd();
  f.render_nodes.clear();  // sysfs names renderD128, /dev does not have it
  EXPECT_TRUE(has(reason(f), "/dev/dri/renderD128 is absent")) << reason(f);
}

TEST(GpuDiagnosis, NoPermissionOnRenderNode) {
  GpuFacts f = usable_amd();
  f.render_nodes[128] = kNoPermission;
  EXPECT_TRUE(has(reason(f), "no permission on /dev/dri/renderD128 (join the render group)")) << reason(f);
}

TEST(GpuDiagnosis, NotInKfdTopology) {
  GpuFacts f = usable_amd();
  f.kfd_render_minors = {129};  // KFD lists another GPU, not this one
  EXPECT_TRUE(has(reason(f), "the KFD topology does not list it")) << reason(f);
}

TEST(GpuDiagnosis, DriverProblemComesBeforeNodeProblems) {
  GpuFacts f = usable_amd();
  f.pci.gpus[0] = amd_gpu("");
  f.amdgpu_loaded = false;
  f.kfd = kAbsent;
  f.render_nodes.clear();
  EXPECT_EQ(reason(f), "amdgpu not loaded (modprobe amdgpu)");
}

// ---- NVIDIA ----------------------------------------------------------------------------------------------------
TEST(GpuDiagnosis, NvidiaModuleNotLoaded) {
  GpuFacts f = usable_nv();
  f.pci.gpus[0] = nv_gpu("");
  f.nvidia_loaded = false;
  EXPECT_EQ(reason(f), "the nvidia kernel module is not loaded (modprobe nvidia)");
}

TEST(GpuDiagnosis, NvidiaLoadedButNotBound) {
  GpuFacts f = usable_nv();
  f.pci.gpus[0] = nv_gpu("");
  EXPECT_TRUE(has(reason(f), "the nvidia module is loaded but not bound to it")) << reason(f);
}

TEST(GpuDiagnosis, NvidiaBoundToNouveau) {
  GpuFacts f = usable_nv();
  f.pci.gpus[0] = nv_gpu("nouveau");
  EXPECT_EQ(reason(f), "bound to nouveau; the NV backend needs NVIDIA's kernel module (nvidia-open)");
}

TEST(GpuDiagnosis, ProprietaryModuleWhereTheOpenOneIsNeeded) {
  // The proprietary module is loaded and drives nothing here: the GPU is one only the open module drives.
  GpuFacts f = usable_nv();
  f.pci.gpus[0] = nv_gpu("");
  f.nvidia_version_text = kProprietary550;
  f.nvidia_module = NvidiaModule{"550.54.14", 550, false};
  EXPECT_EQ(reason(f),
            "NVIDIA's proprietary kernel module 550.54.14 is loaded but does not drive it; recent GPUs (Blackwell on) "
            "need the open one (nvidia-open)");
  // Bound to the proprietary module, with a backend that needs the open one.
  f.pci.gpus[0] = nv_gpu();
  f.nvidia_module = NvidiaModule{"580.65.06", 580, false};
  BackendSupport open_only = support();
  open_only.nv_needs_open_module = true;
  EXPECT_EQ(reason(f, open_only),
            "NVIDIA's proprietary kernel module 580.65.06 is loaded; the NV backend needs the open one (nvidia-open, "
            "Open Kernel Module)");
  // A backend that accepts either finds nothing wrong.
  EXPECT_TRUE(diagnose_gpus(f, support()).empty());
}

TEST(GpuDiagnosis, UnsupportedDriverVersion) {
  GpuFacts f = usable_nv();
  f.nvidia_version_text = kOpen575;
  f.nvidia_module = NvidiaModule{"575.57.08", 575, true};
  EXPECT_EQ(reason(f), "driver 575.57.08 is not supported (the NV backend knows branches 570, 580)");
  BackendSupport none = support();
  none.nv_branches.clear();
  EXPECT_TRUE(has(reason(f, none), "knows branches none")) << reason(f, none);
}

TEST(GpuDiagnosis, NvidiaVersionUnreadableOrGarbled) {
  GpuFacts f = usable_nv();
  f.nvidia_version_text.reset();
  f.nvidia_module.reset();
  EXPECT_TRUE(has(reason(f), "/proc/driver/nvidia/version cannot be read")) << reason(f);
  f.nvidia_version_text = "something else entirely\nsecond line";  // the parser did not understand it
  EXPECT_EQ(reason(f), "unrecognised /proc/driver/nvidia/version: 'something else entirely'");
}

TEST(GpuDiagnosis, NvidiaControlNode) {
  GpuFacts f = usable_nv();
  f.nvidiactl = kAbsent;
  EXPECT_TRUE(has(reason(f), "/dev/nvidiactl is absent")) << reason(f);
  f.nvidiactl = kNoPermission;
  EXPECT_TRUE(has(reason(f), "no permission on /dev/nvidiactl")) << reason(f);
}

TEST(GpuDiagnosis, NvidiaUvm) {
  GpuFacts f = usable_nv();
  f.nvidia_uvm = kAbsent;
  f.nvidia_uvm_loaded = false;
  EXPECT_EQ(reason(f), "nvidia_uvm is not loaded (modprobe nvidia-uvm)");
  f.nvidia_uvm_loaded = true;  // loaded, node not made
  EXPECT_TRUE(has(reason(f), "/dev/nvidia-uvm is absent (nvidia-modprobe -u -c 0")) << reason(f);
  f.nvidia_uvm = kNoPermission;
  EXPECT_TRUE(has(reason(f), "no permission on /dev/nvidia-uvm")) << reason(f);
}

TEST(GpuDiagnosis, NvidiaDeviceNode) {
  GpuFacts f = usable_nv();
  f.nvidia_minor_by_address.clear();
  EXPECT_TRUE(has(reason(f), "lists no device minor for it")) << reason(f);
  f = usable_nv();
  f.nvidia_nodes[0] = kNoPermission;
  EXPECT_TRUE(has(reason(f), "no permission on /dev/nvidia0")) << reason(f);
  f.nvidia_nodes.clear();
  EXPECT_TRUE(has(reason(f), "/dev/nvidia0 is absent")) << reason(f);
}

TEST(GpuDiagnosis, NvBackendNotBuilt) {
  BackendSupport s = support();
  s.nv_backend_built = false;
  EXPECT_EQ(reason(usable_nv(), s), "the NV backend is not built (driver 580.65.06 and its nodes look usable)");
}

TEST(GpuDiagnosis, OneFindingPerGpuInPciOrder) {
  GpuFacts f = usable_amd();
  const GpuFacts nv = usable_nv();
  f.pci.gpus.push_back(nv.pci.gpus[0]);
  PciGpu second = amd_gpu("");
  second.address = "0000:c3:00.0";
  f.pci.gpus.push_back(second);
  f.nvidia_loaded = false;
  f.pci.gpus[1].kernel_driver = "";
  const std::vector<GpuFinding> found = diagnose_gpus(f, support());
  ASSERT_EQ(found.size(), 2u);  // the first AMD GPU is usable
  EXPECT_EQ(found[0].gpu.address, "0000:41:00.0");
  EXPECT_EQ(found[1].gpu.address, "0000:c3:00.0");
}

// ---- /proc/driver/nvidia/version, through the NV backend's parser (the registry maps it into NvidiaModule) -----
TEST(NvidiaVersionText, TheBackendParserReadsTheseTexts) {
  const auto open = nv::abi::parse_proc_version(kOpen580);
  ASSERT_TRUE(open.has_value());
  EXPECT_EQ(open->text, "580.65.06");
  EXPECT_EQ(open->major, 580u);
  EXPECT_TRUE(open->open_module);
  const auto prop = nv::abi::parse_proc_version(kProprietary550);
  ASSERT_TRUE(prop.has_value());
  EXPECT_EQ(prop->text, "550.54.14");
  EXPECT_FALSE(prop->open_module);
  EXPECT_FALSE(nv::abi::parse_proc_version("something else entirely\n").has_value());
}

// ---- gathering ---------------------------------------------------------------------------------------------------
// An Os whose sysfs, /proc and /dev are maps; open() answers with the errno listed for the path (0: it opens).
class FakeOs final : public Os {
 public:
  std::map<std::string, std::string> files;
  std::map<std::string, std::vector<std::string>> dirs;
  std::map<std::string, int> nodes;  // path -> errno of open, 0 for success
  std::vector<std::string> opened;
  int open_fds = 0;
  int open(const char* path, int) override {
    auto it = nodes.find(path);
    if (it == nodes.end()) return errno = ENOENT, -1;
    if (it->second != 0) return errno = it->second, -1;
    opened.emplace_back(path);
    ++open_fds;
    return 100 + static_cast<int>(opened.size());
  }
  int close(int) override { return --open_fds, 0; }
  int ioctl(int, unsigned long, void*) override { return errno = ENOTTY, -1; }
  void* mmap(void*, size_t, int, int, int, off_t) override { return errno = ENODEV, MAP_FAILED; }
  int munmap(void*, size_t) override { return 0; }
  std::optional<std::string> read_file(const std::string& path) override {
    auto it = files.find(path);
    return it == files.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  std::vector<std::string> list_dir(const std::string& path) override {
    auto it = dirs.find(path);
    return it == dirs.end() ? std::vector<std::string>{} : it->second;
  }
  int eventfd(unsigned, int) override { return errno = ENOSYS, -1; }
};

TEST(GatherGpuFacts, AmdMachine) {
  FakeOs os;
  os.dirs["/sys/module/amdgpu"] = {"parameters", "refcnt"};
  os.nodes["/dev/kfd"] = EACCES;
  os.nodes["/dev/dri/renderD128"] = 0;
  PciScan scan;
  scan.gpus = {amd_gpu()};
  const GpuFacts f = gather_gpu_facts(os, scan);
  EXPECT_TRUE(f.amdgpu_loaded);
  EXPECT_EQ(f.kfd.state, NodeAccess::State::no_permission);
  ASSERT_EQ(f.render_nodes.count(128), 1u);
  EXPECT_EQ(f.render_nodes.at(128).state, NodeAccess::State::ok);
  EXPECT_EQ(os.open_fds, 0);  // every probe closed what it opened
  // No NVIDIA GPU on the bus: none of its nodes is touched.
  for (const std::string& p : os.opened) EXPECT_EQ(p.find("nvidia"), std::string::npos) << p;
  EXPECT_FALSE(f.nvidia_version_text.has_value());
  EXPECT_EQ(reason(f), "no permission on /dev/kfd (join the render group, or video on older systems)");
}

TEST(GatherGpuFacts, NvidiaMachine) {
  FakeOs os;
  os.dirs["/sys/module/nvidia"] = {"version"};
  os.files["/proc/driver/nvidia/version"] = kOpen580;
  os.files["/proc/driver/nvidia/gpus/0000:41:00.0/information"] =
      "Model: \t\t NVIDIA H200\nIRQ:   \t\t 123\nGPU UUID: \t GPU-0\nDevice Minor: \t 3\nBus Type: \t PCIe\n";
  os.nodes["/dev/nvidiactl"] = 0;
  os.nodes["/dev/nvidia3"] = 0;
  PciScan scan;
  scan.gpus = {nv_gpu()};
  const GpuFacts f = gather_gpu_facts(os, scan);
  EXPECT_TRUE(f.nvidia_loaded);
  EXPECT_FALSE(f.nvidia_uvm_loaded);
  EXPECT_EQ(f.nvidiactl.state, NodeAccess::State::ok);
  EXPECT_EQ(f.nvidia_uvm.state, NodeAccess::State::absent);
  ASSERT_EQ(f.nvidia_minor_by_address.count("0000:41:00.0"), 1u);
  EXPECT_EQ(f.nvidia_minor_by_address.at("0000:41:00.0"), 3u);
  EXPECT_EQ(f.nvidia_nodes.at(3).state, NodeAccess::State::ok);
  EXPECT_EQ(os.open_fds, 0);
  EXPECT_EQ(os.opened.end(), std::find(os.opened.begin(), os.opened.end(), "/dev/kfd"));  // no AMD GPU: no KFD
  ASSERT_EQ(f.nvidia_version_text, std::optional<std::string>(kOpen580));
  GpuFacts parsed = f;  // the registry adds what the NV backend's parser reads
  parsed.nvidia_module = NvidiaModule{"580.65.06", 580, true};
  EXPECT_EQ(reason(parsed), "nvidia_uvm is not loaded (modprobe nvidia-uvm)");
}

TEST(GatherGpuFacts, NodeAccessStates) {
  FakeOs os;
  os.nodes["/dev/a"] = 0;
  os.nodes["/dev/b"] = EPERM;
  os.nodes["/dev/c"] = ENXIO;
  EXPECT_EQ(NodeAccess::probe(os, "/dev/a").state, NodeAccess::State::ok);
  EXPECT_EQ(NodeAccess::probe(os, "/dev/b").state, NodeAccess::State::no_permission);
  const NodeAccess c = NodeAccess::probe(os, "/dev/c");
  EXPECT_EQ(c.state, NodeAccess::State::error);
  EXPECT_EQ(c.err, ENXIO);
  EXPECT_EQ(NodeAccess::probe(os, "/dev/none").state, NodeAccess::State::absent);
  EXPECT_EQ(os.open_fds, 0);
}

// ---- drm_query: KFD and the render node through the seam --------------------------------------------------------
TEST(DrmQuery, KfdVersionThroughTheSeam) {
  auto kfd = std::make_shared<sim::SimKfd>(std::vector<std::string>{"gfx1100"});
  sim::SimOs os(std::vector<std::shared_ptr<sim::SimDriver>>{kfd});
  const std::optional<KfdVersion> v = amd::query_kfd_version(os);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->major, sim::SimKfd::kKfdMajor);
  EXPECT_EQ(v->minor, sim::SimKfd::kKfdMinor);
  FakeOs none;
  EXPECT_EQ(amd::query_kfd_version(none), std::nullopt);  // no /dev/kfd
  none.nodes["/dev/kfd"] = 0;                             // opens, but GET_VERSION fails
  EXPECT_EQ(amd::query_kfd_version(none), std::nullopt);
  EXPECT_EQ(none.open_fds, 0);
}

TEST(DrmQuery, SimulatorRenderNodeIsNeverHandedToLibdrm) {
  auto kfd = std::make_shared<sim::SimKfd>(std::vector<std::string>{"gfx1100"});
  sim::SimOs os(std::vector<std::shared_ptr<sim::SimDriver>>{kfd});
  const int fd = os.open("/dev/dri/renderD128", O_RDWR);
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(amd::is_real_render_node(os, fd));
  EXPECT_EQ(amd::query_render_node(os, fd), std::nullopt);
  os.close(fd);
  EXPECT_EQ(amd::query_render_minor(os, 128), std::nullopt);
}

TEST(DrmQuery, NonDrmFdsAreNotRenderNodes) {
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);  // a character device, not DRM's
  ASSERT_GE(null_fd, 0);
  EXPECT_FALSE(amd::is_real_render_node(real_os(), null_fd));
  ::close(null_fd);
  EXPECT_FALSE(amd::is_real_render_node(real_os(), -1));
  EXPECT_FALSE(amd::is_real_render_node(real_os(), 1 << 20));  // not open
}

// This machine: a real render node, if there is one, says it is amdgpu (or another DRM driver) with a version.
TEST(DrmQuery, ThisMachine) {
  for (uint32_t minor = 128; minor < 136; ++minor) {
    const std::optional<amd::RenderNodeInfo> r = amd::query_render_minor(real_os(), minor);
    if (!r) continue;
    EXPECT_FALSE(r->drm_driver.empty());
    EXPECT_FALSE(r->drm_version.empty());
    if (r->drm_driver == "amdgpu") {
      EXPECT_NE(r->asic_id, 0u);
    }
  }
}

}  // namespace
}  // namespace hcq
