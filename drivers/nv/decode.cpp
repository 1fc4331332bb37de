// Decoding pushbuffers, GPFIFO entries and QMDs through the fact tables. Every read is bounds-checked against the
// input span; a bad header costs one dword, a truncated method run ends the decode with an error entry.
#include "nv/decode.hpp"

#include "hcq/error.hpp"
#include "nv/facts/gpfifo.hpp"
#include "nv/facts/methods.hpp"
#include "nv/facts/qmd.hpp"

namespace hcq::nv {

const DecodedField* DecodedEntry::field(std::string_view name) const {
  for (const DecodedField& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

SubchannelMap SubchannelMap::for_arch(const NvArchInfo& arch) {
  SubchannelMap m;
  m.host_class = arch.classes.gpfifo;
  m.class_id[pb::kComputeSubchannel] = arch.classes.compute;
  m.class_id[pb::kCopySubchannel] = arch.classes.copy;
  return m;
}

namespace {

void add_fields(DecodedEntry& e, std::span<const BitField> fields, uint64_t word) {
  for (const BitField& f : fields) {
    const uint64_t v = f.get(word);
    e.fields.push_back({std::string(f.name), v, std::string(f.name_of(v))});
  }
}

// One data word to one method: look it up in the class that executes it.
DecodedEntry decode_method(SubchannelMap& map, uint32_t subchannel, uint32_t method, uint32_t data) {
  DecodedEntry e;
  e.subchannel = subchannel;
  e.method = method;
  e.data = data;
  const bool host = method < pb::kHostMethodLimit;
  const uint32_t class_id = host ? map.host_class : map.class_id[subchannel];
  const ClassMethods* cls = class_id ? find_class(class_id) : nullptr;
  if (!cls) {
    e.op = cat("METHOD_", hex(method));
    e.error = class_id ? cat("class ", hex(class_id), " has no method table")
                       : cat("subchannel ", subchannel, " has no class bound");
    return e;
  }
  e.cls = std::string(cls->prefix);
  const Method* m = cls->find(method);
  if (!m) {
    e.op = cat("METHOD_", hex(method));
    e.error = cat("unknown method ", hex(method), " of ", cls->prefix);
    return e;
  }
  e.op = std::string(m->name);
  add_fields(e, m->fields, data);
  if (host && m->name == "SET_OBJECT") {
    // Host SET_OBJECT binds the subchannel to the class it names (NVCLASS 15:0).
    const uint32_t bound = data & 0xffff;
    if (find_class(bound)) map.class_id[subchannel] = bound;
    else e.error = cat("SET_OBJECT of class ", hex(bound), ", which hcq has no method table for");
  }
  return e;
}

}  // namespace

std::vector<DecodedEntry> decode_pushbuffer(std::span<const uint32_t> words, const NvArchInfo& arch) {
  SubchannelMap map = SubchannelMap::for_arch(arch);
  return decode_pushbuffer(words, map);
}

std::vector<DecodedEntry> decode_pushbuffer(std::span<const uint32_t> words, SubchannelMap& map) {
  std::vector<DecodedEntry> out;
  size_t i = 0;
  while (i < words.size()) {
    const uint32_t h = words[i];
    const uint32_t op = static_cast<uint32_t>(pb::kSecOp.get(h));
    const uint32_t subch = static_cast<uint32_t>(pb::kSubchannel.get(h));
    const uint32_t method = static_cast<uint32_t>(pb::kMethodAddress.get(h)) << 2;
    const uint32_t count = static_cast<uint32_t>(pb::kCount.get(h));
    auto lone = [&](std::string name, std::string error) {
      DecodedEntry e;
      e.offset = i * 4;
      e.op = std::move(name);
      e.words = 1;
      e.data = h;
      e.sec_op = std::string(pb::sec_op_name(op));
      e.error = std::move(error);
      out.push_back(std::move(e));
      ++i;
    };
    if (h == 0) {  // NVC56F_DMA_NOP
      lone("NOP", "");
      continue;
    }
    switch (static_cast<SecOp>(op)) {
      case SecOp::inc_method:
      case SecOp::non_inc_method:
      case SecOp::one_inc: {
        if (count == 0) {
          lone(cat("HEADER_", hex(h)), cat(pb::sec_op_name(op), " header with a count of 0"));
          continue;
        }
        const size_t avail = words.size() - i - 1;
        if (count > avail) {
          DecodedEntry e;
          e.offset = i * 4;
          e.op = cat("HEADER_", hex(h));
          e.words = static_cast<uint32_t>(avail + 1);
          e.subchannel = subch;
          e.method = method;
          e.data = h;
          e.sec_op = std::string(pb::sec_op_name(op));
          e.error = cat(pb::sec_op_name(op), " header wants ", count, " data dwords, ", avail, " left");
          out.push_back(std::move(e));
          return out;
        }
        for (uint32_t k = 0; k < count; ++k) {
          uint32_t m = method;
          if (op == static_cast<uint32_t>(SecOp::inc_method)) m = method + 4 * k;
          else if (op == static_cast<uint32_t>(SecOp::one_inc)) m = method + (k ? 4 : 0);
          DecodedEntry e = decode_method(map, subch, m & 0x3ffc, words[i + 1 + k]);
          e.offset = (k == 0 ? i : i + 1 + k) * 4;
          e.words = k == 0 ? 2 : 1;
          e.sec_op = std::string(pb::sec_op_name(op));
          out.push_back(std::move(e));
        }
        i += 1 + count;
        break;
      }
      case SecOp::immd_data_method: {
        DecodedEntry e = decode_method(map, subch, method, static_cast<uint32_t>(pb::kImmdData.get(h)));
        e.offset = i * 4;
        e.words = 1;
        e.sec_op = std::string(pb::sec_op_name(op));
        out.push_back(std::move(e));
        ++i;
        break;
      }
      case SecOp::grp0_use_tert: {
        static constexpr const char* tert[] = {"", "SET_SUB_DEV_MASK", "STORE_SUB_DEV_MASK", "USE_SUB_DEV_MASK"};
        const uint32_t t = static_cast<uint32_t>(pb::kTertOp.get(h));
        if (t != 0) lone(tert[t], "");
        else lone(cat("HEADER_", hex(h)), "legacy (pre-Kepler) increasing method header, not decoded");
        break;
      }
      case SecOp::grp2_use_tert:
        lone(cat("HEADER_", hex(h)), "legacy (pre-Kepler) non-increasing method header, not decoded");
        break;
      case SecOp::end_pb_segment: lone("END_PB_SEGMENT", ""); break;
      case SecOp::reserved6:
      default: lone(cat("HEADER_", hex(h)), "reserved SEC_OP 6"); break;
    }
  }
  return out;
}

DecodedEntry decode_gpfifo_entry(uint64_t entry) {
  DecodedEntry e;
  e.words = 2;
  e.data = static_cast<uint32_t>(entry);
  auto put = [&](const BitField& f) {
    const uint64_t v = f.get(entry);
    e.fields.push_back({std::string(f.name), v, std::string(f.name_of(v))});
  };
  if (gpfifo::kLength.get(entry) == 0) {
    e.op = "GP_CONTROL";
    put(gpfifo::kOpcode);
    put(gpfifo::kOperand);
    put(gpfifo::kSync);
    if (gpfifo::kOpcode.name_of(gpfifo::kOpcode.get(entry)).empty())
      e.error = cat("unknown control opcode ", gpfifo::kOpcode.get(entry));
    return e;
  }
  e.op = "GP_ENTRY";
  put(gpfifo::kFetch);
  put(gpfifo::kGet);
  put(gpfifo::kGetHi);
  put(gpfifo::kLevel);
  put(gpfifo::kLength);
  put(gpfifo::kSync);
  const uint64_t address = (gpfifo::kGet.get(entry) << 2) | (gpfifo::kGetHi.get(entry) << 32);
  e.fields.push_back({"ADDRESS", address, ""});
  return e;
}

std::vector<DecodedEntry> decode_gpfifo(std::span<const uint32_t> words) {
  std::vector<DecodedEntry> out;
  size_t i = 0;
  for (; i + 1 < words.size(); i += 2) {
    DecodedEntry e = decode_gpfifo_entry(words[i] | (static_cast<uint64_t>(words[i + 1]) << 32));
    e.offset = i * 4;
    out.push_back(std::move(e));
  }
  if (i < words.size()) {
    DecodedEntry e;
    e.offset = i * 4;
    e.op = "GP_PARTIAL";
    e.words = 1;
    e.data = words[i];
    e.error = "a GPFIFO entry is two dwords; one is left";
    out.push_back(std::move(e));
  }
  return out;
}

DecodedEntry decode_qmd(std::span<const uint32_t> words, uint32_t major_version, bool nonzero_only) {
  DecodedEntry e;
  e.op = cat("QMD_V0", major_version, "_00");
  e.words = static_cast<uint32_t>(words.size());
  if (major_version != 3 && major_version != 5) {
    e.error = cat("QMD major version ", major_version, " is not one hcq knows (3, 5)");
    return e;
  }
  const qmd::QmdLayout& l = qmd::layout(major_version);
  if (words.size() < l.size_words) {
    e.error = cat("a V", major_version, " QMD is ", l.size_words, " dwords; ", words.size(), " given");
    return e;
  }
  e.words = l.size_words;
  e.cls = std::string(l.prefix);
  for (const BitField& f : l.fields) {
    const uint64_t v = qmd::get(words, f);
    if (nonzero_only && v == 0) continue;
    e.fields.push_back({std::string(f.name), v, std::string(f.name_of(v))});
  }
  const uint64_t claimed = qmd::get(words, *l.roles.major_version);
  if (claimed != major_version) e.error = cat("QMD_MAJOR_VERSION is ", claimed, ", decoded as V", major_version);
  return e;
}

}  // namespace hcq::nv
