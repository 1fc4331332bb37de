// Parsing, one named step each: header, section headers and names, symbols, layout of the allocated sections (the
// image), reserved shared memory, .nv.info attributes, kernels, hcq descriptors, relocations. Every read of the input
// goes through the checked ELF64 view (drivers/common/elf64.hpp).
#include "nv/cubin/cubin.hpp"

#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include "common/elf64.hpp"
#include "hcq/backend/align.hpp"
#include "hcq/error.hpp"
#include "hcq/kernel_abi.h"
#include "nv/cubin/cubin_bad.hpp"
#include "nv/cubin/cubin_facts.hpp"

namespace hcq::nv {
namespace {

using cubin::Attr;
using cubin::InfoFormat;
using cubin_detail::bad;
using cubin_detail::kBad;

constexpr uint64_t kMaxImageBytes = uint64_t{1} << 30;  // far beyond any kernel; stops a header asking for 2^64
constexpr std::string_view kHcqPrefix = ".hcq";
constexpr std::string_view kSourceSection = ".hcq.source";

using Bytes = elf64::Bytes;

struct Section {
  Elf64_Shdr h;
  std::string name;
  std::optional<uint64_t> placed;  // offset in the image, for the sections the loader lays out
};

struct Symbol {
  std::string name;
  uint8_t type, bind;
  uint16_t shndx;
  uint64_t value, size;
};

// One .nv.info record.
struct InfoRecord {
  uint8_t attr;
  InfoFormat format;
  uint16_t hval;                  // HVAL / BVAL value
  std::span<const uint8_t> data;  // SVAL payload
};

std::vector<InfoRecord> parse_info(std::span<const uint8_t> sec, const std::string& where) {
  const Bytes b(sec, kBad);
  std::vector<InfoRecord> out;
  uint64_t off = 0;
  while (off < sec.size()) {
    const auto format = b.read<uint8_t>(off, where + " record format");
    const auto attr = b.read<uint8_t>(off + 1, where + " record attribute");
    const auto v = b.read<uint16_t>(off + 2, where + " record value");
    InfoRecord r{attr, static_cast<InfoFormat>(format), v, {}};
    switch (r.format) {
      case InfoFormat::nval:
      case InfoFormat::bval:
      case InfoFormat::hval: off += 4; break;
      case InfoFormat::sval:
        r.data = b.slice(off + 4, v, cat(where, " attribute ", hex(attr), " payload"));
        off += 4 + uint64_t{v};
        break;
      default: bad(cat(where, ": record at ", hex(off), " has unknown format ", hex(format)));
    }
    out.push_back(r);
  }
  return out;
}

uint32_t u32_at(const InfoRecord& r, uint64_t off, const std::string& where) {
  return Bytes(r.data, kBad).read<uint32_t>(off, cat(where, " attribute ", hex(r.attr)));
}
uint16_t u16_at(const InfoRecord& r, uint64_t off, const std::string& where) {
  return Bytes(r.data, kBad).read<uint16_t>(off, cat(where, " attribute ", hex(r.attr)));
}
void expect_format(const InfoRecord& r, InfoFormat f, const std::string& where) {
  if (r.format != f)
    bad(cat(where, ": attribute ", hex(r.attr), " has format ", static_cast<unsigned>(r.format), ", expected ",
            static_cast<unsigned>(f)));
}

// A constant bank section: ".nv.constant3" -> {3, ""} (the module's), ".nv.constant2.k" -> {2, "k"} (kernel k's own);
// nullopt for anything else. ".nv.constant0.k" is {0, "k"}: bank 0, which the driver builds per launch.
struct BankSection {
  uint32_t bank;
  std::string_view kernel;
};
std::optional<BankSection> bank_section(std::string_view name) {
  if (!name.starts_with(cubin::kConstantBank)) return std::nullopt;
  std::string_view rest = name.substr(cubin::kConstantBank.size());
  const size_t dot = rest.find('.');
  const std::string_view digits = rest.substr(0, dot);
  if (digits.empty() || digits.size() > 2) return std::nullopt;
  uint32_t n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint32_t>(c - '0');
  }
  if (dot == std::string_view::npos) return BankSection{n, {}};
  const std::string_view kernel = rest.substr(dot + 1);
  if (kernel.empty()) return std::nullopt;
  return BankSection{n, kernel};
}

// What the steps of parse() read: the checked section table, the sections by index and by name, the symbols.
struct Input {
  const elf64::Sections& table;
  std::vector<Section> secs;
  std::map<std::string, uint32_t, std::less<>> by_name;
  std::vector<Symbol> syms;
  uint32_t symtab_index = 0;
};

// The ELF header: an EM_CUDA executable; returns its SM version.
uint32_t check_header(const Elf64_Ehdr& eh) {
  if (eh.e_machine != cubin::kMachineCuda)
    bad(cat("e_machine ", eh.e_machine, ", expected EM_CUDA (", cubin::kMachineCuda, ")"));
  if (eh.e_type == cubin::kTypeRel)
    bad("a relocatable object (ET_REL, from -rdc / -c): link it with nvlink into an executable cubin first");
  if (eh.e_type != cubin::kTypeExec) bad(cat("e_type ", eh.e_type, ", expected ET_EXEC"));
  const uint32_t sm = cubin::sm_of_flags(eh.e_ident[EI_ABIVERSION], eh.e_flags);
  if (sm < 30)
    bad(cat("e_flags ", hex(eh.e_flags), " (ELF ABI version ", unsigned{eh.e_ident[EI_ABIVERSION]},
            ") name no SM version we know"));
  return sm;
}

// Section headers and names.
void read_sections(Input& in) {
  in.secs.resize(in.table.size());
  for (uint32_t i = 0; i < in.secs.size(); ++i) {
    in.secs[i].h = in.table[i];
    if (i == 0) continue;
    in.secs[i].name = std::string(in.table.name(i));
    in.by_name.emplace(in.secs[i].name, i);
  }
}

// The one symbol table.
void read_symbols(Input& in) {
  for (uint32_t i = 1; i < in.secs.size(); ++i) {
    if (in.secs[i].h.sh_type != SHT_SYMTAB) continue;
    if (in.symtab_index) bad("more than one symbol table");
    in.symtab_index = i;
    const elf64::Symbols symtab = in.table.symbols(i);
    for (uint64_t s = 0; s < symtab.size(); ++s) {
      const Elf64_Sym sym = symtab[s];
      in.syms.push_back({std::string(symtab.name(s)), static_cast<uint8_t>(ELF64_ST_TYPE(sym.st_info)),
                         static_cast<uint8_t>(ELF64_ST_BIND(sym.st_info)), sym.st_shndx, sym.st_value, sym.st_size});
    }
  }
  if (!in.symtab_index) bad("no symbol table");
}

// The image: code, then constant banks 1..N (the module's and the kernels' own), then global data, each section placed at its alignment and copied in.
std::vector<uint8_t> lay_out_image(Input& in, std::vector<CubinConstantBank>& banks) {
  std::vector<Section>& secs = in.secs;
  enum class Kind { skip, text, bank, global };
  auto kind_of = [&](const Section& s) {
    const bool alloc = s.h.sh_flags & SHF_ALLOC;
    if (!alloc) return Kind::skip;
    for (const std::string_view merc : cubin::kMercPrefixes)
      if (s.name.starts_with(merc)) return Kind::skip;
    if (s.name.starts_with(cubin::kText)) {
      if (!(s.h.sh_flags & SHF_EXECINSTR) || s.h.sh_type != SHT_PROGBITS) bad(cat(s.name, ": not executable code"));
      return Kind::text;
    }
    if (s.name.starts_with(cubin::kShared)) return Kind::skip;  // sizes only: shared memory is not in the image
    if (const auto b = bank_section(s.name)) {
      if (b->bank == 0 && !b->kernel.empty()) return Kind::skip;  // cbank0: built per launch
      if (b->bank == 0 || b->bank > cubin::kMaxConstantBank)
        bad(cat(s.name, ": constant bank ", b->bank, " out of range"));
      if (s.h.sh_type != SHT_PROGBITS) bad(cat(s.name, ": constant bank without contents"));
      return Kind::bank;
    }
    if (s.name == cubin::kGlobal || s.name == std::string(cubin::kGlobal) + ".init") return Kind::global;
    bad(cat("section ", s.name, ": an allocated section of a kind this loader does not know"));
  };
  uint64_t end = 0;
  for (const Kind pass : {Kind::text, Kind::bank, Kind::global}) {
    for (uint32_t i = 1; i < secs.size(); ++i) {
      Section& s = secs[i];
      if (kind_of(s) != pass) continue;
      const uint64_t a = std::max<uint64_t>(s.h.sh_addralign, pass == Kind::text   ? cubin::kTextAlign
                                                              : pass == Kind::bank ? cubin::kConstantAlign
                                                                                   : cubin::kDataAlign);
      if (!is_power_of_two(a) || a > cubin::kConstantAlign * 16) bad(cat(s.name, ": alignment ", s.h.sh_addralign));
      if (s.h.sh_size > kMaxImageBytes) bad(cat(s.name, ": ", s.h.sh_size, " bytes"));
      s.placed = align_up(end, a);
      end = *s.placed + s.h.sh_size;
      if (end > kMaxImageBytes) bad(cat("image of more than ", kMaxImageBytes, " bytes"));
      if (pass == Kind::bank) {
        if (s.h.sh_size > 0x10000) bad(cat(s.name, ": ", s.h.sh_size, " bytes, a constant bank holds 64 KiB"));
        // A kernel's own bank is attached to it once the kernels are known (kernel_banks()).
        if (bank_section(s.name)->kernel.empty())
          banks.push_back({bank_section(s.name)->bank, *s.placed, static_cast<uint32_t>(s.h.sh_size)});
      }
    }
  }
  std::vector<uint8_t> image(align_up(end, cubin::kTextAlign), 0);
  for (uint32_t i = 1; i < secs.size(); ++i) {
    if (!secs[i].placed || secs[i].h.sh_type == SHT_NOBITS) continue;
    const std::span<const uint8_t> src = in.table.contents(i);
    std::copy(src.begin(), src.end(), image.begin() + static_cast<ptrdiff_t>(*secs[i].placed));
  }
  return image;
}

// Shared memory the compiler reserves for every kernel (.nv.shared.reserved.N).
uint32_t compiler_reserved_shared(const Input& in) {
  const std::vector<Section>& secs = in.secs;
  uint32_t bytes = 0;
  for (uint32_t i = 1; i < secs.size(); ++i) {
    if (!secs[i].name.starts_with(cubin::kSharedReserved) || !(secs[i].h.sh_flags & SHF_ALLOC)) continue;
    if (secs[i].h.sh_size > 0x100000) bad(cat(secs[i].name, ": ", secs[i].h.sh_size, " bytes"));
    bytes += static_cast<uint32_t>(secs[i].h.sh_size);
  }
  return bytes;
}

using AttrsBySymbol = std::map<uint32_t, std::map<uint8_t, uint32_t>>;  // symbol -> attribute -> value

// .nv.info: the global section keys attributes by function symbol.
AttrsBySymbol global_attributes(const Input& in) {
  AttrsBySymbol per_symbol;
  if (const auto it = in.by_name.find(cubin::kInfo); it != in.by_name.end()) {
    for (const InfoRecord& r : parse_info(in.table.contents(it->second), std::string(cubin::kInfo))) {
      const auto a = static_cast<Attr>(r.attr);
      if (a != Attr::regcount && a != Attr::frame_size && a != Attr::min_stack_size && a != Attr::max_stack_size)
        continue;
      expect_format(r, InfoFormat::sval, ".nv.info");
      per_symbol[u32_at(r, 0, ".nv.info")][r.attr] = u32_at(r, 4, ".nv.info");
    }
  }
  return per_symbol;
}

// Kernels: functions with a .nv.info.<name>, their parameters, limits and attributes.
std::vector<CubinKernel> read_kernels(const Input& in, AttrsBySymbol& per_symbol, uint32_t reserved_shared) {
  const std::vector<Section>& secs = in.secs;
  const std::vector<Symbol>& syms = in.syms;
  std::vector<CubinKernel> kernels;
  for (uint32_t si = 0; si < syms.size(); ++si) {
    const Symbol& sym = syms[si];
    if (sym.type != STT_FUNC || sym.name.empty()) continue;
    const auto info_it = in.by_name.find(std::string(cubin::kInfo) + "." + sym.name);
    if (info_it == in.by_name.end()) continue;  // a device function, not an entry
    const std::string where = cat("kernel ", sym.name);
    if (sym.shndx == SHN_UNDEF || sym.shndx >= secs.size() || !secs[sym.shndx].placed ||
        secs[sym.shndx].name != std::string(cubin::kText) + sym.name)
      bad(cat(where, ": its symbol is not in .text.", sym.name));
    const Section& text = secs[sym.shndx];
    if (sym.value >= text.h.sh_size || sym.size > text.h.sh_size - sym.value)
      bad(cat(where, ": code [", hex(sym.value), ", +", sym.size, ") lies outside its ", text.h.sh_size,
              "-byte section"));
    CubinKernel k;
    k.name = sym.name;
    k.code_offset = *text.placed + sym.value;
    k.code_size = sym.size ? sym.size : text.h.sh_size - sym.value;
    if (k.code_offset % cubin::kTextAlign)
      bad(cat(where, ": entry at ", hex(k.code_offset), " is not 128-byte aligned"));

    bool has_cbank = false, has_param_size = false;
    uint32_t cbank_symbol = 0;
    for (const InfoRecord& r : parse_info(in.table.contents(info_it->second), info_it->first)) {
      const std::string& w = info_it->first;
      switch (static_cast<Attr>(r.attr)) {
        case Attr::param_cbank:
          expect_format(r, InfoFormat::sval, w);
          cbank_symbol = u32_at(r, 0, w);
          k.param_offset = u16_at(r, 4, w);
          k.param_size = u16_at(r, 6, w);
          has_cbank = true;
          break;
        case Attr::cbank_param_size:
          expect_format(r, InfoFormat::hval, w);
          if (has_param_size && r.hval != k.param_size) bad(cat(w, ": two parameter sizes"));
          k.param_size = r.hval;
          has_param_size = true;
          break;
        case Attr::kparam_info: {
          expect_format(r, InfoFormat::sval, w);
          const uint32_t flags = u32_at(r, 8, w);
          k.params.push_back(
              {u16_at(r, 4, w), u16_at(r, 6, w), (flags >> cubin::kKparamSizeShift) & cubin::kKparamSizeMask});
          break;
        }
        case Attr::max_threads:
        case Attr::reqntid: {
          expect_format(r, InfoFormat::sval, w);
          const std::array<uint32_t, 3> dims{u32_at(r, 0, w), u32_at(r, 4, w), u32_at(r, 8, w)};
          (static_cast<Attr>(r.attr) == Attr::max_threads ? k.max_threads : k.reqntid) = dims;
          break;
        }
        case Attr::exit_instr_offsets:
          expect_format(r, InfoFormat::sval, w);
          for (uint64_t o = 0; o + 4 <= r.data.size(); o += 4) {
            const uint32_t e = u32_at(r, o, w);
            if (e >= k.code_size) bad(cat(w, ": exit instruction at ", hex(e), " is past the kernel's code"));
            k.exit_offsets.push_back(e);
          }
          break;
        case Attr::regcount:  // some toolchains put it here rather than in .nv.info
          expect_format(r, InfoFormat::sval, w);
          per_symbol[u32_at(r, 0, w)][r.attr] = u32_at(r, 4, w);
          break;
        default: break;
      }
    }
    if (!has_cbank) bad(cat(where, ": no EIATTR_PARAM_CBANK (where its parameters live)"));
    if (cbank_symbol >= syms.size())
      bad(cat(where, ": EIATTR_PARAM_CBANK names symbol ", cbank_symbol, " of ", syms.size()));
    const Symbol& cb = syms[cbank_symbol];
    const std::string cbank_name = std::string(cubin::kConstantBank) + "0." + sym.name;
    if (cb.shndx >= secs.size() || secs[cb.shndx].name != cbank_name)
      bad(cat(where, ": EIATTR_PARAM_CBANK names '", cb.name, "', not ", cbank_name));
    const uint64_t cb_size = secs[cb.shndx].h.sh_size;
    if (cb_size > 0x10000) bad(cat(cbank_name, ": ", cb_size, " bytes, a constant bank holds 64 KiB"));
    k.cbank0_size = static_cast<uint32_t>(cb_size);
    if (uint64_t{k.param_offset} + k.param_size > k.cbank0_size)
      bad(cat(where, ": parameters [", hex(k.param_offset), ", +", k.param_size, ") overflow its ", k.cbank0_size,
              "-byte cbank0"));
    for (const CubinParam& p : k.params)
      if (uint64_t{p.offset} + p.size > k.param_size)
        bad(cat(where, ": parameter ", p.ordinal, " [", p.offset, ", +", p.size, ") overflows ", k.param_size,
                " parameter bytes"));
    std::sort(k.params.begin(), k.params.end(),
              [](const CubinParam& a, const CubinParam& b) { return a.ordinal < b.ordinal; });

    const auto& attrs = per_symbol[si];
    auto attr = [&](Attr a) -> std::optional<uint32_t> {
      const auto it = attrs.find(static_cast<uint8_t>(a));
      return it == attrs.end() ? std::nullopt : std::optional<uint32_t>(it->second);
    };
    if (!attr(Attr::regcount)) bad(cat(where, ": no EIATTR_REGCOUNT"));
    k.registers = *attr(Attr::regcount);
    if (k.registers > 255) bad(cat(where, ": ", k.registers, " registers per thread (at most 255)"));
    k.frame_bytes = attr(Attr::frame_size).value_or(0);
    k.stack_bytes = attr(Attr::min_stack_size).value_or(k.frame_bytes);
    k.max_stack_bytes = attr(Attr::max_stack_size).value_or(0);
    if (const auto sh = in.by_name.find(std::string(cubin::kShared) + sym.name); sh != in.by_name.end()) {
      if (secs[sh->second].h.sh_size > 0xffffffffull) bad(cat(sh->first, ": ", secs[sh->second].h.sh_size, " bytes"));
      k.shared_bytes = static_cast<uint32_t>(secs[sh->second].h.sh_size);
    }
    k.shared_bytes += reserved_shared;
    kernels.push_back(std::move(k));
  }
  return kernels;
}

// Each kernel's own constant banks (.nv.constant<N>.<kernel>, placed by lay_out_image). A bank section of no kernel,
// or a kernel bank the module also defines, is malformed: the QMD binds one address per bank.
void kernel_banks(const Input& in, const std::vector<CubinConstantBank>& module_banks,
                  std::vector<CubinKernel>& kernels) {
  for (const Section& s : in.secs) {
    const auto b = bank_section(s.name);
    if (!b || b->bank == 0 || b->kernel.empty() || !s.placed) continue;
    const auto k =
        std::find_if(kernels.begin(), kernels.end(), [&](const CubinKernel& c) { return c.name == b->kernel; });
    if (k == kernels.end())
      bad(cat(s.name, ": constant bank ", b->bank, " of '", b->kernel, "', which is no kernel here"));
    for (const CubinConstantBank& m : module_banks)
      if (m.bank == b->bank) bad(cat(s.name, ": bank ", b->bank, " is also the module's (.nv.constant", b->bank, ")"));
    k->banks.push_back({b->bank, *s.placed, static_cast<uint32_t>(s.h.sh_size)});
  }
  for (CubinKernel& k : kernels)
    std::sort(k.banks.begin(), k.banks.end(),
              [](const CubinConstantBank& x, const CubinConstantBank& y) { return x.bank < y.bank; });
}

// The hcq kernel descriptors (<name>_hcq_desc in global data): how many buffers and values a kernel takes.
void read_descriptors(const Input& in, const std::vector<uint8_t>& image, std::vector<CubinKernel>& kernels) {
  const std::vector<Section>& secs = in.secs;
  const std::vector<Symbol>& syms = in.syms;
  std::map<std::string_view, uint32_t> sym_by_name;
  for (uint32_t si = 0; si < syms.size(); ++si) sym_by_name.emplace(syms[si].name, si);
  for (CubinKernel& k : kernels) {
    if (const auto it = sym_by_name.find(k.name + "_hcq_desc"); it != sym_by_name.end()) {
      const Symbol& s = syms[it->second];
      if (s.shndx >= secs.size() || !secs[s.shndx].placed || s.size < 12 || s.value > secs[s.shndx].h.sh_size ||
          12 > secs[s.shndx].h.sh_size - s.value)
        bad(cat(s.name, ": not 12 bytes of loaded data"));
      uint32_t d[3];
      std::memcpy(d, image.data() + *secs[s.shndx].placed + s.value, sizeof d);
      if (d[0] != HCQ_KERNEL_MAGIC)
        bad(cat(s.name, ": magic ", hex(d[0]), ", expected ", hex(HCQ_KERNEL_MAGIC), " (HCQK)"));
      if (d[1] > 256 || d[2] > 256) bad(cat(s.name, ": ", d[1], " buffers and ", d[2], " values"));
      if (uint64_t{d[1]} * 8 + uint64_t{d[2]} * 4 > k.param_size)
        bad(cat(s.name, ": ", d[1], " buffers and ", d[2], " values do not fit the kernel's ", k.param_size,
                " parameter bytes"));
      k.num_buffers = d[1];
      k.num_values = d[2];
    }
  }
}

// Relocations of the placed sections, with REL addends read from the image.
std::vector<Cubin::Relocation> read_relocations(const Input& in, const std::vector<uint8_t>& image) {
  const std::vector<Section>& secs = in.secs;
  const std::vector<Symbol>& syms = in.syms;
  std::vector<Cubin::Relocation> relocs;
  for (uint32_t i = 1; i < secs.size(); ++i) {
    const Elf64_Shdr& h = secs[i].h;
    if (h.sh_type != SHT_RELA && h.sh_type != SHT_REL) continue;
    if (h.sh_info >= secs.size()) bad(cat(secs[i].name, ": sh_info ", h.sh_info, " is not a section"));
    const Section& target = secs[h.sh_info];
    if (!(target.h.sh_flags & SHF_ALLOC)) continue;  // debug information: never loaded
    if (!target.placed) bad(cat(secs[i].name, ": relocates ", target.name, ", which the loader does not place"));
    if (h.sh_link != in.symtab_index) bad(cat(secs[i].name, ": sh_link is not the symbol table"));
    // RELA carries the addend; REL (what NVRTC emits for sm_80's data) keeps it in the patched field itself.
    const bool rela = h.sh_type == SHT_RELA;
    const std::vector<Elf64_Rela> entries = in.table.relocations(i);
    for (uint64_t e = 0; e < entries.size(); ++e) {
      Elf64_Rela r = entries[e];
      const uint32_t type = ELF64_R_TYPE(r.r_info), sym_index = ELF64_R_SYM(r.r_info);
      if (type == static_cast<uint32_t>(cubin::Reloc::none)) continue;
      const auto fact = cubin::reloc_fact(type);
      if (!fact)
        bad(cat(secs[i].name, " entry ", e, ": relocation type ", type, " (", hex(type),
                ") is not one the loader applies (R_CUDA_32/64, G32/G64, ABS32_20/LO_20/HI_20, ABS32_32/LO_32/HI_32)"));
      if (r.r_offset > target.h.sh_size || fact->bytes > target.h.sh_size - r.r_offset)
        bad(cat(secs[i].name, " entry ", e, ": ", fact->name, " at ", hex(r.r_offset), " lies outside ", target.name));
      if (sym_index >= syms.size()) bad(cat(secs[i].name, " entry ", e, ": symbol ", sym_index, " of ", syms.size()));
      if (!rela) {
        if (fact->part != cubin::RelocFact::whole)
          bad(cat(secs[i].name, " entry ", e, ": ", fact->name,
                  " as REL (its addend cannot be recovered from half "
                  "an address)"));
        const uint64_t at = *target.placed + r.r_offset;
        uint64_t word = 0;
        std::memcpy(&word, image.data() + at, fact->bytes);
        const uint64_t mask = fact->bytes == 4 ? 0xffffffffull : fact->shift ? 0xffffffffull : ~0ull;
        r.r_addend = static_cast<int64_t>((word >> fact->shift) & mask);
      }
      const Symbol& s = syms[sym_index];
      Cubin::Relocation rel{*target.placed + r.r_offset, type, 0, false};
      if (s.shndx == SHN_ABS || (s.shndx == SHN_UNDEF && s.bind == STB_WEAK)) {
        rel.value = s.value + static_cast<uint64_t>(r.r_addend);
        rel.absolute = true;
      } else if (s.shndx < secs.size() && secs[s.shndx].placed) {
        rel.value = *secs[s.shndx].placed + s.value + static_cast<uint64_t>(r.r_addend);
      } else {
        bad(cat(secs[i].name, " entry ", e, ": ", fact->name, " against '", s.name, "', which is ",
                s.shndx == SHN_UNDEF ? "undefined" : "in a section the loader does not place"));
      }
      // At image base 0 (what image() promises) the value is the field's: one a 32-bit field cannot hold is a bad
      // cubin here, not a load address too high later (an absolute symbol past 4 GiB, a huge addend).
      if (fact->must_fit_32 && rel.value > 0xffffffffull)
        bad(cat(secs[i].name, " entry ", e, ": ", fact->name, " against '", s.name, "' is ", hex(rel.value),
                " at image base 0, which does not fit its 32-bit field"));
      relocs.push_back(rel);
    }
  }
  return relocs;
}

}  // namespace

