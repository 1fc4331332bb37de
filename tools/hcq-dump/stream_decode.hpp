// The decoders' common front end: one packet shape for every command-stream format, so hcq-dump decode (and later a
// capture or a hang bundle) prints PM4, SDMA, AQL, GPFIFO entries, pushbuffer methods and QMDs the same way. The
// decoding itself is drivers/amd/decode and drivers/nv/decode; this only selects one and converts its output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hcq::dump {

enum class Format { pm4, sdma, aql, nv_gpfifo, nv_push, nv_qmd };

// "pm4", "sdma", "aql", "nv-gpfifo", "nv-push", "nv-qmd"; nullopt for anything else.
std::optional<Format> parse_format(std::string_view name);
std::string_view format_name(Format f);
std::string_view format_names();  // "pm4|sdma|aql|nv-gpfifo|nv-push|nv-qmd", for usage text
bool is_nv(Format f);

struct Field {
  std::string name;  // as the vendor writes it: "int_sel", "COMPUTE_PGM_RSRC1.vgprs", "OPERATION"
  uint64_t value = 0;
  std::string text;  // enum or register name, empty when none
};

struct Packet {
  size_t offset = 0;   // byte offset in the input
  std::string op;      // "RELEASE_MEM", "COPY_LINEAR", "SEM_EXECUTE", "GP_ENTRY", "QMD_V03_00", "OPCODE_0xf3"
  uint32_t words = 0;  // dwords of the input it spans
  std::vector<Field> fields;
  std::string error;  // why it is malformed or unknown; empty when it decoded cleanly
  // NV pushbuffer methods only (cls empty otherwise): the class, subchannel, method offset, data and SEC_OP.
  std::string cls;
  uint32_t subchannel = 0, method = 0, data = 0;
  std::string sec_op;

  bool ok() const { return error.empty(); }
  const Field* field(std::string_view name) const;
};

// Which tables to decode with: a gfx target for pm4/sdma/aql ("gfx1100"), an NVIDIA architecture for the nv formats
// ("ada", "sm_89"). Empty picks the default: gfx1100, or ada.
struct Arch {
  std::string name;
};
std::string_view default_arch(Format f);

// Decodes every packet of `words`. Throws hcq::InvalidArgument for an architecture name that is not known (the
// message lists the known ones); never for the words themselves, however malformed.
std::vector<Packet> decode_stream(Format f, const Arch& arch, std::span<const uint32_t> words);

// Raw little-endian bytes as dwords; a trailing partial dword is not included (the caller reports it).
std::vector<uint32_t> dwords_of_bytes(std::string_view bytes);

}  // namespace hcq::dump
