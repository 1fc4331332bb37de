// The ioctl tracer: the decoding table on hand-made blocks, the TracingOs on the simulated GPUs (bring-up,
// allocation, queue creation and teardown appear decoded, in order), and the preload shim run through
// `hcq-dump trace` on a program whose KFD and RM requests go to a file that is not a GPU.
#include <gtest/gtest.h>
#include <linux/kfd_ioctl.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "../../tools/hcq-dump/commands.hpp"
#include "../amd/vectors.hpp"
#include "amd/kfd/amd_device.hpp"
#include "cli.hpp"
#include "hcq/device.hpp"
#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/ctrl.hpp"
#include "nv/rm/abi/nvos.hpp"
#include "nv/rm/abi/status.hpp"
#include "nv/rm/abi/uvm.hpp"
#include "nv/rm/nv_device.hpp"
#include "sim/kfd/sim_kfd.hpp"
#include "sim/nv/sim_nv.hpp"
#include "sim/sim_os.hpp"
#include "trace/ioctl_decode.hpp"
#include "trace/tracing_os.hpp"

namespace hcq::trace {
namespace {

namespace abi = hcq::nv::abi;

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// Each pattern (all of its parts) is found on a line after the line that matched the one before it.
void expect_in_order(const std::vector<std::string>& lines, const std::vector<std::vector<std::string>>& patterns) {
  size_t at = 0;
  for (const auto& parts : patterns) {
    bool found = false;
    for (; at < lines.size() && !found; ++at) {
      found = true;
      for (const std::string& p : parts) found = found && contains(lines[at], p);
    }
    if (!found) {
      std::string all;
      for (const std::string& l : lines) all += "  " + l + "\n";
      FAIL() << "no line with '" << parts.front() << "'" << (parts.size() > 1 ? " (and the rest)" : "")
             << " in order; the log:\n"
             << all;
    }
  }
}

TEST(IoctlDecode, KfdBlocksByName) {
  kfd_ioctl_create_queue_args q{};
  q.queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL;
  q.ring_size = 0x10000;
  q.queue_id = 3;
  const DecodedIoctl d = decode_ioctl(Family::kfd, AMDKFD_IOC_CREATE_QUEUE, &q, true);
  EXPECT_EQ(d.family, Family::kfd);
  EXPECT_EQ(d.name, "AMDKFD_IOC_CREATE_QUEUE");
  EXPECT_TRUE(contains(d.args, "queue_type=COMPUTE_AQL (0x2)")) << d.args;
  EXPECT_TRUE(contains(d.args, "ring_size=0x10000")) << d.args;
  EXPECT_TRUE(contains(d.args, "queue_id=3")) << d.args;

  kfd_ioctl_alloc_memory_of_gpu_args m{};
  m.flags = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
  EXPECT_TRUE(
      contains(decode_ioctl(Family::kfd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &m, true).args, "flags=VRAM|WRITABLE"));

  kfd_ioctl_get_version_args v{1, 13};
  EXPECT_EQ(decode_ioctl(Family::unknown, AMDKFD_IOC_GET_VERSION, &v, true).driver_version, "KFD 1.13");
  // Not readable: named, the block untouched.
  EXPECT_EQ(decode_ioctl(Family::kfd, AMDKFD_IOC_GET_VERSION, nullptr, true).args, "");
  EXPECT_EQ(decode_ioctl(Family::kfd, AMDKFD_IOC_GET_VERSION, &v, false).args, "");
  // The right command number with a smaller block is named as such and not read; a larger one (a newer kernel's
  // uAPI grows blocks at the end) is decoded up to what this one knows.
  const unsigned long smaller = _IOWR(AMDKFD_IOCTL_BASE, 0x02, uint64_t);
  const DecodedIoctl w = decode_ioctl(Family::kfd, smaller, &q, true);
  EXPECT_TRUE(w.name.starts_with("AMDKFD_IOC_CREATE_QUEUE (size 8")) << w.name;
  EXPECT_EQ(w.args, "");
  struct Grown {
    kfd_ioctl_create_queue_args known;
    uint64_t newer;
  } grown{q, 0};
  const DecodedIoctl g = decode_ioctl(Family::kfd, _IOWR(AMDKFD_IOCTL_BASE, 0x02, Grown), &grown, true);
  EXPECT_EQ(g.name, "AMDKFD_IOC_CREATE_QUEUE");
  EXPECT_TRUE(contains(g.args, "queue_id=3, ") && g.args.ends_with(", +8 bytes newer than this uAPI}")) << g.args;
}

// tinygrad's KFD calls (bring-up, a queue, an allocation, its free, teardown: ../shared/vectors/amd) are named by
// the table as the vector names them, from the request number alone.
TEST(IoctlDecode, KfdRequestsOfTheVectorAreNamedAsItNamesThem) {
  const auto dir = hcq::amd::testing::vectors_dir();
  if (!dir) GTEST_SKIP() << "golden vectors not found: set HCQ_VECTORS_DIR to shared/vectors";
  const auto doc = hcq::amd::testing::Json::parse_file(*dir + "/amd/kfd_ioctls_gfx1100.json");
  size_t n = 0;
  for (const auto& call : doc["ioctls"].items()) {
    const DecodedIoctl d = decode_ioctl(family_of_path(call["fd_path"].str()), call["request"].u64(), nullptr, false);
    EXPECT_EQ(d.name, call["name"].str()) << "request " << call["request"].str();
    ++n;
  }
  EXPECT_GT(n, 10u);
}

TEST(IoctlDecode, RmEscapesWithClassesCommandsAndStatus) {
  abi::RmAllocParams alloc{};
  alloc.class_id = abi::cls::device;
  alloc.status = abi::status::err_invalid_argument;
  const DecodedIoctl a = decode_ioctl(Family::rm, abi::escape_request(abi::esc::rm_alloc, sizeof alloc), &alloc, true);
  EXPECT_EQ(a.name, "NV_ESC_RM_ALLOC");
  EXPECT_TRUE(contains(a.args, "hClass=NV01_DEVICE_0 (0x80)")) << a.args;
  EXPECT_TRUE(contains(a.args, "status=NV_ERR_INVALID_ARGUMENT")) << a.args;

  abi::RmAllocWithRightsParams rights{};
  rights.class_id = 0xc9c0;
  const DecodedIoctl r =
      decode_ioctl(Family::rm, abi::escape_request(abi::esc::rm_alloc, sizeof rights), &rights, true);
  EXPECT_TRUE(contains(r.args, "hClass=ADA_COMPUTE_A (0xc9c0)")) << r.args;

  abi::RmControlParams ctl{};
  ctl.cmd = abi::ctrl::gr_get_info;
  const DecodedIoctl c = decode_ioctl(Family::rm, abi::escape_request(abi::esc::rm_control, sizeof ctl), &ctl, true);
  EXPECT_EQ(c.name, "NV_ESC_RM_CONTROL");
  EXPECT_TRUE(contains(c.args, "cmd=NV2080_CTRL_CMD_GR_GET_INFO (0x20801201)")) << c.args;
  EXPECT_TRUE(contains(c.args, "status=NV_OK")) << c.args;

  abi::VersionCheck check{};
  check.reply = abi::kVersionReplyRecognized;
  std::snprintf(check.version, sizeof check.version, "580.95.05");
  EXPECT_EQ(decode_ioctl(Family::rm, abi::escape_request(abi::esc::check_version_str, sizeof check), &check, true)
                .driver_version,
            "NVIDIA 580.95.05");
  EXPECT_EQ(rm_class_name(0x1234), "");
}

TEST(IoctlDecode, UvmOnlyWhereThePathSaysSo) {
  abi::UvmRegisterGpuParams reg{};
  reg.rm_ctrl_fd = 7;
  const DecodedIoctl u = decode_ioctl(Family::uvm, abi::uvm::register_gpu, &reg, true);
  EXPECT_EQ(u.name, "UVM_REGISTER_GPU");
  EXPECT_TRUE(contains(u.args, "rmCtrlFd=7")) << u.args;
  // A bare small number on some other file is not guessed at; UVM_INITIALIZE's number stands out.
  EXPECT_EQ(decode_ioctl(Family::unknown, abi::uvm::register_gpu, &reg, true).name, "");
  abi::UvmInitializeParams init{};
  EXPECT_EQ(decode_ioctl(Family::unknown, abi::uvm::initialize, &init, true).name, "UVM_INITIALIZE");
  EXPECT_EQ(family_of_path("/dev/nvidia0"), Family::rm);
  EXPECT_EQ(family_of_path("/dev/nvidia-uvm"), Family::uvm);
  EXPECT_EQ(family_of_path("/dev/nvidia-modeset"), Family::unknown);
}

// Collects the TracingOs's lines.
struct Log {
  std::mutex mu;
  std::vector<std::string> lines;
  TracingOs::Sink sink() {
    return [this](const std::string& l) {
      std::lock_guard lock(mu);
      lines.push_back(l);
    };
  }
  std::vector<std::string> snapshot() {
    std::lock_guard lock(mu);
    return lines;
  }
};

TEST(TracingOs, SimAmdBringUpAllocationQueuesTeardownInOrder) {
  Log log;
  {
    auto kfd = std::make_shared<sim::SimKfd>(std::vector<std::string>{"gfx1100"});
    auto sim_os = std::make_shared<sim::SimOs>(std::vector<std::shared_ptr<sim::SimDriver>>{kfd});
    auto os = std::make_shared<TracingOs>(sim_os, log.sink());
    std::unique_ptr<Device> dev = amd::open_kfd_device_on("SIM-AMD:gfx1100", os, 0, "sim-kfd");
    log.sink()("-- allocation");
    BufferSpec spec;
    spec.cpu_access = true;
    const Allocation a = dev->alloc_memory(1 << 16, spec);
    dev->free_memory(a);
    log.sink()("-- queue");
    {
      auto q = dev->copy_queue();
    }
    log.sink()("-- teardown");
    EXPECT_EQ(os->tracer().driver_versions().at("KFD"), dev->info().driver_version);
  }
  const std::vector<std::string> lines = log.snapshot();
  expect_in_order(lines, {
                             {"open(\"/dev/kfd\"", ") = "},
                             {"AMDKFD_IOC_GET_VERSION {major_version=1", ") = 0", "[driver KFD 1."},
                             {"AMDKFD_IOC_ACQUIRE_VM {drm_fd="},
                             {"AMDKFD_IOC_RUNTIME_ENABLE {", "mode_mask=1"},
                             {"AMDKFD_IOC_GET_PROCESS_APERTURES_NEW {"},
                             {"AMDKFD_IOC_CREATE_EVENT {"},
                             {"-- allocation"},
                             {"AMDKFD_IOC_ALLOC_MEMORY_OF_GPU {", "size=0x10000", ") = 0"},
                             {"mmap(", "/dev/dri/renderD128", ") = 0x"},
                             {"AMDKFD_IOC_MAP_MEMORY_TO_GPU {", "n_devices=1"},
                             {"AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU {"},
                             {"AMDKFD_IOC_FREE_MEMORY_OF_GPU {handle="},
                             {"-- queue"},
                             {"AMDKFD_IOC_CREATE_QUEUE {", "queue_type=SDMA", "ring_size=", ") = 0"},
                             {"mmap(", "/dev/kfd", ") = 0x"},  // the doorbell page
                             {"-- teardown"},
                             {"AMDKFD_IOC_DESTROY_QUEUE {queue_id="},
                             {"AMDKFD_IOC_DESTROY_EVENT {"},
                             {"close(", " /dev/kfd) = 0"},
                         });
  for (const std::string& l : lines) {
    if (l.starts_with("ioctl(") && contains(l, "/dev/kfd, ")) {
      EXPECT_TRUE(contains(l, "AMDKFD_IOC_") && !contains(l, "AMDKFD_IOC_0x")) << "undecoded: " << l;
    }
  }
}

TEST(TracingOs, SimNvBringUpAllocationChannelTeardownInOrder) {
  Log log;
  {
    auto driver = std::make_shared<sim::SimNv>(std::vector<std::string>{"ampere"});
    auto sim_os = std::make_shared<sim::SimOs>(std::vector<std::shared_ptr<sim::SimDriver>>{driver});
    auto os = std::make_shared<TracingOs>(sim_os, log.sink());
    std::unique_ptr<Device> dev = nv::open_nv_device_on("SIM-NV:ampere", os, 0, "sim-rm");
    log.sink()("-- allocation");
    BufferSpec spec;
    spec.cpu_access = true;
    const Allocation a = dev->alloc_memory(1 << 16, spec);
    dev->free_memory(a);
    log.sink()("-- queue");
    {
      auto q = dev->compute_queue();
    }
    log.sink()("-- teardown");
    EXPECT_EQ(os->tracer().driver_versions().at("RM"), "NVIDIA " + std::string(sim::SimNv::kDefaultDriverVersion));
  }
  const std::vector<std::string> lines = log.snapshot();
  expect_in_order(lines, {
                             {"open(\"/dev/nvidiactl\""},
                             {"NV_ESC_CHECK_VERSION_STR {", "[driver NVIDIA "},
                             {"NV_ESC_RM_ALLOC {", "hClass=NV01_ROOT_CLIENT"},
                             {"open(\"/dev/nvidia-uvm\""},
                             {"UVM_INITIALIZE {", "status=NV_OK"},
                             {"NV_ESC_CARD_INFO {"},
                             {"NV_ESC_RM_CONTROL {", "cmd=NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2"},
                             {"NV_ESC_RM_ALLOC {", "hClass=NV01_DEVICE_0", "status=NV_OK"},
                             {"NV_ESC_RM_ALLOC {", "hClass=NV20_SUBDEVICE_0"},
                             {"NV_ESC_RM_CONTROL {", "cmd=NV2080_CTRL_CMD_GR_GET_INFO"},
                             {"NV_ESC_RM_ALLOC {", "hClass=AMPERE_USERMODE_A"},
                             {"NV_ESC_RM_ALLOC {", "hClass=FERMI_VASPACE_A"},
                             {"UVM_REGISTER_GPU {"},
                             {"UVM_REGISTER_GPU_VASPACE {"},
                             {"-- allocation"},
                             {"NV_ESC_RM_ALLOC {", "hClass=NV01_MEMORY_LOCAL_USER", ") = 0"},
                             {"NV_ESC_RM_MAP_MEMORY {"},
                             {"mmap(", "/dev/nvidia0", ") = 0x"},
                             {"NV_ESC_RM_MAP_MEMORY_DMA {", "dmaOffset=", "status=NV_OK"},
                             {"UVM_MAP_EXTERNAL_ALLOCATION {", "status=NV_OK"},
                             {"UVM_FREE {"},
                             {"NV_ESC_RM_FREE {"},
                             {"-- queue"},
                             {"NV_ESC_RM_ALLOC {", "hClass=AMPERE_CHANNEL_GPFIFO_A"},
                             {"NV_ESC_RM_ALLOC {", "hClass=AMPERE_COMPUTE_B"},
                             {"-- teardown"},
                             {"UVM_UNREGISTER_GPU {"},
                             {"NV_ESC_RM_FREE {"},
                             {"close(", "/dev/nvidia-uvm) = 0"},
                             {"close(", "/dev/nvidiactl) = 0"},
                         });
  for (const std::string& l : lines) {
    if (l.starts_with("ioctl(") && contains(l, "/dev/nvidia")) {
      EXPECT_FALSE(contains(l, "NV_ESC_0x") || contains(l, "UVM_0") || contains(l, ", 0x")) << "undecoded: " << l;
    }
  }
}

// The shim, through the real `hcq-dump trace` command, on a program issuing KFD, RM and UVM requests to /dev/null.
TEST(TraceShim, LogsKfdAndRmRequestsOnANonGpuFileDecodedWithEnotty) {
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer insists that its runtime comes first in the library list, which a preloaded shim cannot
  // satisfy: the traced program aborts before main. The release run covers the shim.
  GTEST_SKIP() << "a preload shim cannot run ahead of the AddressSanitizer runtime";
#endif
  const std::string build = dump::testing::build_dir();
  ASSERT_FALSE(build.empty()) << "tools/hcq-dump/hcq-dump not built next to the tests";
  const std::string log = dump::testing::write_bytes("shim.log", "");
  const std::string command = "'" + build + "/tools/hcq-dump/hcq-dump' trace -o '" + log + "' -- '" + build +
                              "/tests/dump/trace-probe' /dev/null";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << command;
  EXPECT_EQ(WEXITSTATUS(status), 0) << command << ": the probe saw something other than ENOTTY";
  std::ifstream in(log);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  const std::string enotty = ") = -1 ENOTTY (Inappropriate ioctl for device)";
  expect_in_order(lines, {
                             {"# hcq-trace pid ", "trace-probe"},
                             {"open(\"/dev/null\", O_RDWR|O_CLOEXEC) = "},
                             {"/dev/null, AMDKFD_IOC_GET_VERSION" + enotty},
                             {"/dev/null, AMDKFD_IOC_CREATE_QUEUE" + enotty},
                             {"/dev/null, NV_ESC_RM_ALLOC" + enotty},
                             {"/dev/null, NV_ESC_RM_CONTROL" + enotty},
                             {"/dev/null, NV_ESC_CHECK_VERSION_STR" + enotty},
                             {"/dev/null, UVM_INITIALIZE" + enotty},
                             {"close(", "/dev/null) = 0"},
                         });
}

TEST(TraceShim, BadCommandLines) {
  std::ostringstream out, err;
  const std::vector<std::string_view> none = {"-o", "x"};
  EXPECT_EQ(dump::run_trace(none, out, err), dump::kExitUsage);
  EXPECT_TRUE(contains(err.str(), "no command given")) << err.str();
  const std::vector<std::string_view> stray = {"ls"};
  EXPECT_EQ(dump::run_trace(stray, out, err), dump::kExitUsage);
}

}  // namespace
}  // namespace hcq::trace
