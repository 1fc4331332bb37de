// The simulated NVIDIA driver (drivers/sim/nv) seen from a process, through the OS seam with raw escapes: the RM
// object tree's checks and the statuses they give, sizes and nodes (EINVAL), controls, the version file, memory
// mapped on the host and through UVM at the same VA, UVM's range errors, the usermode doorbell reaching a channel's
// runner, and faults written to the channel's error notifier.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/timeline.hpp"
#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/hw_queue.hpp"
#include "hcq/program.hpp"
#include "nv/encode.hpp"
#include "nv/facts/arch.hpp"
#include "nv/facts/gpfifo.hpp"
#include "nv/rm/abi/branch.hpp"
#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/ctrl.hpp"
#include "nv/rm/abi/nvos.hpp"
#include "nv/rm/abi/status.hpp"
#include "nv/rm/abi/uvm.hpp"
#include "sim/nv/sim_nv.hpp"
#include "sim/nv/sim_nv_device.hpp"
#include "sim/sim_os.hpp"

namespace hcq::sim {
namespace {

namespace abi = nv::abi;
namespace st = nv::abi::status;
using abi::Handle;

// A runner that only counts what it is told: the doorbell seam without an engine behind it.
struct CountingRunner final : ChannelRunner {
  std::atomic<int>* doorbells;
  explicit CountingRunner(std::atomic<int>* d) : doorbells(d) {}
  void doorbell() override { doorbells->fetch_add(1); }
  std::string describe() const override { return "counting runner"; }
};

// One simulated machine and raw RM/UVM calls on it.
class SimNvTest : public ::testing::Test {
 protected:
  void SetUp() override { make("ampere"); }
  void TearDown() override {
    for (int fd : fds_) os->close(fd);
  }

  // `engine`: the runners to use; by default ones that count doorbells.
  void make(const std::string& gpu, const std::string& version = std::string(SimNv::kDefaultDriverVersion),
            ChannelRunnerFactory engine = {}) {
    for (int fd : fds_) os->close(fd);
    fds_.clear();
    driver = std::make_shared<SimNv>(
        std::vector<std::string>{gpu},
        [this, engine](const ChannelDesc& d, ChannelHost& h) -> std::unique_ptr<ChannelRunner> {
          descs.push_back(d);
          hosts.push_back(&h);
          if (engine) return engine(d, h);
          return std::make_unique<CountingRunner>(&doorbells);
        },
        version);
    os = std::make_shared<SimOs>(std::vector<std::shared_ptr<SimDriver>>{driver});
    ctl = open("/dev/nvidiactl");
    client = alloc(0, 0, abi::cls::root_client);
  }

  int open(const char* path) {
    const int fd = os->open(path, O_RDWR);
    EXPECT_GE(fd, 0) << path;
    fds_.push_back(fd);
    return fd;
  }

  // RM_ALLOC: the status; *out the new handle.
  abi::NvStatus alloc_status(Handle parent, Handle object, uint32_t cls, void* params = nullptr, uint32_t size = 0,
                             Handle* out = nullptr, Handle on_client = ~0u) {
    abi::RmAllocParams p{};
    p.client = on_client == ~0u ? client : on_client;
    p.parent = parent;
    p.object = object;
    p.class_id = cls;
    p.params = reinterpret_cast<uintptr_t>(params);
    p.params_size = size;
    EXPECT_EQ(os->ioctl(ctl, abi::escape_request(abi::esc::rm_alloc, sizeof p), &p), 0);
    if (out) *out = p.object;
    return p.status;
  }
  Handle alloc(Handle parent, Handle object, uint32_t cls, void* params = nullptr, uint32_t size = 0) {
    Handle h = 0;
    const abi::NvStatus s = alloc_status(parent, object, cls, params, size, &h);
    EXPECT_EQ(s, st::ok) << abi::status_name(s) << " allocating class " << std::hex << cls;
    return h;
  }
  template <class P>
  Handle alloc(Handle parent, Handle object, uint32_t cls, P& params) {
    return alloc(parent, object, cls, &params, sizeof(P));
  }
  abi::NvStatus control(Handle object, uint32_t cmd, void* params, uint32_t size) {
    abi::RmControlParams p{};
    p.client = client;
    p.object = object;
    p.cmd = cmd;
    p.params = reinterpret_cast<uintptr_t>(params);
    p.params_size = size;
    EXPECT_EQ(os->ioctl(ctl, abi::escape_request(abi::esc::rm_control, sizeof p), &p), 0);
    return p.status;
  }
  abi::NvStatus free(Handle parent, Handle object) {
    abi::RmFreeParams p{client, parent, object, 0};
    EXPECT_EQ(os->ioctl(ctl, abi::escape_request(abi::esc::rm_free, sizeof p), &p), 0);
    return p.status;
  }
  template <class P>
  abi::NvStatus uvm(int fd, unsigned long cmd, P& p) {
    EXPECT_EQ(os->ioctl(fd, cmd, &p), 0);
    return p.status;
  }

  // Device + subdevice of GPU 0.
  void open_device() {
    abi::DeviceAllocParams d{};
    device = alloc(client, 0x1000, abi::cls::device, d);
    abi::SubdeviceAllocParams s{};
    subdevice = alloc(device, 0x1001, abi::cls::subdevice, s);
  }
  const nv::NvArchInfo& arch() const { return driver->gpu_spec(0).arch_info(); }

