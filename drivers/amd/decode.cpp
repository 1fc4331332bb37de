// Decoders over the fact tables. Every read goes through Packet::at(), which is bounds-checked, so hostile input
// yields error packets, never out-of-bounds reads.
#include "amd/decode.hpp"

#include <cstdio>

#include "amd/aql_facts.hpp"

namespace hcq::amd {
namespace {

std::string hexs(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Adds every field of `l` that lies within `pkt` (a short packet simply yields fewer fields).
void add_layout(const Layout& l, std::span<const uint32_t> pkt, std::vector<DecodedField>& out) {
  for (const Field& f : l.fields) {
    if (f.dword >= pkt.size() || (f.is64() && f.dword + 1u >= pkt.size())) continue;
    const uint64_t v = f.is64() ? (uint64_t{pkt[f.dword]} | (uint64_t{pkt[f.dword + 1]} << 32)) : f.get(pkt[f.dword]);
    out.push_back({std::string(f.name), v, std::string(f.name_of(v))});
  }
}

// A register and its fields: "NAME" = value, then "NAME.field" = field value.
void add_register(const RegisterTable& regs, uint32_t addr, uint32_t value, std::string_view unknown_prefix,
                  std::vector<DecodedField>& out) {
  const Register* r = regs.find(addr);
  std::string name = r ? std::string(r->name) : std::string(unknown_prefix) + hexs(addr);
  out.push_back({name, value, {}});
  if (!r) return;
  for (const Field& f : r->fields) out.push_back({name + "." + std::string(f.name), f.get(value), {}});
}

std::string reg_name(const RegisterTable& regs, uint32_t addr) {
  const Register* r = regs.find(addr);
  return r ? std::string(r->name) : std::string();
}

DecodedPacket make(size_t word_index, std::string op, uint32_t words) {
  DecodedPacket p;
  p.offset = word_index * 4;
  p.op = std::move(op);
  p.words = words;
  return p;
}

// ---- PM4 ----
void decode_type3(const Target& t, uint32_t opcode, std::span<const uint32_t> pkt, DecodedPacket& p) {
  using namespace pm4;
  auto expect_len = [&](uint32_t n) {
    if (pkt.size() == n) return true;
    p.error = "expected " + std::to_string(n) + " dwords, header says " + std::to_string(pkt.size());
    return false;
  };
  switch (opcode) {
    case RELEASE_MEM:
      if (expect_len(t.pm4->release_mem->words)) add_layout(*t.pm4->release_mem, pkt, p.fields);
      return;
    case ACQUIRE_MEM:
      if (expect_len(t.pm4->acquire_mem->words)) add_layout(*t.pm4->acquire_mem, pkt, p.fields);
      return;
    case WAIT_REG_MEM: {
      if (!expect_len(kWaitRegMemMem.words)) return;
      const bool mem = kWaitRegMemMem.find("mem_space")->get(pkt[1]) == 1;
      add_layout(mem ? kWaitRegMemMem : kWaitRegMemReg, pkt, p.fields);
      if (!mem)
        for (DecodedField& f : p.fields)
          if (f.name == "poll_reg" || f.name == "write_reg2")
            f.text = reg_name(*t.regs, static_cast<uint32_t>(f.value));
      return;
    }
    case INDIRECT_BUFFER:
      if (expect_len(kIndirectBuffer.words)) add_layout(kIndirectBuffer, pkt, p.fields);
      return;
    case EVENT_WRITE:
      // 2 dwords, or 4 for events that also write to an address.
      if (pkt.size() != 2 && pkt.size() != 4) {
        p.error = "expected 2 or 4 dwords, header says " + std::to_string(pkt.size());
        return;
      }
      add_layout(kEventWrite, pkt, p.fields);
      if (pkt.size() == 4) p.fields.push_back({"address", uint64_t{pkt[2]} | (uint64_t{pkt[3]} << 32), {}});
      return;
    case DISPATCH_DIRECT: {
      if (!expect_len(kDispatchDirect.words)) return;
      add_layout(kDispatchDirect, pkt, p.fields);
      if (const Register* r = t.regs->find(t.cregs.dispatch_initiator))
        for (const Field& f : r->fields)
          p.fields.push_back({"dispatch_initiator." + std::string(f.name), f.get(pkt[4]), {}});
      return;
    }
    case SET_SH_REG:
    case SET_UCONFIG_REG: {
      if (pkt.size() < 3) {
        p.error = "register write with no value";
        if (pkt.size() < 2) return;
      }
      add_layout(kSetShReg, pkt.subspan(0, 2), p.fields);
      const uint32_t base =
          (opcode == SET_SH_REG ? kShRegBase : kUconfigRegBase) + kSetShReg.find("reg_offset")->get(pkt[1]);
      for (size_t i = 2; i < pkt.size(); ++i)
        add_register(*t.regs, base + static_cast<uint32_t>(i - 2), pkt[i],
                     opcode == SET_SH_REG ? "SH_REG_" : "UCONFIG_REG_", p.fields);
      return;
    }
    case WRITE_DATA:
      if (pkt.size() < 5) {
        p.error = "WRITE_DATA needs control, address and data";
        return;
      }
      add_layout(kWriteData, pkt, p.fields);
      for (size_t i = 4; i < pkt.size(); ++i) p.fields.push_back({"data" + std::to_string(i - 4), pkt[i], {}});
      return;
    case COPY_DATA:
      if (expect_len(kCopyData.words)) add_layout(kCopyData, pkt, p.fields);
      return;
    case PRED_EXEC:
      if (expect_len(kPredExec.words)) add_layout(kPredExec, pkt, p.fields);
      return;
    case NOP: p.fields.push_back({"payload_words", pkt.size() - 1, {}}); return;
    default: return;  // a documented opcode we do not emit: name and length only
  }
}

}  // namespace

const DecodedField* DecodedPacket::field(std::string_view name) const {
  for (const DecodedField& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<DecodedPacket> decode_pm4(std::span<const uint32_t> words, const Target& t) {
  using namespace pm4;
  std::vector<DecodedPacket> out;
  size_t i = 0;
  while (i < words.size()) {
    const uint32_t h = words[i];
    const size_t left = words.size() - i;
    switch (kHdrType.get(h)) {
      case 2:
        out.push_back(make(i, "TYPE2_FILLER", 1));
        i += 1;
        continue;
      case 1: {
        DecodedPacket p = make(i, "TYPE1", 1);
        p.error = "type-1 packet header " + hexs(h) + " (not used by GC 9+)";
        out.push_back(std::move(p));
        i += 1;
        continue;
      }
      case 0: {
        // Type 0: count + 1 consecutive register writes starting at base_index.
        const size_t n = size_t{kHdrCount.get(h)} + 2;
        DecodedPacket p = make(i, "TYPE0", static_cast<uint32_t>(std::min(n, left)));
        const uint32_t base = kHdr0Base.get(h);
        p.fields.push_back({"base_index", base, reg_name(*t.regs, base)});
        if (n > left) {
          p.error = "truncated: header says " + std::to_string(n) + " dwords, " + std::to_string(left) + " left";
          out.push_back(std::move(p));
          return out;
        }
        for (size_t k = 1; k < n; ++k)
          add_register(*t.regs, base + static_cast<uint32_t>(k - 1), words[i + k], "REG_", p.fields);
        out.push_back(std::move(p));
        i += n;
        continue;
      }
      default: break;
    }
    const uint32_t opcode = kHdrOpcode.get(h);
    const uint32_t count = kHdrCount.get(h);
    const size_t n = (opcode == NOP && count == kNopCountHeaderOnly) ? 1 : size_t{count} + 2;
    const std::string_view name = opcode_name(opcode);
    DecodedPacket p =
        make(i, name.empty() ? "OPCODE_" + hexs(opcode) : std::string(name), static_cast<uint32_t>(std::min(n, left)));
    if (name.empty()) p.error = "unknown PM4 opcode " + hexs(opcode);
    if (n > left) {
      p.error = "truncated: header says " + std::to_string(n) + " dwords, " + std::to_string(left) + " left";
      out.push_back(std::move(p));
      return out;
    }
    if (!name.empty()) decode_type3(t, opcode, words.subspan(i, n), p);
    out.push_back(std::move(p));
    i += n;
  }
  return out;
}

std::vector<DecodedPacket> decode_sdma(std::span<const uint32_t> words, const Target& t) {
  using namespace sdma;
  const Dialect& d = *t.sdma;
  std::vector<DecodedPacket> out;
  size_t i = 0;
  while (i < words.size()) {
    const uint32_t h = words[i];
    const size_t left = words.size() - i;
    const uint32_t op = kHdrOp.get(h), sub = kHdrSubOp.get(h);
    const Layout* l = nullptr;
    size_t n = 0;  // 0: length unknown
    switch (op) {
      case OP_NOP:
        l = d.nop;
        n = 1 + size_t{d.nop->find("count")->get(h)};
        break;
      case OP_COPY:
        if (sub == SUBOP_COPY_LINEAR) l = d.copy_linear;
        break;
      case OP_WRITE:
        if (sub == 0 && left >= 4) {
          l = d.write_linear;
          n = 4 + size_t{d.write_linear->find("count")->get(words[i + 3])} + 1;
        } else if (sub == 0) n = 4;  // reported truncated below
        break;
      case OP_INDIRECT: l = d.indirect; break;
      case OP_FENCE: l = d.fence; break;
      case OP_TRAP: l = d.trap; break;
      case OP_POLL_REGMEM: l = d.poll_regmem; break;
      case OP_TIMESTAMP:
        if (sub <= SUBOP_TIMESTAMP_GET_GLOBAL) l = d.timestamp;
        break;
      // Documented packets we do not emit: name and length only.
      case OP_SRBM_WRITE: n = 3; break;
      case OP_COND_EXE: n = 5; break;
      case OP_CONST_FILL: n = 5; break;
      case OP_GCR_REQ: n = 5; break;
      case OP_ATOMIC: n = 8; break;
      default: break;
    }
    if (l != nullptr && n == 0) n = l->words;  // a fixed-size packet: its length is its layout's
    const std::string_view opname = op_name(op);
    std::string name = l ? std::string(l->name) : opname.empty() ? "OP_" + hexs(op) : std::string(opname);
    if (n == 0) {
      // Unknown op or sub-op: its length is unknown, so step one dword and try again.
      DecodedPacket p = make(i, std::move(name), 1);
      p.error = "unknown SDMA op " + hexs(op) + " sub_op " + hexs(sub);
      out.push_back(std::move(p));
      i += 1;
      continue;
    }
    DecodedPacket p = make(i, std::move(name), static_cast<uint32_t>(std::min(n, left)));
    if (n > left) {
      p.error = "truncated: packet needs " + std::to_string(n) + " dwords, " + std::to_string(left) + " left";
      out.push_back(std::move(p));
      return out;
    }
    if (l) {
      add_layout(*l, words.subspan(i, n), p.fields);
      if (op == OP_COPY) p.fields.push_back({"byte_count", uint64_t{l->find("count")->get(words[i + 1])} + 1, {}});
      if (op == OP_WRITE)
        for (size_t k = 4; k < n; ++k) p.fields.push_back({"data" + std::to_string(k - 4), words[i + k], {}});
    }
    out.push_back(std::move(p));
    i += n;
  }
  return out;
}

std::vector<DecodedPacket> decode_aql(std::span<const uint32_t> words, const Target& t) {
  using namespace aql;
  (void)t;
  std::vector<DecodedPacket> out;
  for (size_t i = 0; i < words.size(); i += kPacketWords) {
    const size_t left = words.size() - i;
    if (left < kPacketWords) {
      DecodedPacket p = make(i, "TRUNCATED", static_cast<uint32_t>(left));
      p.error = "partial AQL packet: " + std::to_string(left * 4) + " of 64 bytes";
      out.push_back(std::move(p));
      break;
    }
    const std::span<const uint32_t> pkt = words.subspan(i, kPacketWords);
    const uint32_t type = kType.get(pkt[0]);
    const Layout* l = nullptr;
    switch (type) {
      case KERNEL_DISPATCH: l = &kKernelDispatch; break;
      case BARRIER_AND: l = &kBarrierAnd; break;
      case BARRIER_OR: l = &kBarrierOr; break;
      case VENDOR_SPECIFIC:
        if (kVendorPm4Ib.find("vendor_format")->get(pkt[0]) == kVendorFormatPm4Ib) l = &kVendorPm4Ib;
        break;
      default: break;
    }
    const std::string_view tname = type_name(type);
    DecodedPacket p = make(i,
                           l               ? std::string(l->name)
                           : tname.empty() ? "TYPE_" + hexs(type)
                                           : std::string(tname),
                           kPacketWords);
    if (l) add_layout(*l, pkt, p.fields);
    else if (type != INVALID)  // INVALID marks a slot not (yet) written: normal in a ring
      p.error = "AQL packet type " + hexs(type) + " not decoded";
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace hcq::amd