std::string cubin_identity(std::span<const uint8_t> bytes) {
  // Two FNV-1a 64 lanes with different offsets; the second also mixes the position, so swapped bytes differ.
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  for (size_t i = 0; i < bytes.size(); ++i) {
    a = (a ^ bytes[i]) * 0x100000001b3ull;
    b = (b ^ bytes[i] ^ (i & 0xff)) * 0x100000001b3ull;
  }
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return text;
}

Cubin Cubin::parse(std::span<const uint8_t> elf) {
  const Bytes bytes(elf, kBad);
  Cubin c;
  const Elf64_Ehdr eh = elf64::read_header(bytes);
  c.sm_ = check_header(eh);
  const elf64::Sections table(bytes, eh);
  Input in{table, {}, {}, {}, 0};
  read_sections(in);
  read_symbols(in);
  c.image_ = lay_out_image(in, c.banks_);
  c.reserved_shared_ = compiler_reserved_shared(in);
  AttrsBySymbol per_symbol = global_attributes(in);
  c.kernels_ = read_kernels(in, per_symbol, c.reserved_shared_);
  kernel_banks(in, c.banks_, c.kernels_);
  read_descriptors(in, c.image_, c.kernels_);
  c.relocs_ = read_relocations(in, c.image_);
  const std::vector<Section>& secs = in.secs;
  // What image() promises: relocated for base 0 (an absolute address that does not fit its field is an error).
  c.image_ = c.image_at(0);

  // ---- .hcq.* sections ----
  for (uint32_t i = 1; i < secs.size(); ++i) {
    if (!secs[i].name.starts_with(kHcqPrefix) || (secs[i].h.sh_flags & SHF_ALLOC)) continue;
    const std::span<const uint8_t> b = table.contents(i);
    c.extra_sections_.push_back({secs[i].name, std::vector<uint8_t>(b.begin(), b.end())});
  }
  c.identity_ = cubin_identity(elf);
  return c;
}