  // VRAM memory of `size` bytes.
  Handle alloc_vram(Handle h, uint64_t size) {
    abi::MemoryAllocParams a{};
    a.owner = client;
    a.size = size;
    a.flags = abi::nvos32::alloc_memory_handle_provided;
    return alloc(device, h, abi::cls::memory_local_user, a);
  }
  // A /dev/nvidia0 fd registered to the control fd, RM_MAP_MEMORY'd for `memory`, mmapped at `at` (or anywhere).
  void* map_cpu(Handle memory, uint64_t length, void* at = nullptr) {
    const int fd = open("/dev/nvidia0");
    abi::RegisterFd r{ctl};
    EXPECT_EQ(os->ioctl(fd, abi::escape_request(abi::esc::register_fd, sizeof r), &r), 0);
    abi::RmMapMemoryWithFd m{};
    m.params.client = client;
    m.params.device = device;
    m.params.memory = memory;
    m.params.length = length;
    m.fd = fd;
    EXPECT_EQ(os->ioctl(ctl, abi::escape_request(abi::esc::rm_map_memory, sizeof m), &m), 0);
    EXPECT_EQ(m.params.status, st::ok) << abi::status_name(m.params.status);
    void* p = os->mmap(at, length, PROT_READ | PROT_WRITE, MAP_SHARED | (at ? MAP_FIXED : 0), fd, 0);
    EXPECT_NE(p, MAP_FAILED);
    return p;
  }
  abi::Uuid uuid() {
    abi::GidInfoParams g{};
    g.flags = abi::kGidFormatBinary;
    EXPECT_EQ(control(subdevice, abi::ctrl::gpu_get_gid_info, &g, sizeof g), st::ok);
    abi::Uuid u;
    std::memcpy(u.bytes, g.data, sizeof u.bytes);
    return u;
  }
  // A UVM fd with GPU 0 and a VA space registered.
  int uvm_with_gpu() {
    const int fd = open("/dev/nvidia-uvm");
    abi::UvmInitializeParams i{};
    EXPECT_EQ(uvm(fd, abi::uvm::initialize, i), st::ok);
    abi::UvmRegisterGpuParams g{};
    g.gpu = uuid();
    g.rm_ctrl_fd = -1;
    EXPECT_EQ(uvm(fd, abi::uvm::register_gpu, g), st::ok);
    abi::VaspaceAllocParams va{};
    va.flags = abi::vaspace_flags::is_externally_owned;
    vaspace = alloc(device, 0x1002, arch().classes.va_space, va);
    abi::UvmRegisterGpuVaspaceParams v{};
    v.gpu = uuid();
    v.rm_ctrl_fd = ctl;
    v.client = client;
    v.vaspace = vaspace;
    EXPECT_EQ(uvm(fd, abi::uvm::register_gpu_vaspace, v), st::ok);
    return fd;
  }
  abi::NvStatus create_range(int fd, uint64_t base, uint64_t length) {
    abi::UvmCreateExternalRangeParams p{};
    p.base = base;
    p.length = length;
    return uvm(fd, abi::uvm::create_external_range, p);
  }
  abi::NvStatus map_external(int fd, uint64_t base, uint64_t length, Handle memory, uint64_t offset = 0) {
    auto p = std::make_unique<abi::UvmMapExternalAllocationParams>();
    std::memset(p.get(), 0, sizeof *p);
    p->base = base;
    p->length = length;
    p->offset = offset;
    p->per_gpu[0].gpu = uuid();
    p->per_gpu[0].mapping_type = abi::kUvmMappingReadWriteAtomic;
    p->gpu_count = 1;
    p->rm_ctrl_fd = ctl;
    p->client = client;
    p->memory = memory;
    return uvm(fd, abi::uvm::map_external_allocation, *p);
  }

  std::shared_ptr<SimNv> driver;
  std::shared_ptr<SimOs> os;
  int ctl = -1;
  Handle client = 0, device = 0, subdevice = 0, vaspace = 0;
  std::vector<ChannelDesc> descs;
  std::vector<ChannelHost*> hosts;
  std::atomic<int> doorbells{0};

