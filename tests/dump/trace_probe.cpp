// A program for the preload shim's test: it opens a file that is not a GPU (argv[1], default /dev/null) and issues
// KFD, RM and UVM ioctl requests on it, each with a real parameter block. The kernel answers every one with ENOTTY;
// the shim's log must show them decoded by name with that result. Exits 0 when every request failed with ENOTTY.
#include <fcntl.h>
#include <linux/kfd_ioctl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "nv/rm/abi/ioctl.hpp"
#include "nv/rm/abi/nvos.hpp"
#include "nv/rm/abi/uvm.hpp"

namespace abi = hcq::nv::abi;

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "/dev/null";
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    std::perror(path);
    return 2;
  }
  kfd_ioctl_get_version_args version{};
  kfd_ioctl_create_queue_args queue{};
  queue.queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL;
  abi::RmAllocParams alloc{};
  abi::RmControlParams control{};
  abi::VersionCheck check{};
  abi::UvmInitializeParams uvm{};
  struct Request {
    unsigned long request;
    void* arg;
  };
  const Request requests[] = {
      {AMDKFD_IOC_GET_VERSION, &version},
      {AMDKFD_IOC_CREATE_QUEUE, &queue},
      {abi::escape_request(abi::esc::rm_alloc, sizeof alloc), &alloc},
      {abi::escape_request(abi::esc::rm_control, sizeof control), &control},
      {abi::escape_request(abi::esc::check_version_str, sizeof check), &check},
      {abi::uvm::initialize, &uvm},
  };
  int unexpected = 0;
  for (const Request& r : requests) {
    const int rc = ioctl(fd, r.request, r.arg);
    if (rc != -1 || errno != ENOTTY) {
      std::fprintf(stderr, "ioctl 0x%lx on %s: rc %d errno %d, expected ENOTTY\n", r.request, path, rc, errno);
      ++unexpected;
    }
  }
  close(fd);
  return unexpected == 0 ? 0 : 1;
}
