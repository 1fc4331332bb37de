// The one typed error hierarchy of hcq. Every message carries the context a person needs to act on it:
// device, queue, address, expected vs found, errno text.
// Ownership: errors are values; a device keeps its first fault as its sticky error (Device::record_error).
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

namespace hcq {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A caller passed something wrong: a bad size, a freed signal, the wrong number of kernel arguments, an unknown
// device name, dims over the device limits.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// A wait did not see its value in time. The message names device, queue, signal address, expected and current value.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// The device (or a queue on it) faulted: unknown packet, unmapped address, a kernel that crashed.
class DeviceFault : public Error {
 public:
  using Error::Error;
};

class OutOfMemory : public Error {
 public:
  using Error::Error;
};

class CompileError : public Error {
 public:
  using Error::Error;
};

// The kernel driver is missing, too old, or of an ABI we do not know.
class UnsupportedDriver : public Error {
 public:
  using Error::Error;
};

// A system call failed; err() is the errno it returned.
class OsError : public Error {
 public:
  OsError(const std::string& what, int err);
  int err() const noexcept { return err_; }

 private:
  int err_;
};

// Builds a message from pieces: cat("queue ", name, " at ", hex(addr)).
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

// "0x1f00" style, for addresses and raw words in messages.
std::string hex(uint64_t value);

}  // namespace hcq