 private:
  std::vector<int> fds_;
};

// ---------------------------------------------------------------------------------------------------------------
TEST_F(SimNvTest, RootClientGetsAnRmPickedHandle) {
  EXPECT_EQ(client & 0xfff00000u, 0xc1d00000u);
  Handle second = 0;
  EXPECT_EQ(alloc_status(0, 0, abi::cls::root_client, nullptr, 0, &second), st::ok);
  EXPECT_NE(second, client);
}

TEST_F(SimNvTest, ObjectTreeChecksParentsClassesAndHandles) {
  open_device();
  abi::SubdeviceAllocParams s{};
  // No such parent / a parent of the wrong kind / an unknown class / a taken handle / the client's own handle.
  EXPECT_EQ(alloc_status(0x7777, 0x2000, abi::cls::subdevice, &s, sizeof s), st::err_object_not_found);
  EXPECT_EQ(alloc_status(client, 0x2000, abi::cls::subdevice, &s, sizeof s), st::err_invalid_object_parent);
  EXPECT_EQ(alloc_status(device, 0x2000, 0xbeef), st::err_invalid_class);
  EXPECT_EQ(alloc_status(device, subdevice, abi::cls::subdevice, &s, sizeof s), st::err_insert_duplicate_name);
  EXPECT_EQ(alloc_status(device, client, abi::cls::subdevice, &s, sizeof s), st::err_invalid_object_handle);
  // An unknown client.
  EXPECT_EQ(alloc_status(device, 0x2000, abi::cls::subdevice, &s, sizeof s, nullptr, 0x1234),
            st::err_invalid_object_handle);
  // Required parameters missing, or of the wrong size.
  EXPECT_EQ(alloc_status(device, 0x2000, arch().classes.va_space), st::err_invalid_argument);
  abi::VaspaceAllocParams va{};
  EXPECT_EQ(alloc_status(device, 0x2000, arch().classes.va_space, &va, sizeof va - 8), st::err_invalid_argument);
  // A device instance the machine does not have.
  abi::DeviceAllocParams d{};
  d.device_id = 3;
  EXPECT_EQ(alloc_status(client, 0x2001, abi::cls::device, &d, sizeof d), st::err_invalid_argument);
  // RM picks a handle when asked to.
  Handle picked = 0;
  EXPECT_EQ(alloc_status(device, 0, arch().classes.va_space, &va, sizeof va, &picked), st::ok);
  EXPECT_EQ(picked & 0xfff00000u, 0xcaf00000u);
}

TEST_F(SimNvTest, ClassesOfAnotherGenerationAreRefused) {
  open_device();
  const nv::NvArchInfo& hopper = nv::arch_info(nv::NvArch::hopper);
  abi::VaspaceAllocParams va{};
  alloc(device, 0x3000, arch().classes.va_space, va);
  abi::ChannelGroupAllocParams g{};
  g.engine_type = abi::engine_type::graphics;
  alloc(device, 0x3001, arch().classes.channel_group, g);
  abi::ChannelAllocParams c{};
  c.gpfifo_entries = 64;
  EXPECT_EQ(alloc_status(0x3001, 0x3002, hopper.classes.gpfifo, &c, sizeof c), st::err_invalid_class);
  alloc(0x3001, 0x3002, arch().classes.gpfifo, c);
  EXPECT_EQ(alloc_status(0x3002, 0x3003, hopper.classes.compute), st::err_invalid_class);
  alloc(0x3002, 0x3003, arch().classes.compute);
  // Engine objects live on channels only.
  EXPECT_EQ(alloc_status(device, 0x3004, arch().classes.compute), st::err_invalid_object_parent);
}

TEST_F(SimNvTest, FreeTakesTheSubtree) {
  open_device();
  EXPECT_EQ(free(client, device), st::ok);
  abi::SubdeviceAllocParams s{};
  EXPECT_EQ(alloc_status(device, 0x2000, abi::cls::subdevice, &s, sizeof s), st::err_object_not_found);
  EXPECT_EQ(free(client, subdevice), st::err_object_not_found);
  EXPECT_EQ(free(0, client), st::ok);  // the client itself
  EXPECT_EQ(free(0, client), st::err_invalid_object_handle);
}

TEST_F(SimNvTest, EscapesCheckSizeAndNode) {
  open_device();
  // The block inside a larger buffer, so that a request claiming more bytes still names readable memory.
  struct {
    abi::RmAllocParams p;
    uint8_t tail[16];
  } buf{};
  abi::RmAllocParams& p = buf.p;
  p.client = client;
  p.parent = device;
  p.class_id = abi::cls::subdevice;
  // A size that is neither NVOS21 nor NVOS64: EINVAL, status untouched.
  p.status = 0x55;
  errno = 0;
  EXPECT_EQ(os->ioctl(ctl, abi::escape_request(abi::esc::rm_alloc, sizeof p + 4), &buf), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(p.status, 0x55u);
  // RM_ALLOC on /dev/nvidia0 is a control-node escape: EINVAL.
  const int dev = open("/dev/nvidia0");
  EXPECT_EQ(os->ioctl(dev, abi::escape_request(abi::esc::rm_alloc, sizeof p), &p), -1);
  EXPECT_EQ(errno, EINVAL);
  // An escape the driver does not know.
  EXPECT_EQ(os->ioctl(ctl, abi::escape_request(0x77, 8), &p), -1);
  EXPECT_EQ(errno, EINVAL);
  // A GPU node the machine does not have.
  EXPECT_LT(os->open("/dev/nvidia3", O_RDWR), 0);
}

TEST_F(SimNvTest, ControlsAnswerForTheGpu) {
  open_device();
  const SimNvGpuSpec& spec = driver->gpu_spec(0);
  abi::ArchInfoParams a{};
  EXPECT_EQ(control(subdevice, abi::ctrl::mc_get_arch_info, &a, sizeof a), st::ok);
  EXPECT_EQ(a.architecture, abi::arch_info::ga100);
  abi::InfoPair list[3] = {
      {abi::gr_info::litter_num_gpcs, 0}, {abi::gr_info::litter_num_tpc_per_gpc, 0}, {abi::gr_info::sm_version, 0}};
  abi::GrInfoParams gr{};
  gr.list_size = 3;
  gr.list = reinterpret_cast<uintptr_t>(list);
  EXPECT_EQ(control(subdevice, abi::ctrl::gr_get_info, &gr, sizeof gr), st::ok);
  EXPECT_EQ(list[0].data, spec.gpcs);
  EXPECT_EQ(list[1].data, spec.tpcs_per_gpc);
  EXPECT_EQ(list[2].data, 0x0806u);
  abi::ClassListV2Params cl{};
  EXPECT_EQ(control(device, abi::ctrl::gpu_get_classlist_v2, &cl, sizeof cl), st::ok);
  std::vector<uint32_t> classes(cl.classes, cl.classes + cl.num_classes);
  EXPECT_NE(std::find(classes.begin(), classes.end(), arch().classes.compute), classes.end());
  abi::CardInfo cards[abi::kCardInfoEntries]{};
  ASSERT_EQ(os->ioctl(ctl, abi::escape_request(abi::esc::card_info, sizeof cards), cards), 0);
  EXPECT_EQ(cards[0].valid, 1);
  EXPECT_EQ(cards[0].pci.device_id, spec.pci_device_id);
  EXPECT_EQ(cards[1].valid, 0);
  abi::GpuIdInfoParams id{};
  id.gpu_id = cards[0].gpu_id;
  Handle root = client;
  EXPECT_EQ(control(root, abi::ctrl::gpu_get_id_info_v2, &id, sizeof id), st::ok);
  EXPECT_EQ(id.device_instance, 0u);
  // The wrong object for the command, the wrong size, a command nobody exports.
  EXPECT_EQ(control(device, abi::ctrl::mc_get_arch_info, &a, sizeof a), st::err_not_supported);
  EXPECT_EQ(control(subdevice, abi::ctrl::mc_get_arch_info, &a, sizeof a - 4), st::err_invalid_argument);
  EXPECT_EQ(control(subdevice, 0x2080ffff, &a, sizeof a), st::err_not_supported);
  EXPECT_EQ(control(0x4242, abi::ctrl::mc_get_arch_info, &a, sizeof a), st::err_object_not_found);
}

TEST_F(SimNvTest, VersionFileAndVersionEscape) {
  auto text = os->read_file("/proc/driver/nvidia/version");
  ASSERT_TRUE(text);
  auto v = abi::parse_proc_version(*text);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->text, SimNv::kDefaultDriverVersion);
  EXPECT_TRUE(v->open_module);
  abi::VersionCheck q{};
  q.cmd = abi::version_cmd::query;
  ASSERT_EQ(os->ioctl(ctl, abi::escape_request(abi::esc::check_version_str, sizeof q), &q), 0);
  EXPECT_EQ(q.reply, abi::kVersionReplyRecognized);
  EXPECT_STREQ(q.version, std::string(SimNv::kDefaultDriverVersion).c_str());
  // A strict check against another version fails and tells the module's.
  abi::VersionCheck s{};
  s.cmd = abi::version_cmd::strict;
  std::strcpy(s.version, "570.86.16");
  EXPECT_EQ(os->ioctl(ctl, abi::escape_request(abi::esc::check_version_str, sizeof s), &s), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_STREQ(s.version, std::string(SimNv::kDefaultDriverVersion).c_str());
}

TEST_F(SimNvTest, AnotherVersionOnRequest) {
  make("hopper", "570.86.16");
  auto v = abi::parse_proc_version(*os->read_file("/proc/driver/nvidia/version"));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->text, "570.86.16");
  EXPECT_EQ(v->major, 570u);
}

// RM checks a control's parameter size exactly, and three blocks are shorter in 570 than in 580: FB info V2 (57
// pairs, not 128), class list V2 (100 classes, not 200) and the GPFIFO schedule (no bSkipEnable; covered by
// opening a device on 570 in nv_device_test).
TEST_F(SimNvTest, ControlSizesFollowTheDriverBranch) {
  for (const char* version : {"570.86.16", "580.95.05"}) {
    SCOPED_TRACE(version);
    make("hopper", version);
    open_device();
    const abi::ControlSizes& sizes = abi::select_branch(*abi::parse_driver_version(version)).controls;
    const bool r570 = std::string_view(version).starts_with("570");
    EXPECT_EQ(sizes.fb_info_v2, r570 ? 460u : 1028u);
    EXPECT_EQ(sizes.classlist_v2, r570 ? 404u : 804u);
    EXPECT_EQ(sizes.gpfifo_schedule, r570 ? 2u : 3u);
    abi::FbInfoV2Params fb{};
    fb.list_size = 1;
    fb.list[0].index = abi::fb_info::total_ram_size;
    const uint32_t other_fb = r570 ? 1028 : 460;
    EXPECT_EQ(control(subdevice, abi::ctrl::fb_get_info_v2, &fb, other_fb), st::err_invalid_argument);
    ASSERT_EQ(control(subdevice, abi::ctrl::fb_get_info_v2, &fb, sizes.fb_info_v2), st::ok);
    EXPECT_EQ(uint64_t{fb.list[0].data} << 10, driver->gpu_spec(0).vram_bytes);
    fb.list_size = sizes.fb_info_max_list() + 1;
    EXPECT_EQ(control(subdevice, abi::ctrl::fb_get_info_v2, &fb, sizes.fb_info_v2), st::err_invalid_argument);
    // The class list fills only the caller's block: 570's ends 400 bytes in.
    abi::ClassListV2Params cl{};
    std::memset(&cl, 0xab, sizeof cl);
    EXPECT_EQ(control(device, abi::ctrl::gpu_get_classlist_v2, &cl, r570 ? 804 : 404), st::err_invalid_argument);
    ASSERT_EQ(control(device, abi::ctrl::gpu_get_classlist_v2, &cl, sizes.classlist_v2), st::ok);
    EXPECT_GT(cl.num_classes, 0u);
    EXPECT_NE(cl.classes[0], 0xababababu);
    if (r570) {
      EXPECT_EQ(cl.classes[100], 0xababababu) << "written past 570's block";
    }
  }
}

TEST_F(SimNvTest, MemoryIsOneSetOfBytesOnHostAndGpuAtTheSameVa) {
  open_device();
  const uint64_t size = 2 << 20;
  const Handle mem = alloc_vram(0x4000, size);
  // Reserve a VA, map the memory there on the host, then on the GPU at the same VA through UVM.
  void* va = ::mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(va, MAP_FAILED);
  auto* host = static_cast<uint32_t*>(map_cpu(mem, size, va));
  ASSERT_EQ(static_cast<void*>(host), va);
  const int fd = uvm_with_gpu();
  const uint64_t base = reinterpret_cast<uintptr_t>(va);
  ASSERT_EQ(create_range(fd, base, size), st::ok);
  ASSERT_EQ(map_external(fd, base, size, mem), st::ok);
  host[10] = 0xc0ffee;
  auto* gpu = reinterpret_cast<uint32_t*>(driver->translate(0, base + 40, 4));
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(*gpu, 0xc0ffeeu);
  *gpu = 0x1234;
  EXPECT_EQ(host[10], 0x1234u);
  // A range that runs past the mapping does not translate (a GPU page fault).
  EXPECT_EQ(driver->translate(0, base + size - 4, 8), nullptr);
  // UVM_FREE takes the range and its mappings.
  abi::UvmFreeParams f{};
  f.base = base + SimNv::kPage;
  EXPECT_EQ(uvm(fd, abi::uvm::free, f), st::err_invalid_address);  // not where a range starts
  f.base = base;
  f.length = size;
  EXPECT_EQ(uvm(fd, abi::uvm::free, f), st::ok);
  EXPECT_EQ(driver->translate(0, base + 40, 4), nullptr);
  os->munmap(va, size);
}

// RM_MAP_MEMORY ties a CPU mapping to a file as RM does: memory in a BAR (VRAM) to the GPU's own /dev/nvidia<N>,
// RM system memory to a control file; the wrong one is NV_ERR_INVALID_ARGUMENT. A file holds one pending mapping.
TEST_F(SimNvTest, CpuMappingsGoThroughTheFileRmTiesThemTo) {
  open_device();
  const Handle vram = alloc_vram(0x4000, SimNv::kPage);
  abi::MemoryAllocParams a{};
  a.owner = client;
  a.size = SimNv::kPage;
  a.type = abi::nvos32::type_notifier;
  a.flags = abi::nvos32::alloc_memory_handle_provided;
  a.attr = abi::nvos32::location_pci << abi::nvos32::attr_location_shift;
  const Handle sysmem = alloc(device, 0x4001, abi::cls::memory_system, a);
  const int gpu_file = open("/dev/nvidia0");
  abi::RegisterFd r{ctl};
  ASSERT_EQ(os->ioctl(gpu_file, abi::escape_request(abi::esc::register_fd, sizeof r), &r), 0);
  const int ctl_file = open("/dev/nvidiactl");
  auto map = [&](Handle memory, int fd) {
    abi::RmMapMemoryWithFd m{};
    m.params.client = client;
    m.params.device = device;
    m.params.memory = memory;
    m.params.length = SimNv::kPage;
    m.fd = fd;
    EXPECT_EQ(os->ioctl(ctl, abi::escape_request(abi::esc::rm_map_memory, sizeof m), &m), 0);
    return m.params.status;
  };
  EXPECT_EQ(map(sysmem, gpu_file), st::err_invalid_argument) << "system memory is the control device's";
  EXPECT_EQ(map(vram, ctl_file), st::err_invalid_argument) << "VRAM is the GPU's";
  ASSERT_EQ(map(sysmem, ctl_file), st::ok);
  EXPECT_EQ(map(sysmem, ctl_file), st::err_state_in_use) << "one pending mapping per file";
  void* p = os->mmap(nullptr, SimNv::kPage, PROT_READ | PROT_WRITE, MAP_SHARED, ctl_file, 0);
  ASSERT_NE(p, MAP_FAILED);
  static_cast<volatile uint32_t*>(p)[0] = 7;
  os->munmap(p, SimNv::kPage);
  EXPECT_EQ(map(vram, gpu_file), st::ok);
}

TEST_F(SimNvTest, UvmRangeErrors) {
  open_device();
  const Handle mem = alloc_vram(0x4000, 64 << 10);
  const int fd = uvm_with_gpu();
  const uint64_t base = 0x7f0000000000ull;
  // Unaligned, empty, overlapping ranges.
  EXPECT_EQ(create_range(fd, base + 1, 4096), st::err_invalid_address);
  EXPECT_EQ(create_range(fd, base, 0), st::err_invalid_address);
  ASSERT_EQ(create_range(fd, base, 1 << 20), st::ok);
  EXPECT_EQ(create_range(fd, base + (512 << 10), 1 << 20), st::err_uvm_address_in_use);
  // A mapping outside every external range, or running out of its range, or past the memory's end.
  EXPECT_EQ(map_external(fd, base + (2 << 20), 4096, mem), st::err_invalid_address);
  EXPECT_EQ(map_external(fd, base + (1 << 20) - 4096, 8192, mem), st::err_invalid_address);
  EXPECT_EQ(map_external(fd, base, 128 << 10, mem), st::err_invalid_offset);
  EXPECT_EQ(map_external(fd, base, 64 << 10, 0x4999), st::err_object_not_found);
  EXPECT_EQ(map_external(fd, base, 64 << 10, mem), st::ok);
  // A GPU UVM does not know, and a fd that was never initialized.
  abi::UvmRegisterGpuParams g{};
  g.gpu.bytes[0] = 0x42;
  EXPECT_EQ(uvm(fd, abi::uvm::register_gpu, g), st::err_gpu_uuid_not_found);
  g.gpu = uuid();
  EXPECT_EQ(uvm(fd, abi::uvm::register_gpu, g), st::err_invalid_device);  // registered already
  const int raw = open("/dev/nvidia-uvm");
  EXPECT_EQ(create_range(raw, base, 4096), st::err_illegal_action);
}

// A channel group with one GPFIFO channel whose ring and USERD live in one VRAM buffer, as the backend makes them.
class SimNvChannelTest : public SimNvTest {
 protected:
  void make_channel() {
    open_device();
    notifier = alloc_vram(0x5000, 4096);
    ring_mem = alloc_vram(0x5001, 64 << 10);
    abi::VaspaceAllocParams va{};
    alloc(device, 0x5002, arch().classes.va_space, va);
    abi::ChannelGroupAllocParams g{};
    g.engine_type = abi::engine_type::graphics;
    g.error_notifier = notifier;
    group = alloc(device, 0x5003, arch().classes.channel_group, g);
    abi::ContextShareAllocParams cs{};
    cs.vaspace = 0x5002;
    alloc(group, 0x5004, arch().classes.context_share, cs);
    abi::ChannelAllocParams c{};
    c.error_notifier = notifier;
    c.buffer = ring_mem;
    c.gpfifo_offset = 0x7f1000000000ull;
    c.gpfifo_entries = 1024;
    c.context_share = 0x5004;
    c.userd_memory[0] = ring_mem;
    c.userd_offset[0] = 1024 * 8;
    channel = alloc(group, 0x5005, arch().classes.gpfifo, c);
    alloc(channel, 0x5006, arch().classes.compute);
    abi::WorkSubmitTokenParams t{};
    ASSERT_EQ(control(channel, abi::ctrl::gpfifo_get_work_submit_token, &t, sizeof t), st::ok);
    token = t.token;
    const Handle usermode = alloc(subdevice, 0x5007, arch().classes.usermode[0]);
    usermode_page = static_cast<std::byte*>(map_cpu(usermode, nv::gpfifo::kUsermodeSize));
  }
  void ring() {
    os->write_doorbell32(reinterpret_cast<volatile uint32_t*>(usermode_page + nv::gpfifo::kDoorbellOffset), token);
  }
  void schedule(bool on) {
    abi::GpfifoScheduleParams s{};
    s.enable = on;
    ASSERT_EQ(control(group, abi::ctrl::channel_group_gpfifo_schedule, &s, sizeof s), st::ok);
  }

