// The ioctl decoder's front: which driver a device path belongs to, and a request handed to that family's decoder
// (kfd_ioctl_decode.cpp, rm_ioctl_decode.cpp, uvm_ioctl_decode.cpp).
#include "trace/ioctl_decode.hpp"

#include <linux/kfd_ioctl.h>

#include "nv/rm/abi/ioctl.hpp"
#include "nv/rm/abi/uvm.hpp"
#include "trace/ioctl_args.hpp"

namespace hcq::trace {

using detail::decode_kfd;
using detail::decode_rm;
using detail::decode_uvm;
using detail::ioc_type;
namespace abi = hcq::nv::abi;

Family family_of_path(std::string_view path) {
  if (path == "/dev/kfd") return Family::kfd;
  if (path == "/dev/nvidia-uvm" || path == "/dev/nvidia-uvm-tools") return Family::uvm;
  if (path == "/dev/nvidiactl") return Family::rm;
  if (path.starts_with("/dev/nvidia")) {
    const std::string_view n = path.substr(11);
    if (!n.empty() && n.find_first_not_of("0123456789") == std::string_view::npos) return Family::rm;
  }
  return Family::unknown;
}

std::string_view family_name(Family f) {
  switch (f) {
    case Family::kfd: return "KFD";
    case Family::rm: return "RM";
    case Family::uvm: return "UVM";
    default: return "";
  }
}

DecodedIoctl decode_ioctl(Family path_family, unsigned long request, const void* arg, bool arg_readable) {
  arg_readable = arg_readable && arg != nullptr;
  // UVM commands are bare numbers (no ioctl type), so only the path can tell them, except UVM_INITIALIZE and
  // UVM_DEINITIALIZE whose numbers stand out.
  if (path_family == Family::uvm || request == abi::uvm::initialize || request == abi::uvm::deinitialize)
    return decode_uvm(request, arg, arg_readable);
  if (ioc_type(request) == AMDKFD_IOCTL_BASE && path_family != Family::rm)
    return decode_kfd(request, arg, arg_readable);
  if (ioc_type(request) == abi::kIoctlType && path_family != Family::kfd) return decode_rm(request, arg, arg_readable);
  DecodedIoctl d;
  d.family = Family::unknown;
  return d;
}

}  // namespace hcq::trace
