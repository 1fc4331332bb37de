// The RM/UVM ABI as data: struct sizes and offsets per driver branch, request numbers, driver version matching,
// status names, and the RM client's error typing against a minimal scripted /dev/nvidiactl.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hcq/backend/os.hpp"
#include "hcq/error.hpp"
#include "nv/rm/abi/branch.hpp"
#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/ctrl.hpp"
#include "nv/rm/abi/ioctl.hpp"
#include "nv/rm/abi/nvos.hpp"
#include "nv/rm/abi/status.hpp"
#include "nv/rm/abi/uvm.hpp"
#include "nv/rm/rm_client.hpp"

namespace hcq::nv {
namespace {

using namespace abi;

TEST(NvRmAbi, RequestNumbersAreLinuxIowrOfTypeF) {
  // _IOWR('F', 0x2b, 32): what the driver decodes as escape RM_ALLOC with a 32-byte (NVOS21) block.
  EXPECT_EQ(escape_request(esc::rm_alloc, sizeof(RmAllocParams)), 0xc020462bul);
  EXPECT_EQ(escape_request(esc::rm_control, sizeof(RmControlParams)), 0xc020462aul);
  EXPECT_EQ(escape_request(esc::card_info, kCardInfoEntries * sizeof(CardInfo)), 0xc90046c8ul);
  const unsigned long r = escape_request(esc::rm_map_memory, sizeof(RmMapMemoryWithFd));
  EXPECT_EQ(request_escape(r), esc::rm_map_memory);
  EXPECT_EQ(request_type(r), uint32_t{'F'});
  EXPECT_EQ(request_size(r), sizeof(RmMapMemoryWithFd));
  EXPECT_EQ(request_dir(r), 3u);
  // The Linux-only escapes sit at NV_IOCTL_BASE (200) + n.
  EXPECT_EQ(esc::check_version_str, 210u);
  EXPECT_EQ(esc::register_fd, 201u);
}

TEST(NvRmAbi, SizesOfTheBlocksTheDriverChecks) {
  // The sizes the driver compares (or that decide which struct it reads); static_asserts pin the layouts, this
  // records the numbers in one readable place.
  EXPECT_EQ(sizeof(RmAllocParams), 32u);            // NVOS21
  EXPECT_EQ(sizeof(RmAllocWithRightsParams), 48u);  // NVOS64
  EXPECT_EQ(sizeof(RmControlParams), 32u);          // NVOS54
  EXPECT_EQ(sizeof(RmFreeParams), 16u);             // NVOS00
  EXPECT_EQ(sizeof(RmAllocMemoryWithFd), 56u);      // NVOS02 + fd
  EXPECT_EQ(sizeof(RmMapMemoryWithFd), 56u);        // NVOS33 + fd
  EXPECT_EQ(sizeof(RmUnmapMemoryParams), 32u);      // NVOS34
  EXPECT_EQ(sizeof(CardInfo), 72u);
  EXPECT_EQ(sizeof(VersionCheck), 72u);
  EXPECT_EQ(sizeof(ChannelAllocParams), 368u);
  EXPECT_EQ(sizeof(MemoryAllocParams), 128u);
  EXPECT_EQ(sizeof(DeviceAllocParams), 56u);
  EXPECT_EQ(sizeof(VaspaceAllocParams), 56u);
  EXPECT_EQ(sizeof(BuildVersionParams), 1032u);
  EXPECT_EQ(sizeof(UvmRegisterGpuParams), 40u);
  EXPECT_EQ(sizeof(UvmMapExternalAllocationParams), 9264u);
  EXPECT_EQ(ctrl::command_class(ctrl::gpu_get_gid_info), 0x2080u);
  EXPECT_EQ(ctrl::command_class(ctrl::gpfifo_get_work_submit_token), 0xc36fu);
}

TEST(NvRmAbi, MapMemoryDmaLayoutDiffersBetween570And580) {
  const BranchAbi* r570 = find_branch(570);
  const BranchAbi* r580 = find_branch(580);
  ASSERT_NE(r570, nullptr);
  ASSERT_NE(r580, nullptr);
  EXPECT_EQ(r570->map_memory_dma.size, 56u);
  EXPECT_EQ(r580->map_memory_dma.size, 64u);
  EXPECT_EQ(r570->map_memory_dma.dma_offset, 40u);
  EXPECT_EQ(r580->map_memory_dma.dma_offset, 48u);
  EXPECT_EQ(r570->map_memory_dma.flags2, 0u);  // no flags2 before 580
  EXPECT_EQ(r580->map_memory_dma.flags2, 36u);

  for (const BranchAbi* b : {r570, r580}) {
    SCOPED_TRACE(std::string(b->name));
    MapMemoryDma in;
    in.client = 0xc1d00001;
    in.device = 0x1001;
    in.dma = 0x1003;
    in.memory = 0x1010;
    in.offset = 0x2000;
    in.length = 0x200000;
    in.flags = 0x8110;
    in.flags2 = b->map_memory_dma.flags2 ? 7 : 0;
    in.dma_offset = 0x7f0000200000;
    in.status = 0x1f;
    std::vector<std::byte> block(b->map_memory_dma.size);
    encode_map_memory_dma(b->map_memory_dma, in, block);
    uint64_t raw = 0;
    std::memcpy(&raw, block.data() + b->map_memory_dma.dma_offset, 8);
    EXPECT_EQ(raw, in.dma_offset);
    const MapMemoryDma out = decode_map_memory_dma(b->map_memory_dma, block);
    EXPECT_EQ(out.client, in.client);
    EXPECT_EQ(out.memory, in.memory);
    EXPECT_EQ(out.length, in.length);
    EXPECT_EQ(out.flags, in.flags);
    EXPECT_EQ(out.flags2, in.flags2);
    EXPECT_EQ(out.dma_offset, in.dma_offset);
    EXPECT_EQ(out.status, in.status);
    // A block of the other branch's size is refused, not misread.
    std::vector<std::byte> wrong(b->map_memory_dma.size == 56 ? 64 : 56);
    EXPECT_THROW(decode_map_memory_dma(b->map_memory_dma, wrong), InvalidArgument);
  }
}

TEST(NvRmAbi, DriverVersionParsing) {
  auto v = parse_driver_version("580.126.20");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->major, 580u);
  EXPECT_EQ(v->minor, 126u);
  EXPECT_EQ(v->patch, 20u);
  ASSERT_TRUE(parse_driver_version("570.86"));
  EXPECT_FALSE(parse_driver_version(""));
  EXPECT_FALSE(parse_driver_version("580"));
  EXPECT_FALSE(parse_driver_version("580.x.1"));
  EXPECT_FALSE(parse_driver_version("1.2.3.4"));
  EXPECT_FALSE(parse_driver_version("580..1"));

