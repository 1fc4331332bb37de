// Decoders: raw dwords -> named methods, GPFIFO entries and QMD fields, from the same fact tables the encoders use.
// Input is untrusted (a hung channel's pushbuffer, a capture file, a fuzzer): a malformed header or an unknown method
// becomes an entry with `error` set, decoding resynchronises on the next header (by the header's count where it
// is readable, else one dword on), and nothing is read outside the input. The output is a plain list for hcq-dump.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nv/facts/arch.hpp"

namespace hcq::nv {

struct DecodedField {
  std::string name;  // "OPERATION", "GET", "CTA_RASTER_WIDTH"
  uint64_t value = 0;
  std::string text;  // enum name where the table has one ("RELEASE"), else empty
};

// One method (one data word delivered to one method), one GPFIFO entry, or one QMD.
struct DecodedEntry {
  size_t offset = 0;   // bytes from the start of the input: the method header for a header's first method (or
                       // an immediate one), else the data word
  std::string op;      // "SEM_EXECUTE", "SEND_PCAS_A", "GP_ENTRY", "QMD_V03_00", "METHOD_0x1234", ...
  uint32_t words = 0;  // dwords of the input this entry accounts for (header + data for a header's first method)
  std::string cls;     // class prefix the method was decoded with ("NVC56F"), empty when none
  uint32_t subchannel = 0;
  uint32_t method = 0;  // method byte offset
  uint32_t data = 0;    // the data word (or the immediate value)
  std::string sec_op;   // "INC_METHOD", "NON_INC_METHOD", "ONE_INC", "IMMD_DATA_METHOD", ...
  std::vector<DecodedField> fields;
  std::string error;  // why it is malformed or unknown; empty when it decoded cleanly

  bool ok() const { return error.empty(); }
  const DecodedField* field(std::string_view name) const;
};

// Which class each subchannel is bound to. Starts as hcq binds channels (compute on 1, copy on 4, for `arch`);
// SET_OBJECT methods in the stream rebind.
struct SubchannelMap {
  std::array<uint32_t, 8> class_id{};  // 0 = unbound
  uint32_t host_class = 0;
  static SubchannelMap for_arch(const NvArchInfo& arch);
};

// Pushbuffer methods. `map` is updated by SET_OBJECT as the stream binds classes.
std::vector<DecodedEntry> decode_pushbuffer(std::span<const uint32_t> words, SubchannelMap& map);
std::vector<DecodedEntry> decode_pushbuffer(std::span<const uint32_t> words, const NvArchInfo& arch);
// GPFIFO ring entries (two dwords each, ENTRY0 first); an odd trailing dword is reported as an error.
std::vector<DecodedEntry> decode_gpfifo(std::span<const uint32_t> words);
DecodedEntry decode_gpfifo_entry(uint64_t entry);
// A QMD of the given major version (3 or 5): its fields, all of them or only the nonzero ones. A QMD shorter than
// the layout, or a version hcq does not know, gives an entry with `error` set.
DecodedEntry decode_qmd(std::span<const uint32_t> words, uint32_t major_version, bool nonzero_only = true);

}  // namespace hcq::nv
