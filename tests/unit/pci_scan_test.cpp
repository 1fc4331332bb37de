// The PCI scan: libpciaccess on this machine (no GPU here: an empty list or a clear "libpciaccess unavailable" are
// both right), and the sysfs reading over a fabricated sysfs.
#include "common/pci_scan.hpp"

#include <gtest/gtest.h>

#include <sys/mman.h>

#include <cerrno>
#include <map>
#include <regex>

namespace hcq {
namespace {

// An Os whose sysfs is a map of files and directories.
class FakeSysfs final : public Os {
 public:
  std::map<std::string, std::string> files;
  std::map<std::string, std::vector<std::string>> dirs;
  int open(const char*, int) override { return errno = ENOENT, -1; }
  int close(int) override { return 0; }
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

TEST(PciScan, AddressIsSysfsSpelling) {
  EXPECT_EQ(pci_address(0, 3, 0, 0), "0000:03:00.0");
  EXPECT_EQ(pci_address(0x10, 0xc1, 0x1f, 7), "0010:c1:1f.7");
}

TEST(PciScan, GpuClassesAreDisplayAndProcessingAccelerators) {
  EXPECT_TRUE(is_gpu_class(0x030000));   // VGA
  EXPECT_TRUE(is_gpu_class(0x030200));   // 3D controller (datacenter NVIDIA)
  EXPECT_TRUE(is_gpu_class(0x038000));   // display, other (AMD Instinct MI200)
  EXPECT_TRUE(is_gpu_class(0x120000));   // processing accelerator (AMD Instinct MI300)
  EXPECT_FALSE(is_gpu_class(0x040300));  // the HDMI audio function of the same card
  EXPECT_FALSE(is_gpu_class(0x0c0330));  // its USB-C controller
}

TEST(PciScan, VendorNames) {
  PciGpu g;
  g.vendor_id = kPciVendorAmd;
  EXPECT_EQ(g.vendor_name(), "AMD");
  g.vendor_id = kPciVendorNvidia;
  EXPECT_EQ(g.vendor_name(), "NVIDIA");
  g.vendor_id = 0x8086;
  EXPECT_EQ(g.vendor_name(), "vendor 0x8086");
}

TEST(PciScan, SysfsGivesBoundDriverAndRenderNodes) {
  FakeSysfs os;
  const std::string dir = "/sys/bus/pci/devices/0000:03:00.0";
  os.files[dir + "/uevent"] = "DRIVER=amdgpu\nPCI_CLASS=30000\nPCI_ID=1002:744C\nPCI_SLOT_NAME=0000:03:00.0\n";
  os.dirs[dir + "/drm"] = {"card1", "renderD129", "renderDx", "renderD"};
  PciGpu g;
  g.address = "0000:03:00.0";
  read_pci_sysfs(os, g);
  EXPECT_EQ(g.kernel_driver, "amdgpu");
  EXPECT_EQ(g.render_minors, std::vector<uint32_t>{129});  // malformed names are skipped
}

TEST(PciScan, SysfsWithoutDriverLeavesItEmpty) {
  FakeSysfs os;
  const std::string dir = "/sys/bus/pci/devices/0000:41:00.0";
  os.files[dir + "/uevent"] = "PCI_CLASS=30200\nPCI_ID=10DE:2335\n";  // no DRIVER= line: nothing bound
  PciGpu g;
  g.address = "0000:41:00.0";
  g.kernel_driver = "stale";
  g.render_minors = {1};
  read_pci_sysfs(os, g);
  EXPECT_EQ(g.kernel_driver, "");
  EXPECT_TRUE(g.render_minors.empty());
}

TEST(PciScan, UnreadableSysfsIsNotAnError) {
  FakeSysfs os;
  PciGpu g;
  g.address = "0000:05:00.0";
  read_pci_sysfs(os, g);
  EXPECT_EQ(g.kernel_driver, "");
  EXPECT_TRUE(g.render_minors.empty());
}

// This machine: whatever the bus holds, the scan either reports why it could not look, or lists only AMD and
// NVIDIA GPU-class functions with well-formed addresses, in bus order.
TEST(PciScan, ThisMachine) {
  const PciScan scan = scan_pci_gpus(real_os());
  if (!scan.problem.empty()) {
    EXPECT_NE(scan.problem.find("libpciaccess"), std::string::npos) << scan.problem;
    EXPECT_TRUE(scan.gpus.empty());
    GTEST_SKIP() << scan.problem;
  }
  const std::regex address("[0-9a-f]{4}:[0-9a-f]{2}:[0-1][0-9a-f]\\.[0-7]");
  for (size_t i = 0; i < scan.gpus.size(); ++i) {
    const PciGpu& g = scan.gpus[i];
    EXPECT_TRUE(std::regex_match(g.address, address)) << g.address;
    EXPECT_TRUE(g.vendor_id == kPciVendorAmd || g.vendor_id == kPciVendorNvidia) << g.address;
    EXPECT_TRUE(is_gpu_class(g.class_code)) << g.address;
    if (i > 0) {
      EXPECT_LT(scan.gpus[i - 1].address, g.address);
    }
  }
  // Scanning twice gives the same answer (libpciaccess state is set up and torn down each time).
  const PciScan again = scan_pci_gpus(real_os());
  ASSERT_EQ(again.gpus.size(), scan.gpus.size());
  for (size_t i = 0; i < scan.gpus.size(); ++i) EXPECT_EQ(again.gpus[i].address, scan.gpus[i].address);
}

}  // namespace
}  // namespace hcq