  Handle notifier = 0, ring_mem = 0, group = 0, channel = 0;
  uint32_t token = 0;
  std::byte* usermode_page = nullptr;
};

TEST_F(SimNvChannelTest, ChannelDescribesWhatWasAllocated) {
  make_channel();
  ASSERT_EQ(descs.size(), 1u);
  const ChannelDesc& d = descs[0];
  EXPECT_EQ(d.arch, nv::NvArch::ampere);
  EXPECT_EQ(d.gpfifo_class, arch().classes.gpfifo);
  EXPECT_EQ(d.engine, NvEngineKind::compute);
  EXPECT_EQ(d.gpfifo_va, 0x7f1000000000ull);
  EXPECT_EQ(d.gpfifo_entries, 1024u);
  EXPECT_EQ(d.work_submit_token, token);
  EXPECT_EQ(hosts[0]->engine_classes(), std::vector<uint32_t>{arch().classes.compute});
  alloc(channel, 0x5008, arch().classes.copy);
  EXPECT_EQ(hosts[0]->engine_classes(), (std::vector<uint32_t>{arch().classes.compute, arch().classes.copy}));
  EXPECT_EQ(free(channel, 0x5006), st::ok);
  EXPECT_EQ(hosts[0]->engine_classes(), std::vector<uint32_t>{arch().classes.copy});
  // USERD resolves to the memory and offset the channel was given: what the process writes there, the GPU reads.
  auto* ring_cpu = static_cast<std::byte*>(map_cpu(ring_mem, 64 << 10));
  const uint32_t gp_put = 7;
  std::memcpy(ring_cpu + 1024 * 8 + nv::gpfifo::kUserdGpPutOffset, &gp_put, 4);
  std::byte* userd = hosts[0]->translate(d.userd_va, abi::kUserdSize);
  ASSERT_NE(userd, nullptr);
  uint32_t seen = 0;
  std::memcpy(&seen, userd + nv::gpfifo::kUserdGpPutOffset, 4);
  EXPECT_EQ(seen, gp_put);
  EXPECT_EQ(hosts[0]->translate(d.userd_va + abi::kUserdSize - 4, 8), nullptr);
}

TEST_F(SimNvChannelTest, DoorbellReachesTheRunnerOnceScheduled) {
  make_channel();
  ring();  // before GPFIFO_SCHEDULE: counted, not delivered
  EXPECT_EQ(doorbells.load(), 0);
  schedule(true);
  EXPECT_EQ(doorbells.load(), 1);  // work queued before the group was enabled runs now
  ring();
  ring();
  EXPECT_EQ(doorbells.load(), 3);
  auto state = driver->channel_state(0, descs[0].channel_id);
  ASSERT_TRUE(state);
  EXPECT_EQ(state->doorbells, 3u);
  EXPECT_TRUE(state->scheduled);
  // A store to another register of the page, or a token no channel has, reaches no runner.
  os->write_doorbell32(reinterpret_cast<volatile uint32_t*>(usermode_page + 0x80), token);
  os->write_doorbell32(reinterpret_cast<volatile uint32_t*>(usermode_page + nv::gpfifo::kDoorbellOffset), token + 99);
  EXPECT_EQ(doorbells.load(), 3);
}

TEST_F(SimNvChannelTest, FaultIsWrittenToTheErrorNotifier) {
  make_channel();
  schedule(true);
  const int before = doorbells.load();
  ChannelFault f;
  f.kind = ChannelFaultKind::mmu_fault;
  f.address = 0xdead000;
  f.reason = "read of an unmapped VA";
  hosts[0]->fault(f);
  auto* n = static_cast<std::byte*>(map_cpu(notifier, 4096));
  uint32_t info32 = 0;
  uint16_t status = 0;
  std::memcpy(&info32, n + 8, 4);
  std::memcpy(&status, n + 14, 2);
  EXPECT_EQ(info32, 31u);  // ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT
  EXPECT_EQ(status, 0xffff);
  auto state = driver->channel_state(0, descs[0].channel_id);
  ASSERT_TRUE(state);
  EXPECT_TRUE(state->faulted);
  EXPECT_EQ(state->fault.address, 0xdead000u);
  ring();  // a faulted channel takes no more work
  EXPECT_EQ(doorbells.load(), before);
}

// With the simulated GPU's executor behind the channel: a GPFIFO entry naming a pushbuffer nothing maps faults the
// channel, and the driver writes the fault to the error notifier as RM does.
TEST_F(SimNvChannelTest, EngineFaultReachesTheErrorNotifier) {
  make("ampere", std::string(SimNv::kDefaultDriverVersion),
       nv_engine::make_channel_runner_factory(nv_engine::EngineOptions{}));
  make_channel();
  const uint64_t ring_va = descs.at(0).gpfifo_va;
  const int fd = uvm_with_gpu();
  ASSERT_EQ(create_range(fd, ring_va, 64 << 10), st::ok);
  ASSERT_EQ(map_external(fd, ring_va, 64 << 10, ring_mem), st::ok);
  auto* cpu = static_cast<std::byte*>(map_cpu(ring_mem, 64 << 10));
  const uint64_t entry = nv::gpfifo_entry(0x20000, 4);  // 0x20000: mapped nowhere
  std::memcpy(cpu, &entry, 8);
  const uint32_t gp_put = 1;
  std::memcpy(cpu + 1024 * 8 + nv::gpfifo::kUserdGpPutOffset, &gp_put, 4);
  schedule(true);
  ring();
  std::optional<SimNv::ChannelState> state;
  for (int i = 0; i < 2000 && !(state && state->faulted); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    state = driver->channel_state(0, descs[0].channel_id);
  }
  ASSERT_TRUE(state && state->faulted) << "the channel did not fault";
  auto* n = static_cast<std::byte*>(map_cpu(notifier, 4096));
  uint32_t info32 = 0;
  uint16_t status = 0;
  std::memcpy(&info32, n + 8, 4);
  std::memcpy(&status, n + 14, 2);
  EXPECT_EQ(status, 0xffff);
  EXPECT_EQ(info32, state->fault.kind == ChannelFaultKind::mmu_fault ? 31u : 32u) << state->fault.reason;
}

TEST_F(SimNvChannelTest, FreeingTheGroupStopsTheChannel) {
  make_channel();
  EXPECT_EQ(driver->channels().size(), 1u);
  EXPECT_EQ(free(device, group), st::ok);
  EXPECT_TRUE(driver->channels().empty());
  ring();
  EXPECT_EQ(doorbells.load(), 0);
}

}  // namespace
}  // namespace hcq::sim