std::vector<uint8_t> Cubin::image_at(uint64_t base) const {
  if (base % image_alignment())
    throw InvalidArgument(cat("cubin image base ", hex(base), " is not ", image_alignment(), "-byte aligned"));
  std::vector<uint8_t> out = image_;
  for (const Relocation& r : relocs_) {
    const cubin::RelocFact f = *cubin::reloc_fact(r.type);
    const uint64_t v = r.absolute ? r.value : base + r.value;
    const uint64_t field = f.part == cubin::RelocFact::low    ? v & 0xffffffffull
                           : f.part == cubin::RelocFact::high ? v >> 32
                                                              : v;
    if (f.must_fit_32 && field > 0xffffffffull)
      throw InvalidArgument(cat(f.name, " at image offset ", hex(r.offset), ": address ", hex(v),
                                " does not fit its 32-bit field (load the cubin below 4 GiB)"));
    if (f.bytes == 4) {
      const auto w = static_cast<uint32_t>(field);
      std::memcpy(out.data() + r.offset, &w, 4);
    } else if (f.shift == 0) {
      std::memcpy(out.data() + r.offset, &field, 8);
    } else {
      uint64_t w;
      std::memcpy(&w, out.data() + r.offset, 8);
      const uint64_t mask = 0xffffffffull << f.shift;
      w = (w & ~mask) | ((field << f.shift) & mask);
      std::memcpy(out.data() + r.offset, &w, 8);
    }
  }
  return out;
}

