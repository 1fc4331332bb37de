// safetensors save and load (include/hcq/safetensors.hpp). A load is two phases: parse and check the whole file
// into a list of entries (no tensor touched), then make or assign the tensors.
#include "hcq/safetensors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "framework/nn/safetensors_json.hpp"

namespace hcq {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian, as the host's memory");

// The reference implementation refuses headers over 100 MB; so does this one (a hostile length is not allocated).
constexpr uint64_t kMaxHeader = uint64_t{100} << 20;
constexpr const char* kMetadataKey = "__metadata__";

struct DTypeName {
  DType dtype;
  const char* name;
};
// The format's names for the dtypes hcq tensors hold.
constexpr DTypeName kDTypeNames[] = {
    {DType::bool_, "BOOL"},  {DType::uint8, "U8"},      {DType::int8, "I8"},
    {DType::int32, "I32"},   {DType::uint32, "U32"},    {DType::int64, "I64"},
    {DType::float16, "F16"}, {DType::bfloat16, "BF16"}, {DType::float32, "F32"},
};
// The format's other names: known, but not loadable here.
constexpr const char* kOtherFormatDTypes[] = {"I16",     "U16",     "U64", "F64",     "F8_E5M2",
                                              "F8_E4M3", "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2"};

std::string shape_str(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += cat(i != 0 ? ", " : "", s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

std::string describe(const Shape& s, DType t) { return cat(shape_str(s), " ", dtype_name(t)); }

// ---- reading

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;  // within the data
};

struct Parsed {
  std::vector<uint8_t> file;
  uint64_t data_start = 0;  // 8 + header length
  std::vector<Entry> entries;
  SafetensorsMetadata metadata;
  std::span<const uint8_t> bytes(const Entry& e) const {
    return std::span<const uint8_t>(file).subspan(static_cast<size_t>(data_start + e.begin),
                                                  static_cast<size_t>(e.end - e.begin));
  }
};

std::vector<uint8_t> read_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw OsError(cat(path.string(), ": cannot open"), errno);
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw OsError(cat(path.string(), ": cannot stat"), err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw SafetensorsError(cat(path.string(), ": not a regular file"));
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw OsError(cat(path.string(), ": read failed"), err);
    }
    if (n == 0) break;  // it shrank while read: what is there is checked as the file
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

class Reader {
 public:
  explicit Reader(const std::filesystem::path& path) : name_(path.string()) {}

  Parsed parse(std::vector<uint8_t> file) {
    Parsed p;
    p.file = std::move(file);
    const uint64_t size = p.file.size();
    if (size < 8) fail(cat("the file is ", size, " bytes, too short for the 8-byte header length"));
    uint64_t header_len = 0;
    std::memcpy(&header_len, p.file.data(), 8);
    if (header_len > size - 8) {
      fail(cat("the header length is ", header_len, " bytes, beyond the file's ", size - 8, " bytes after it"));
    }
    if (header_len > kMaxHeader) fail(cat("the header length is ", header_len, " bytes, over the 100 MiB limit"));
    p.data_start = 8 + header_len;
    const std::string_view text(reinterpret_cast<const char*>(p.file.data()) + 8, static_cast<size_t>(header_len));
    fw::json::Value root;
    try {
      root = fw::json::parse(text);
    } catch (const fw::json::SyntaxError& e) {
      fail(cat("the header is not valid JSON: ", e.what()));
    }
    if (root.kind != fw::json::Value::Kind::object) {
      fail(cat("the header is ", fw::json::kind_name(root.kind), ", not a JSON object"));
    }
    const uint64_t data_size = size - p.data_start;
    for (const auto& [key, v] : root.members) {
      if (key == kMetadataKey) {
        metadata(v, p.metadata);
      } else {
        p.entries.push_back(entry(key, v, data_size));
      }
    }
    check_layout(p, data_size);
    return p;
  }

  [[noreturn]] void fail(const std::string& what) const { throw SafetensorsError(cat(name_, ": ", what)); }

 private:
  void metadata(const fw::json::Value& v, SafetensorsMetadata& out) const {
    if (v.kind != fw::json::Value::Kind::object) {
      fail(cat("\"__metadata__\" is ", fw::json::kind_name(v.kind), ", not an object of strings"));
    }
    for (const auto& [k, s] : v.members) {
      if (s.kind != fw::json::Value::Kind::string) {
        fail(cat("\"__metadata__\" value \"", k, "\" is ", fw::json::kind_name(s.kind), ", not a string"));
      }
      out.emplace(k, s.text);
    }
  }

  uint64_t integer(const fw::json::Value& v, const std::string& what) const {
    bool ok = v.kind == fw::json::Value::Kind::number && !v.text.empty() && v.text.size() <= 20;
    for (char c : v.text) ok = ok && c >= '0' && c <= '9';
    uint64_t n = 0;
    if (ok) {
      for (char c : v.text) {
        const uint64_t d = static_cast<uint64_t>(c - '0');
        if (n > (UINT64_MAX - d) / 10) ok = false;
        n = n * 10 + d;
      }
    }
    if (!ok) {
      fail(cat(what, " holds ", v.kind == fw::json::Value::Kind::number ? v.text : fw::json::kind_name(v.kind),
               ", not a non-negative integer"));
    }
    return n;
  }

  Entry entry(const std::string& name, const fw::json::Value& v, uint64_t data_size) const {
    using K = fw::json::Value::Kind;
    const std::string who = cat("tensor \"", name, "\"");
    if (v.kind != K::object) fail(cat(who, " is ", fw::json::kind_name(v.kind), ", not an object"));
    for (const auto& [k, unused] : v.members) {
      if (k != "dtype" && k != "shape" && k != "data_offsets") fail(cat(who, " has an unknown field \"", k, "\""));
    }
    const fw::json::Value* dtype = v.find("dtype");
    const fw::json::Value* shape = v.find("shape");
    const fw::json::Value* offsets = v.find("data_offsets");
    if (dtype == nullptr || shape == nullptr || offsets == nullptr) {
      fail(cat(who, " lacks \"", dtype == nullptr ? "dtype" : shape == nullptr ? "shape" : "data_offsets", "\""));
    }
    Entry e;
    e.name = name;
    if (dtype->kind != K::string) fail(cat(who, ": dtype is ", fw::json::kind_name(dtype->kind), ", not a string"));
    e.dtype = dtype_from_name(who, dtype->text);
    if (shape->kind != K::array) fail(cat(who, ": shape is ", fw::json::kind_name(shape->kind), ", not an array"));
    uint64_t elements = 1;
    bool overflow = false;
    for (const fw::json::Value& d : shape->items) {
      const uint64_t n = integer(d, cat(who, "'s shape"));
      if (n > static_cast<uint64_t>(INT64_MAX)) fail(cat(who, "'s shape holds ", n, ", beyond any tensor"));
      e.shape.push_back(static_cast<int64_t>(n));
      if (n != 0 && elements > UINT64_MAX / n) overflow = true;
      elements *= n;
    }
    if (offsets->kind != K::array || offsets->items.size() != 2) {
      fail(cat(
          who, ": data_offsets is ",
          offsets->kind == K::array ? cat("an array of ", offsets->items.size()) : fw::json::kind_name(offsets->kind),
          ", not [begin, end]"));
    }
    e.begin = integer(offsets->items[0], cat(who, "'s data_offsets"));
    e.end = integer(offsets->items[1], cat(who, "'s data_offsets"));
    if (e.begin > e.end) fail(cat(who, ": data_offsets [", e.begin, ", ", e.end, "] are out of order"));
    if (e.end > data_size) {
      fail(cat(who, ": data_offsets [", e.begin, ", ", e.end, "] end beyond the data (", data_size, " bytes)"));
    }
    const unsigned esize = dtype_size(e.dtype);
    if (overflow || elements > UINT64_MAX / esize || elements * esize != e.end - e.begin) {
      fail(cat(who, ": shape ", shape_str(e.shape), " of ", dtype_name(e.dtype), " is ",
               overflow ? std::string("more than 2^64 elements") : cat(elements, " x ", esize, " bytes"),
               ", but data_offsets [", e.begin, ", ", e.end, "] span ", e.end - e.begin));
    }
    return e;
  }

  DType dtype_from_name(const std::string& who, const std::string& name) const {
    for (const DTypeName& d : kDTypeNames) {
      if (name == d.name) return d.dtype;
    }
    for (const char* other : kOtherFormatDTypes) {
      if (name == other) {
        fail(cat(who, ": dtype ", name, " is not one hcq tensors hold (BOOL U8 I8 I32 U32 I64 F16 BF16 F32)"));
      }
    }
    fail(cat(who, ": unknown dtype \"", name, "\""));
  }

  // The tensors' bytes tile the data exactly, as the reference implementation requires: sorted by offset, each
  // begins where the previous ends, the last ends at the data's end. Then BOOL bytes are 0 or 1.
  void check_layout(const Parsed& p, uint64_t data_size) const {
    std::vector<const Entry*> order;
    for (const Entry& e : p.entries) order.push_back(&e);
    std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
      return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    uint64_t at = 0;
    const Entry* prev = nullptr;
    for (const Entry* e : order) {
      if (e->begin < at) {
        fail(cat("tensor \"", e->name, "\" at [", e->begin, ", ", e->end, ") overlaps tensor \"", prev->name, "\" at [",
                 prev->begin, ", ", prev->end, ")"));
      }
      if (e->begin > at) fail(cat("bytes [", at, ", ", e->begin, ") of the data belong to no tensor"));
      at = e->end;
      prev = e;
    }
    if (at != data_size) fail(cat("bytes [", at, ", ", data_size, ") of the data belong to no tensor"));
    for (const Entry& e : p.entries) {
      if (e.dtype != DType::bool_) continue;
      const std::span<const uint8_t> b = p.bytes(e);
      for (size_t i = 0; i < b.size(); ++i) {
        if (b[i] > 1) fail(cat("tensor \"", e.name, "\": BOOL element ", i, " is ", unsigned{b[i]}, ", not 0 or 1"));
      }
    }
  }

  std::string name_;
};

Parsed read_and_check(const std::filesystem::path& path) { return Reader(path).parse(read_file(path)); }

std::span<const std::byte> as_bytes(std::span<const uint8_t> b) { return std::as_bytes(b); }

// ---- writing

template <class T>
void append_data(const Tensor& t, std::vector<uint8_t>& out) {
  const std::vector<T> v = t.data<T>();
  if constexpr (std::is_same_v<T, bool>) {
    for (bool b : v) out.push_back(b ? 1 : 0);
  } else if (!v.empty()) {  // an empty tensor's vector may have no storage: memcpy from null is undefined
    const size_t at = out.size();
    out.resize(at + v.size() * sizeof(T));
    std::memcpy(out.data() + at, v.data(), v.size() * sizeof(T));
  }
}

void append_tensor(const Tensor& t, std::vector<uint8_t>& out) {
  switch (t.dtype()) {
    case DType::bool_: return append_data<bool>(t, out);
    case DType::int8: return append_data<int8_t>(t, out);
    case DType::uint8: return append_data<uint8_t>(t, out);
    case DType::int32: return append_data<int32_t>(t, out);
    case DType::uint32: return append_data<uint32_t>(t, out);
    case DType::int64: return append_data<int64_t>(t, out);
    case DType::float16: return append_data<float16_t>(t, out);
    case DType::bfloat16: return append_data<bfloat16_t>(t, out);
    case DType::float32: return append_data<float>(t, out);
  }
}

void json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<uint8_t>(c) < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[static_cast<uint8_t>(c) >> 4];
      out += kHex[static_cast<uint8_t>(c) & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
}

void write_all(int fd, const uint8_t* p, size_t n, const std::string& tmp) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) throw OsError(cat(tmp, ": write failed"), errno);
    p += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

const char* safetensors_dtype_name(DType t) {
  for (const DTypeName& d : kDTypeNames) {
    if (d.dtype == t) return d.name;
  }
  return "?";
}

void save_safetensors(const std::filesystem::path& path, const TensorMap& tensors,
                      const SafetensorsMetadata& metadata) {
  std::vector<std::pair<std::string, Tensor>> order;
  for (const auto& [name, t] : tensors) {
    if (name.empty() || name == kMetadataKey) {
      throw InvalidArgument(cat("save_safetensors ", path.string(), ": a tensor cannot be named \"", name, "\""));
    }
    if (!t.defined()) {
      throw InvalidArgument(cat("save_safetensors ", path.string(), ": tensor \"", name, "\" is empty"));
    }
    order.emplace_back(name, t);
  }
  // Largest elements first, then by name: each tensor starts at a multiple of its element size.
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return dtype_size(a.second.dtype()) > dtype_size(b.second.dtype());
  });
  std::vector<Tensor> all;
  for (auto& [n, t] : order) all.push_back(t);
  Tensor::realize(all);  // one schedule for whatever is still lazy

  std::vector<uint8_t> data;
  std::string header = "{";
  if (!metadata.empty()) {
    json_string(header, kMetadataKey);
    header += ":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) header += ',';
      first = false;
      json_string(header, k);
      header += ':';
      json_string(header, v);
    }
    header += '}';
  }
  for (const auto& [name, t] : order) {
    const uint64_t begin = data.size();
    append_tensor(t, data);
    if (header.size() > 1) header += ',';
    json_string(header, name);
    header += cat(":{\"dtype\":\"", safetensors_dtype_name(t.dtype()), "\",\"shape\":[");
    for (size_t i = 0; i < t.ndim(); ++i) header += cat(i != 0 ? "," : "", t.shape()[i]);
    header += cat("],\"data_offsets\":[", begin, ",", data.size(), "]}");
  }
  header += '}';
  // A name or value that is not UTF-8 would make a file no reader accepts: check by reading the header back.
  try {
    (void)fw::json::parse(header);
  } catch (const fw::json::SyntaxError& e) {
    throw InvalidArgument(cat("save_safetensors ", path.string(),
                              ": a tensor name or metadata text is not valid "
                              "UTF-8 (",
                              e.what(), " of the header)"));
  }
  header.append((8 - header.size() % 8) % 8, ' ');  // 8 + header: the data starts 8-byte aligned

  const std::string tmp = cat(path.string(), ".tmp-", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw OsError(cat(tmp, ": cannot create"), errno);
  try {
    uint8_t len[8];
    const uint64_t n = header.size();
    std::memcpy(len, &n, 8);
    write_all(fd, len, 8, tmp);
    write_all(fd, reinterpret_cast<const uint8_t*>(header.data()), header.size(), tmp);
    write_all(fd, data.data(), data.size(), tmp);
    if (::fsync(fd) != 0) throw OsError(cat(tmp, ": fsync failed"), errno);
    if (::close(fd) != 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      throw OsError(cat(tmp, ": close failed"), err);
    }
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw OsError(cat("rename ", tmp, " to ", path.string()), err);
  }
  // The rename is durable once the directory is flushed too. Best effort: the file is complete either way.
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

SafetensorsFile load_safetensors(const std::filesystem::path& path, const std::string& device) {
  const Parsed p = read_and_check(path);
  SafetensorsFile out;
  for (const Entry& e : p.entries) {
    out.tensors.emplace(e.name, Tensor(as_bytes(p.bytes(e)), e.shape, e.dtype, device));
  }
  out.metadata = p.metadata;
  return out;
}

SafetensorsMetadata load_safetensors_into(const std::filesystem::path& path, const TensorMap& into, bool strict) {
  const Parsed p = read_and_check(path);
  const Reader r(path);
  std::vector<std::pair<Tensor, const Entry*>> plan;
  for (const auto& [name, t] : into) {
    if (!t.defined()) throw InvalidArgument(cat("load_safetensors_into ", path.string(), ": \"", name, "\" is empty"));
    const auto it = std::find_if(p.entries.begin(), p.entries.end(), [&](const Entry& e) { return e.name == name; });
    if (it == p.entries.end()) r.fail(cat("no tensor \"", name, "\" (", p.entries.size(), " tensors in the file)"));
    if (it->shape != t.shape() || it->dtype != t.dtype()) {
      r.fail(cat("tensor \"", name, "\" is ", describe(it->shape, it->dtype), " in the file, but ",
                 describe(t.shape(), t.dtype()), " where it is loaded"));
    }
    plan.emplace_back(t, &*it);
  }
  if (strict) {
    for (const Entry& e : p.entries) {
      if (into.find(e.name) == into.end()) r.fail(cat("tensor \"", e.name, "\" is in the file but not loaded"));
    }
  }
  std::vector<Tensor> written;
  for (auto& [t, e] : plan) {
    Tensor dst = t;  // a handle: the assign is seen by the caller's copy
    dst.assign(Tensor(as_bytes(p.bytes(*e)), e->shape, e->dtype, dst.device()));
    written.push_back(dst);
  }
  Tensor::realize(written);
  return p.metadata;
}

}  // namespace hcq
