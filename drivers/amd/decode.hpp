// Decoders: raw dwords -> packets with named fields, for PM4, SDMA and AQL. They read the same fact tables as the
// encoders. Input is untrusted (rings of a hung GPU, capture files, fuzzers): a malformed or unknown packet becomes a
// packet with `error` set, decoding resynchronizes (by the header's length where it is known, else one dword on),
// and nothing is ever read outside `words`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "amd/target.hpp"

namespace hcq::amd {

struct DecodedField {
  std::string name;  // e.g. "int_sel", "COMPUTE_PGM_RSRC1", "COMPUTE_PGM_RSRC1.vgprs"
  uint64_t value = 0;
  std::string text;  // enum or register name where one is known, else empty
};

struct DecodedPacket {
  size_t offset = 0;   // bytes from the start of the input
  std::string op;      // "RELEASE_MEM", "COPY_LINEAR", "KERNEL_DISPATCH", "OPCODE_0xf3", ...
  uint32_t words = 0;  // dwords this packet spans in the input
  std::vector<DecodedField> fields;
  std::string error;  // why the packet is malformed or unknown; empty when it decoded cleanly

  bool ok() const { return error.empty(); }
  const DecodedField* field(std::string_view name) const;
};

std::vector<DecodedPacket> decode_pm4(std::span<const uint32_t> words, const Target& t);
std::vector<DecodedPacket> decode_sdma(std::span<const uint32_t> words, const Target& t);
// AQL packets are 64 bytes; a trailing partial packet is reported as an error.
std::vector<DecodedPacket> decode_aql(std::span<const uint32_t> words, const Target& t);

}  // namespace hcq::amd