const CubinKernel* Cubin::find(std::string_view name) const {
  for (const CubinKernel& k : kernels_)
    if (k.name == name) return &k;
  return nullptr;
}

const CubinKernel& Cubin::kernel(std::string_view name) const {
  if (const CubinKernel* k = find(name)) return *k;
  std::string names;
  for (const CubinKernel& k : kernels_) names += (names.empty() ? "" : ", ") + k.name;
  throw InvalidArgument(
      cat("cubin for ", arch(), " has no kernel '", name, "' (it has: ", names.empty() ? "none" : names, ")"));
}

std::vector<CubinConstantBank> Cubin::banks_of(const CubinKernel& k) const {
  std::vector<CubinConstantBank> out = banks_;
  out.insert(out.end(), k.banks.begin(), k.banks.end());
  std::sort(out.begin(), out.end(),
            [](const CubinConstantBank& x, const CubinConstantBank& y) { return x.bank < y.bank; });
  return out;
}

const CubinKernel* Cubin::kernel_at_code(uint64_t offset) const {
  for (const CubinKernel& k : kernels_)
    if (k.code_offset == offset) return &k;
  return nullptr;
}

std::span<const uint8_t> Cubin::section(std::string_view name) const {
  for (const Extra& e : extra_sections_)
    if (e.name == name) return e.bytes;
  return {};
}

