// Error helpers: the errno-carrying OsError and the hex formatter used in messages.
#include "hcq/error.hpp"

#include <system_error>

namespace hcq {

// std::generic_category().message() is the thread-safe way to get strerror text.
OsError::OsError(const std::string& what, int err)
    : Error(cat(what, ": ", std::generic_category().message(err), " (errno ", err, ")")), err_(err) {}

std::string hex(uint64_t value) {
  std::ostringstream os;
  os << "0x" << std::hex << value;
  return os.str();
}

}  // namespace hcq
