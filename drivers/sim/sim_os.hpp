// The OS seam of a simulated machine: paths and file descriptors that belong to a simulated kernel driver
// (/dev/kfd, /dev/dri/renderD*, the KFD sysfs topology, ...) go to that driver; everything else goes to real_os().
// The real drivers (drivers/amd, drivers/nv) run unchanged on top of it.
//
// A simulated file descriptor is a real descriptor number (a placeholder memfd, so it can never collide with a real
// file the process opens) recorded in a table that names the driver and the driver's own file id.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "hcq/backend/os.hpp"

namespace hcq::sim {

// One simulated kernel driver behind a SimOs. Methods return -errno on failure (never set errno themselves).
// All methods may be called from any thread.
class SimOs;

class SimDriver {
 public:
  virtual ~SimDriver() = default;
  // Called once by the SimOs the driver is given to (the driver then resolves descriptors through it, e.g. the
  // render-node fd that ACQUIRE_VM names). The SimOs outlives the calls it makes into the driver.
  virtual void attach(SimOs& os) = 0;
  // True if `path` (a device node or a sysfs path) belongs to this driver.
  virtual bool handles_path(std::string_view path) const = 0;
  // Opens a device node: a driver file id >= 0, or -errno (-ENOENT for a path it does not know).
  virtual int open(const std::string& path, int flags) = 0;
  virtual void close(int file) = 0;
  virtual int ioctl(int file, unsigned long request, void* arg) = 0;
  // Maps `length` bytes of the file at `offset`; returns the address or MAP_FAILED with *err set.
  virtual void* mmap(int file, void* addr, size_t length, int prot, int flags, off_t offset, int* err) = 0;
  // Told before the range is unmapped (whoever mapped it), so the driver forgets doorbell and event mappings.
  virtual void on_munmap(void* addr, size_t length) = 0;
  virtual std::optional<std::string> read_file(const std::string& path) = 0;
  virtual std::vector<std::string> list_dir(const std::string& path) = 0;
  // A doorbell store. Returns true if `where` lies in a doorbell page this driver mapped (the store is done and the
  // simulated device told); false to let the store go through as plain memory.
  virtual bool write_doorbell(volatile void* where, uint64_t value, unsigned bytes) = 0;
};

class SimOs final : public Os {
 public:
  explicit SimOs(std::vector<std::shared_ptr<SimDriver>> drivers, Os& fallback = real_os());
  ~SimOs() override;
  SimOs(const SimOs&) = delete;
  SimOs& operator=(const SimOs&) = delete;

  int open(const char* path, int flags) override;
  int close(int fd) override;
  int ioctl(int fd, unsigned long request, void* arg) override;
  void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) override;
  int munmap(void* addr, size_t length) override;
  std::optional<std::string> read_file(const std::string& path) override;
  std::vector<std::string> list_dir(const std::string& path) override;
  int eventfd(unsigned initval, int flags) override;
  void write_doorbell32(volatile uint32_t* where, uint32_t value) override;
  void write_doorbell64(volatile uint64_t* where, uint64_t value) override;

  // The simulated file behind a descriptor: its driver and the driver's file id; nullopt for a real descriptor.
  struct OpenFile {
    SimDriver* driver;
    int file;
  };
  std::optional<OpenFile> lookup(int fd) const;
  const std::vector<std::shared_ptr<SimDriver>>& drivers() const { return drivers_; }

 private:
  SimDriver* driver_for(std::string_view path) const;

  std::vector<std::shared_ptr<SimDriver>> drivers_;
  Os& fallback_;
  mutable std::shared_mutex mu_;
  std::map<int, OpenFile> files_;  // placeholder fd -> driver file
};

}  // namespace hcq::sim