  const auto open = parse_proc_version(
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.126.20  Release Build  (dvs-builder@U22)  Mon "
      "Jan  5 2026\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
  ASSERT_TRUE(open);
  EXPECT_EQ(open->text, "580.126.20");
  EXPECT_TRUE(open->open_module);
  const auto closed = parse_proc_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.211.01  Tue Oct 7\n");
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->major, 570u);
  EXPECT_FALSE(closed->open_module);
  EXPECT_FALSE(parse_proc_version("GCC version: 12.2.0\n"));
}

TEST(NvRmAbi, BranchSelection) {
  EXPECT_EQ(select_branch(*parse_driver_version("580.126.20")).major, 580u);
  EXPECT_EQ(select_branch(*parse_driver_version("580.65.06")).major, 580u);
  EXPECT_EQ(select_branch(*parse_driver_version("570.86.15")).major, 570u);
  try {
    select_branch(*parse_driver_version("999.1"));
    FAIL() << "999.1 accepted";
  } catch (const UnsupportedDriver& e) {
    EXPECT_STREQ(e.what(), "NVIDIA driver 999.1 is not supported (supported branches: 570, 580)");
  }
}

TEST(NvRmAbi, StatusNames) {
  EXPECT_EQ(status_name(status::ok), "NV_OK");
  EXPECT_EQ(status_name(status::err_invalid_class), "NV_ERR_INVALID_CLASS");
  EXPECT_EQ(status_name(status::err_invalid_object_parent), "NV_ERR_INVALID_OBJECT_PARENT");
  EXPECT_EQ(status_name(0x00000036), "NV_ERR_INVALID_OBJECT_PARENT");
  EXPECT_EQ(status_name(0x7777), "NV_STATUS 0x7777");
}

// ---- RmClient against a scripted control device: version check, root client, and how failures surface.
class ScriptedCtl final : public Os {
 public:
  std::optional<std::string> version = "580.126.20";  // what CHECK_VERSION_STR answers; nullopt: escape fails
  std::optional<std::string> proc;                    // /proc/driver/nvidia/version
  NvStatus alloc_status = status::ok;                 // for every RM_ALLOC after the root client
  NvStatus control_status = status::ok;
  int control_errno = 0;
  std::vector<uint32_t> escapes;

  int open(const char* path, int) override {
    if (std::string(path) != "/dev/nvidiactl") return errno = ENOENT, -1;
    return kFd;
  }
  int close(int) override { return 0; }
  int ioctl(int fd, unsigned long request, void* arg) override {
    if (fd != kFd || request_type(request) != 'F') return errno = ENOTTY, -1;
    const uint32_t nr = request_escape(request);
    escapes.push_back(nr);
    switch (nr) {
      case esc::check_version_str: {
        if (!version || request_size(request) != sizeof(VersionCheck)) return errno = EINVAL, -1;
        auto* v = static_cast<VersionCheck*>(arg);
        v->reply = kVersionReplyRecognized;
        std::snprintf(v->version, sizeof v->version, "%s", version->c_str());
        return 0;
      }
      case esc::rm_alloc: {
        auto* p = static_cast<RmAllocParams*>(arg);
        if (p->class_id == cls::root_client) {
          p->object = 0xc1d00042;
          p->status = status::ok;
        } else {
          p->status = alloc_status;
        }
        return 0;
      }
      case esc::rm_control: {
        if (control_errno) return errno = control_errno, -1;
        static_cast<RmControlParams*>(arg)->status = control_status;
        return 0;
      }
      case esc::rm_free: static_cast<RmFreeParams*>(arg)->status = status::ok; return 0;
    }
    return errno = EINVAL, -1;
  }
  void* mmap(void*, size_t, int, int, int, off_t) override { return errno = ENODEV, MAP_FAILED; }
  int munmap(void*, size_t) override { return 0; }
  std::optional<std::string> read_file(const std::string& path) override {
    return path == "/proc/driver/nvidia/version" ? proc : std::nullopt;
  }
  std::vector<std::string> list_dir(const std::string&) override { return {}; }
  int eventfd(unsigned, int) override { return errno = ENOSYS, -1; }

