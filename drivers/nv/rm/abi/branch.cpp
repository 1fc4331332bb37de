// Per-branch RM layouts and driver version matching.
#include "nv/rm/abi/branch.hpp"

#include <cctype>
#include <charconv>
#include <cstring>

#include "hcq/error.hpp"

namespace hcq::nv::abi {
namespace {

// NVOS46 in 570: ..., flags @32, dma_offset @40, status @48; 56 bytes.
constexpr MapMemoryDmaLayout kMapMemoryDma570{56, 32, 0, 0, 40, 48};
// NVOS46 in 580: ..., flags @32, flags2 @36, kindOverride @40, dma_offset @48, status @56; 64 bytes.
constexpr MapMemoryDmaLayout kMapMemoryDma580{64, 32, 36, 40, 48, 56};

// FB info list 0x39 pairs, class list V2 100 classes, schedule without bSkipEnable.
constexpr ControlSizes kControls570{4 + 8 * 0x39, 4 + 4 * 100, 2};
// FB info list 0x80 pairs, class list V2 200 classes, schedule with bSkipEnable.
constexpr ControlSizes kControls580{4 + 8 * 0x80, 4 + 4 * 200, 3};

constexpr BranchAbi kBranches[] = {
    {570, "r570", kMapMemoryDma570, kControls570},
    {580, "r580", kMapMemoryDma580, kControls580},
};

template <class T>
void put(std::span<std::byte> out, uint32_t offset, T value) {
  std::memcpy(out.data() + offset, &value, sizeof(T));
}
template <class T>
T get(std::span<const std::byte> in, uint32_t offset) {
  T value;
  std::memcpy(&value, in.data() + offset, sizeof(T));
  return value;
}

bool parse_unsigned(std::string_view s, unsigned& out) {
  if (s.empty() || s.size() > 6) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

std::span<const BranchAbi> supported_branches() { return kBranches; }

std::string supported_branches_text() {
  std::string s;
  for (const BranchAbi& b : kBranches) s += (s.empty() ? "" : ", ") + std::to_string(b.major);
  return s;
}

const BranchAbi* find_branch(unsigned major) {
  for (const BranchAbi& b : kBranches)
    if (b.major == major) return &b;
  return nullptr;
}

std::optional<DriverVersion> parse_driver_version(std::string_view text) {
  DriverVersion v;
  unsigned* parts[] = {&v.major, &v.minor, &v.patch};
  size_t count = 0, start = 0;
  while (start <= text.size()) {
    size_t dot = text.find('.', start);
    if (dot == std::string_view::npos) dot = text.size();
    if (count == 3 || !parse_unsigned(text.substr(start, dot - start), *parts[count])) return std::nullopt;
    ++count;
    start = dot + 1;
  }
  if (count < 2) return std::nullopt;
  v.text = std::string(text);
  return v;
}

std::optional<DriverVersion> parse_proc_version(std::string_view text) {
  const size_t at = text.find("NVRM version:");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view line = text.substr(at);
  line = line.substr(0, line.find('\n'));
  // The version is the first whitespace-separated word that parses as one ("... x86_64  580.126.20  Release ...").
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t end = i;
    while (end < line.size() && !std::isspace(static_cast<unsigned char>(line[end]))) ++end;
    if (auto v = parse_driver_version(line.substr(i, end - i))) {
      v->open_module = line.find("Open Kernel Module") != std::string_view::npos;
      return v;
    }
    i = end;
  }
  return std::nullopt;
}

const BranchAbi& select_branch(const DriverVersion& v) {
  if (const BranchAbi* b = find_branch(v.major)) return *b;
  throw UnsupportedDriver(cat("NVIDIA driver ", v.text.empty() ? std::to_string(v.major) : v.text,
                              " is not supported (supported branches: ", supported_branches_text(), ")"));
}

void encode_map_memory_dma(const MapMemoryDmaLayout& layout, const MapMemoryDma& p, std::span<std::byte> out) {
  if (out.size() != layout.size)
    throw InvalidArgument(cat("NVOS46 block of ", out.size(), " bytes, the branch's is ", layout.size));
  std::memset(out.data(), 0, out.size());
  namespace c = map_memory_dma_common;
  put(out, c::client, p.client);
  put(out, c::device, p.device);
  put(out, c::dma, p.dma);
  put(out, c::memory, p.memory);
  put(out, c::offset, p.offset);
  put(out, c::length, p.length);
  put(out, layout.flags, p.flags);
  if (layout.flags2) put(out, layout.flags2, p.flags2);
  if (layout.kind_override) put(out, layout.kind_override, p.kind_override);
  put(out, layout.dma_offset, p.dma_offset);
  put(out, layout.status, p.status);
}

MapMemoryDma decode_map_memory_dma(const MapMemoryDmaLayout& layout, std::span<const std::byte> in) {
  if (in.size() != layout.size)
    throw InvalidArgument(cat("NVOS46 block of ", in.size(), " bytes, the branch's is ", layout.size));
  namespace c = map_memory_dma_common;
  MapMemoryDma p;
  p.client = get<Handle>(in, c::client);
  p.device = get<Handle>(in, c::device);
  p.dma = get<Handle>(in, c::dma);
  p.memory = get<Handle>(in, c::memory);
  p.offset = get<uint64_t>(in, c::offset);
  p.length = get<uint64_t>(in, c::length);
  p.flags = get<uint32_t>(in, layout.flags);
  if (layout.flags2) p.flags2 = get<uint32_t>(in, layout.flags2);
  if (layout.kind_override) p.kind_override = get<uint32_t>(in, layout.kind_override);
  p.dma_offset = get<uint64_t>(in, layout.dma_offset);
  p.status = get<NvStatus>(in, layout.status);
  return p;
}

}  // namespace hcq::nv::abi
