// Converting the vendor decoders' results into the one Packet shape.
#include "stream_decode.hpp"

#include "amd/decode.hpp"
#include "amd/target.hpp"
#include "hcq/error.hpp"
#include "nv/decode.hpp"
#include "nv/facts/arch.hpp"
#include "nv/facts/qmd.hpp"

namespace hcq::dump {
namespace {

struct FormatName {
  Format format;
  std::string_view name;
};
constexpr FormatName kFormats[] = {
    {Format::pm4, "pm4"},         {Format::sdma, "sdma"},     {Format::aql, "aql"}, {Format::nv_gpfifo, "nv-gpfifo"},
    {Format::nv_push, "nv-push"}, {Format::nv_qmd, "nv-qmd"},
};

template <class DecodedField>
std::vector<Field> convert_fields(const std::vector<DecodedField>& in) {
  std::vector<Field> out;
  out.reserve(in.size());
  for (const DecodedField& f : in) out.push_back({f.name, f.value, f.text});
  return out;
}

Packet from_amd(amd::DecodedPacket&& p) {
  Packet out;
  out.offset = p.offset;
  out.op = std::move(p.op);
  out.words = p.words;
  out.fields = convert_fields(p.fields);
  out.error = std::move(p.error);
  return out;
}

Packet from_nv(nv::DecodedEntry&& e, bool method) {
  Packet out;
  out.offset = e.offset;
  out.op = std::move(e.op);
  out.words = e.words;
  out.fields = convert_fields(e.fields);
  out.error = std::move(e.error);
  if (method) {
    out.cls = std::move(e.cls);
    out.subchannel = e.subchannel;
    out.method = e.method;
    out.data = e.data;
    out.sec_op = std::move(e.sec_op);
  }
  return out;
}

// QMDs back to back, each as long as the architecture's layout says; a short tail is reported by decode_qmd.
std::vector<Packet> decode_qmds(std::span<const uint32_t> words, const nv::NvArchInfo& arch) {
  std::vector<Packet> out;
  const size_t size = nv::qmd::layout(arch.qmd_version).size_words;
  for (size_t i = 0; i < words.size(); i += size) {
    const std::span<const uint32_t> one = words.subspan(i, std::min(size, words.size() - i));
    Packet p = from_nv(nv::decode_qmd(one, arch.qmd_version), false);
    p.offset = i * 4;
    p.words = static_cast<uint32_t>(one.size());
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

const Field* Packet::field(std::string_view name) const {
  for (const Field& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

std::optional<Format> parse_format(std::string_view name) {
  for (const FormatName& f : kFormats)
    if (f.name == name) return f.format;
  return std::nullopt;
}

std::string_view format_name(Format f) {
  for (const FormatName& n : kFormats)
    if (n.format == f) return n.name;
  return "?";
}

std::string_view format_names() { return "pm4|sdma|aql|nv-gpfifo|nv-push|nv-qmd"; }

bool is_nv(Format f) { return f == Format::nv_gpfifo || f == Format::nv_push || f == Format::nv_qmd; }

std::string_view default_arch(Format f) { return is_nv(f) ? "ada" : "gfx1100"; }

std::vector<Packet> decode_stream(Format f, const Arch& arch, std::span<const uint32_t> words) {
  const std::string_view name = arch.name.empty() ? default_arch(f) : std::string_view(arch.name);
  std::vector<Packet> out;
  if (!is_nv(f)) {
    const amd::Target& t = amd::Target::from_gfx(name);
    std::vector<amd::DecodedPacket> got = f == Format::pm4    ? amd::decode_pm4(words, t)
                                          : f == Format::sdma ? amd::decode_sdma(words, t)
                                                              : amd::decode_aql(words, t);
    out.reserve(got.size());
    for (amd::DecodedPacket& p : got) out.push_back(from_amd(std::move(p)));
    return out;
  }
  const nv::NvArchInfo& a = nv::arch_from_name(name);
  if (f == Format::nv_qmd) return decode_qmds(words, a);
  std::vector<nv::DecodedEntry> got = f == Format::nv_push ? nv::decode_pushbuffer(words, a) : nv::decode_gpfifo(words);
  out.reserve(got.size());
  for (nv::DecodedEntry& e : got) out.push_back(from_nv(std::move(e), f == Format::nv_push));
  return out;
}

std::vector<uint32_t> dwords_of_bytes(std::string_view bytes) {
  std::vector<uint32_t> words(bytes.size() / 4);
  for (size_t i = 0; i < words.size(); ++i) {
    const auto* b = reinterpret_cast<const unsigned char*>(bytes.data() + 4 * i);
    words[i] = uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
  }
  return words;
}

}  // namespace hcq::dump