 private:
  static constexpr int kFd = 1000;
};

TEST(NvRmClient, AcceptsSupportedBranchesAndAllocatesTheRootClient) {
  for (const char* v : {"580.126.20", "570.86.15"}) {
    ScriptedCtl os;
    os.version = v;
    RmClient rm(os);
    EXPECT_EQ(rm.version().text, v);
    EXPECT_EQ(rm.branch().major, rm.version().major);
    EXPECT_EQ(rm.root(), 0xc1d00042u);
  }
}

TEST(NvRmClient, RefusesAnUnknownDriverNamingItAndTheSupportedOnes) {
  ScriptedCtl os;
  os.version = "999.1";
  try {
    RmClient rm(os);
    FAIL() << "999.1 accepted";
  } catch (const UnsupportedDriver& e) {
    EXPECT_STREQ(e.what(), "NVIDIA driver 999.1 is not supported (supported branches: 570, 580)");
  }
  EXPECT_EQ(std::count(os.escapes.begin(), os.escapes.end(), esc::rm_alloc), 0) << "allocated on a refused driver";
}

TEST(NvRmClient, FallsBackToProcVersionAndSeesTheOpenModule) {
  ScriptedCtl os;
  os.version = std::nullopt;
  os.proc = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build\n";
  RmClient rm(os);
  EXPECT_EQ(rm.version().text, "580.65.06");
  EXPECT_TRUE(rm.version().open_module);
  os.proc = std::nullopt;
  EXPECT_THROW(RmClient{os}, UnsupportedDriver);
}

TEST(NvRmClient, MissingControlDeviceIsUnsupportedDriver) {
  class NoDevice final : public Os {
   public:
    int open(const char*, int) override { return errno = ENOENT, -1; }
    int close(int) override { return 0; }
    int ioctl(int, unsigned long, void*) override { return errno = EBADF, -1; }
    void* mmap(void*, size_t, int, int, int, off_t) override { return MAP_FAILED; }
    int munmap(void*, size_t) override { return 0; }
    std::optional<std::string> read_file(const std::string&) override { return std::nullopt; }
    std::vector<std::string> list_dir(const std::string&) override { return {}; }
    int eventfd(unsigned, int) override { return -1; }
  } os;
  try {
    RmClient rm(os);
    FAIL();
  } catch (const UnsupportedDriver& e) {
    EXPECT_NE(std::string(e.what()).find("not loaded"), std::string::npos) << e.what();
  }
}

TEST(NvRmClient, FailuresAreTypedAndNameCallClassHandleAndStatus) {
  ScriptedCtl os;
  RmClient rm(os);
  os.alloc_status = status::err_invalid_class;
  try {
    rm.alloc(rm.root(), 0xbeef);
    FAIL();
  } catch (const RmError& e) {
    EXPECT_EQ(e.status(), status::err_invalid_class);
    const std::string m = e.what();
    EXPECT_NE(m.find("RM_ALLOC of class 0xbeef"), std::string::npos) << m;
    EXPECT_NE(m.find("under 0xc1d00042"), std::string::npos) << m;
    EXPECT_NE(m.find("NV_ERR_INVALID_CLASS"), std::string::npos) << m;
  }
  os.alloc_status = status::err_no_memory;
  EXPECT_THROW(rm.alloc(rm.root(), 0x40), OutOfMemory);

  os.control_status = status::err_invalid_object_handle;
  GpuIdInfoParams id{};
  try {
    rm.control(0x1234, ctrl::gpu_get_id_info_v2, id);
    FAIL();
  } catch (const RmError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("RM_CONTROL 0x205 on 0x1234"), std::string::npos) << m;
    EXPECT_NE(m.find("NV_ERR_INVALID_OBJECT_HANDLE"), std::string::npos) << m;
  }
  os.control_errno = EFAULT;
  try {
    rm.control(0x1234, ctrl::gpu_get_id_info_v2, id);
    FAIL();
  } catch (const OsError& e) {
    EXPECT_EQ(e.err(), EFAULT);
    EXPECT_NE(std::string(e.what()).find("RM_CONTROL 0x205"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hcq::nv