namespace hcq::sim {
namespace {

// What the registry opens for SIM-NV:<gpu>: the backend on the simulated driver with the executor behind channels.
class SimNvGpuBringUp : public ::testing::TestWithParam<const char*> {};

TEST_P(SimNvGpuBringUp, OpensWithTheExecutorBehindItsChannels) {
  const std::string gpu = GetParam();
  std::unique_ptr<Device> dev = open_sim_nv_gpu("SIM-NV:" + gpu, gpu, nv_engine::Scheduling::deterministic);
  const DeviceInfo i = dev->info();
  EXPECT_EQ(i.name, "SIM-NV:" + gpu);
  EXPECT_EQ(i.arch, cat("sm_", SimNvGpuSpec::of(gpu).sm_version));
  BufferSpec spec;
  spec.cpu_access = true;
  Allocation a = dev->alloc_memory(1 << 16, spec);
  ASSERT_TRUE(a.host_mapped);
  std::memset(a.host_ptr(), 0x5a, 1 << 16);
  dev->free_memory(a);
}

// The backend's copy queue, through the simulated driver's doorbell, executed by the engine: bytes move and the
// timeline signal arrives.
TEST_P(SimNvGpuBringUp, CopyAndSignalRunThroughTheWholeStack) {
  const std::string gpu = GetParam();
  std::unique_ptr<Device> dev = open_sim_nv_gpu("SIM-NV:" + gpu, gpu, nv_engine::Scheduling::threaded);
  BufferSpec spec;
  spec.cpu_access = true;
  Allocation src = dev->alloc_memory(4096, spec), dst = dev->alloc_memory(4096, spec);
  for (int i = 0; i < 1024; ++i) static_cast<uint32_t*>(src.host_ptr())[i] = 0x1000u + i;
  std::memset(dst.host_ptr(), 0, 4096);
  auto q = dev->copy_queue();
  q->wait(dev->timeline_signal(), dev->timeline_value() - 1);
  q->copy(dst.va, src.va, 4096);
  const uint64_t value = hcq::test::take_timeline_value(*dev);
  q->signal(dev->timeline_signal(), value);
  q->submit();
  dev->wait_signal(dev->timeline_signal(), value);
  EXPECT_EQ(std::memcmp(dst.host_ptr(), src.host_ptr(), 4096), 0);
  dev->free_memory(src);
  dev->free_memory(dst);
}

// A kernel compiled by NVRTC, loaded (its host twin built and mapped by the program hooks), launched through a QMD:
// the engine runs the twin and the result lands in device memory.
TEST_P(SimNvGpuBringUp, KernelRunsAsItsHostTwin) {
  const std::string gpu = GetParam();
  std::unique_ptr<Device> dev = open_sim_nv_gpu("SIM-NV:" + gpu, gpu, nv_engine::Scheduling::threaded);
  std::vector<uint8_t> binary;
  try {
    binary = dev->compiler().compile(R"(
HCQ_KERNEL(add_one_f32, 2, 1) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    (void)y; (void)z;
    uint32_t i = HCQ_GLOBAL_ID(0, x);
    if (i < HCQ_VAL(0)) HCQ_BUF(float, 0)[i] = HCQ_BUF(float, 1)[i] + 1.0f;
  }
}
)");
  } catch (const CompileError& e) {
    GTEST_SKIP() << "no NVRTC here: " << e.what();
  }
  std::unique_ptr<Program> prog = dev->load_program("add_one_f32", binary);
  BufferSpec spec;
  spec.cpu_access = true;
  Allocation in = dev->alloc_memory(4096, spec), out = dev->alloc_memory(4096, spec);
  static_cast<float*>(in.host_ptr())[0] = 0.0f;
  static_cast<float*>(in.host_ptr())[1] = 1.0f;
  auto q = dev->compute_queue();
  q->wait(dev->timeline_signal(), dev->timeline_value() - 1);
  q->exec(*prog, LaunchArgs{{out.va, in.va}, {2u}}, Dims{1u, 1u, 1u}, Dims{2u, 1u, 1u});
  const uint64_t value = hcq::test::take_timeline_value(*dev);
  q->signal(dev->timeline_signal(), value);
  q->submit();
  dev->wait_signal(dev->timeline_signal(), value);
  EXPECT_EQ(static_cast<float*>(out.host_ptr())[0], 1.0f);
  EXPECT_EQ(static_cast<float*>(out.host_ptr())[1], 2.0f);
  prog.reset();
  dev->free_memory(in);
  dev->free_memory(out);
}

INSTANTIATE_TEST_SUITE_P(Gpus, SimNvGpuBringUp, ::testing::Values("ampere", "ga100", "hopper", "blackwell"));

TEST(SimNvGpus, TableIsConsistentWithTheArchitectureFacts) {
  EXPECT_EQ(SimNvGpuSpec::names(), (std::vector<std::string>{"ampere", "ga100", "hopper", "blackwell"}));
  for (const std::string& name : SimNvGpuSpec::names()) {
    const SimNvGpuSpec& g = SimNvGpuSpec::of(name);
    const nv::NvArchInfo& a = g.arch_info();
    EXPECT_EQ(a.arch, g.arch) << name;
    EXPECT_LE(g.sm_count, g.gpcs * g.tpcs_per_gpc * g.sms_per_tpc) << name;
    for (uint32_t c : {a.classes.gpfifo, a.classes.compute, a.classes.copy, a.classes.usermode[0]})
      EXPECT_TRUE(g.supports_class(c)) << name << " " << std::hex << c;
  }
  EXPECT_THROW(SimNvGpuSpec::of("volta"), InvalidArgument);
}

}  // namespace
}  // namespace hcq::sim
