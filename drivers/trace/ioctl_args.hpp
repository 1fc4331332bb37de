// What the KFD, RM and UVM ioctl decoders share: the text a decoded argument block is written into, reading a block
// without assuming its alignment, the request-number table entry, and the _IOC fields of a request number.
#pragma once

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "nv/rm/abi/status.hpp"
#include "trace/ioctl_decode.hpp"

namespace hcq::trace::detail {

namespace abi = hcq::nv::abi;

// "{a=1, b=0x2000}": the decoded block as one piece of text.
class Args {
 public:
  Args& num(std::string_view name, uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, v < 10 ? "%llu" : "0x%llx", static_cast<unsigned long long>(v));
    return text(name, buf);
  }
  Args& sint(std::string_view name, int64_t v) { return text(name, std::to_string(v)); }
  Args& text(std::string_view name, std::string_view v) {
    s_ += s_.empty() ? "{" : ", ";
    s_.append(name).append("=").append(v);
    return *this;
  }
  // A value with its name where one is known: "hClass=NV01_DEVICE_0 (0x80)".
  Args& named(std::string_view field, uint64_t v, std::string_view name) {
    if (name.empty()) return num(field, v);
    char buf[24];
    std::snprintf(buf, sizeof buf, " (0x%llx)", static_cast<unsigned long long>(v));
    return text(field, std::string(name) + buf);
  }
  Args& status(abi::NvStatus s) { return text("status", abi::status_name(s)); }
  std::string str() const { return s_.empty() ? s_ : s_ + "}"; }

 private:
  std::string s_;
};

template <class T>
T load(const void* p) {
  static_assert(std::is_trivially_copyable_v<T>);
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

using Decoder = void (*)(const void* arg, Args& a, DecodedIoctl& d);

struct Entry {
  unsigned long request;  // the whole request number (KFD: _IOWR('K', nr, size); UVM: the command)
  std::string_view name;
  Decoder decode;  // reads exactly the block the request names (KFD: its size bits; UVM: the command's)
};

constexpr unsigned long ioc_type(unsigned long request) { return (request >> 8) & 0xff; }
constexpr unsigned long ioc_nr(unsigned long request) { return request & 0xff; }
constexpr size_t ioc_size(unsigned long request) { return (request >> 16) & 0x3fff; }

inline void run_entry(const Entry& e, const void* arg, bool readable, DecodedIoctl& d) {
  d.name = std::string(e.name);
  if (!e.decode || !readable) return;
  Args a;
  e.decode(arg, a, d);
  d.args = a.str();
}

// One decoder per ioctl family; each names the request and, when the block is readable, decodes it.
DecodedIoctl decode_kfd(unsigned long request, const void* arg, bool readable);
DecodedIoctl decode_rm(unsigned long request, const void* arg, bool readable);
DecodedIoctl decode_uvm(unsigned long request, const void* arg, bool readable);

}  // namespace hcq::trace::detail