std::string_view Cubin::source() const {
  const std::span<const uint8_t> s = section(kSourceSection);
  return {reinterpret_cast<const char*>(s.data()), s.size()};
}

void Cubin::check_launch(const CubinKernel& k, std::array<uint32_t, 3> block, uint32_t dynamic_shared,
                         const LaunchLimits& lim) {
  const uint64_t threads = uint64_t{block[0]} * block[1] * block[2];
  const std::string what =
      cat("launch of kernel '", k.name, "' with block {", block[0], ",", block[1], ",", block[2], "}");
  if (threads == 0) throw InvalidArgument(what + ": empty block");
  if (threads > lim.max_threads_per_block)
    throw InvalidArgument(cat(what, ": ", threads, " threads, the architecture allows ", lim.max_threads_per_block));
  if (k.max_threads) {
    const uint64_t bound =
        uint64_t{(*k.max_threads)[0]} * std::max(1u, (*k.max_threads)[1]) * std::max(1u, (*k.max_threads)[2]);
    if (bound && threads > bound)
      throw InvalidArgument(cat(what, ": ", threads, " threads, the kernel's __launch_bounds__ allow ", bound));
  }
  if (k.reqntid && *k.reqntid != block)
    throw InvalidArgument(
        cat(what, ": the kernel requires block {", (*k.reqntid)[0], ",", (*k.reqntid)[1], ",", (*k.reqntid)[2], "}"));
  if (k.registers > lim.max_registers_per_thread)
    throw InvalidArgument(cat(what, ": the kernel uses ", k.registers, " registers per thread, the architecture has ",
                              lim.max_registers_per_thread));
  const uint64_t warps = (threads + lim.warp_size - 1) / lim.warp_size;
  const uint64_t per_warp = align_up(uint64_t{k.registers} * lim.warp_size, lim.register_alloc_unit);
  if (warps * per_warp > lim.registers_per_block)
    throw InvalidArgument(cat(what, ": ", threads, " threads x ", k.registers, " registers needs ", warps * per_warp,
                              " registers (", warps, " warps x ", per_warp, "), a block may have ",
                              lim.registers_per_block));
  const uint64_t shared = uint64_t{k.shared_bytes} + dynamic_shared;
  if (shared > lim.max_shared_bytes_per_block)
    throw InvalidArgument(cat(what, ": ", k.shared_bytes, " static + ", dynamic_shared, " dynamic shared bytes = ",
                              shared, ", a block may have ", lim.max_shared_bytes_per_block));
}

}  // namespace hcq::nv
