// The loader works in four steps, each on validated data only:
//   1. read and check the ELF header, every section header and the symbol table;
//   2. lay out the SHF_ALLOC sections in three page-aligned groups (code, constants, data), plus a GOT and call
//      stubs for external functions (libc is usually further than +-2 GiB from our mapping);
//   3. copy section contents, resolve symbols, apply RELA relocations (range-checked);
//   4. mprotect each group to its final permission (code RX, constants R, data RW).
#include "elf_loader.hpp"

#include <elf.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "common/elf64.hpp"
#include "hcq/backend/align.hpp"
#include "hcq/error.hpp"

namespace hcq::cpu {
namespace {

constexpr std::string_view kBad = "bad ELF: ";
[[noreturn]] void bad(const std::string& what) { throw CompileError(cat(kBad, what)); }

constexpr uint64_t kPage = 4096;
constexpr uint64_t kMaxImageBytes = 256ull << 20;  // a kernel object is kilobytes; refuse absurd NOBITS sizes
constexpr uint64_t kStubBytes = 16;                // jmp *0(%rip) + 8-byte target, padded
constexpr uint64_t kNotLaidOut = std::numeric_limits<uint64_t>::max();

const char* reloc_name(uint32_t type) {
  switch (type) {
    case R_X86_64_64: return "R_X86_64_64";
    case R_X86_64_PC32: return "R_X86_64_PC32";
    case R_X86_64_PLT32: return "R_X86_64_PLT32";
    case R_X86_64_GOTPCREL: return "R_X86_64_GOTPCREL";
    case R_X86_64_32: return "R_X86_64_32";
    case R_X86_64_32S: return "R_X86_64_32S";
    case R_X86_64_PC64: return "R_X86_64_PC64";
    case R_X86_64_GOTPCRELX: return "R_X86_64_GOTPCRELX";
    case R_X86_64_REX_GOTPCRELX: return "R_X86_64_REX_GOTPCRELX";
    default: return "unsupported";
  }
}

bool uses_got(uint32_t type) {
  return type == R_X86_64_GOTPCREL || type == R_X86_64_GOTPCRELX || type == R_X86_64_REX_GOTPCRELX;
}
bool is_pc_relative_call(uint32_t type) { return type == R_X86_64_PLT32 || type == R_X86_64_PC32; }

enum Group { kCode, kConst, kData, kGroups };

struct Loader {
  elf64::Bytes bytes;
  std::optional<elf64::Sections> elf;  // the checked section header table (read_headers)
  std::vector<Elf64_Shdr> sections;    // its headers, by index
  std::vector<uint64_t> placed;        // section index -> offset in the image, or kNotLaidOut
  uint32_t symtab_index = 0;
  std::vector<Elf64_Sym> symbols;
  std::vector<std::string_view> symbol_names;
  std::vector<uint64_t> symbol_addr;  // resolved address; 0 with resolved=false when unusable
  std::vector<uint8_t> symbol_resolved;
  std::vector<int64_t> got_slot;   // symbol index -> GOT slot or -1
  std::vector<int64_t> stub_slot;  // symbol index -> call stub or -1
  uint64_t got_count = 0, stub_count = 0;
  uint64_t group_begin[kGroups + 1] = {};
  uint64_t got_offset = 0, stubs_offset = 0;

  explicit Loader(std::span<const uint8_t> object) : bytes(object, kBad) {}

  void read_headers() {
    const Elf64_Ehdr eh = elf64::read_header(bytes);
    if (eh.e_ident[EI_VERSION] != EV_CURRENT) bad("unknown ELF version");
    if (eh.e_type != ET_REL) bad(cat("e_type ", eh.e_type, " is not ET_REL (a relocatable object)"));
    if (eh.e_machine != EM_X86_64) bad(cat("e_machine ", eh.e_machine, " is not x86-64"));
    elf.emplace(bytes, eh);
    sections = elf->headers();
    for (uint32_t i = 0; i < sections.size(); ++i) {
      const Elf64_Shdr& s = sections[i];
      if (s.sh_addralign > kPage || (s.sh_addralign & (s.sh_addralign - 1)) != 0)
        bad(cat("section ", i, " alignment ", s.sh_addralign));
      if ((s.sh_flags & SHF_ALLOC) && (s.sh_flags & SHF_WRITE) && (s.sh_flags & SHF_EXECINSTR))
        bad(cat("section ", i, " is both writable and executable"));
    }
  }

  void read_symbols() {
    uint32_t found = 0;
    for (uint32_t i = 0; i < sections.size(); ++i)
      if (sections[i].sh_type == SHT_SYMTAB) symtab_index = i, ++found;
    if (found != 1) bad(cat(found, " symbol tables (expected 1)"));
    const elf64::Symbols table = elf->symbols(symtab_index);
    symbols.resize(table.size());
    symbol_names.resize(table.size());
    for (uint64_t i = 0; i < table.size(); ++i) {
      symbols[i] = table[i];
      symbol_names[i] = table.name(i);
    }
  }

  // Every relocation section that patches a loaded section, validated.
  template <class Fn>
  void for_each_rela(Fn&& fn) {
    for (uint32_t i = 0; i < sections.size(); ++i) {
      const Elf64_Shdr& rs = sections[i];
      if (rs.sh_type != SHT_RELA && rs.sh_type != SHT_REL) continue;
      if (rs.sh_info >= sections.size()) bad(cat("relocation section ", i, " targets section ", rs.sh_info));
      const Elf64_Shdr& target = sections[rs.sh_info];
      if (!(target.sh_flags & SHF_ALLOC)) continue;  // debug info and the like: not loaded, not relocated
      if (rs.sh_type == SHT_REL) bad(cat("relocation section ", i, " is SHT_REL (x86-64 uses RELA)"));
      if (rs.sh_link != symtab_index) bad(cat("relocation section ", i, " uses symbol table ", rs.sh_link));
      if (target.sh_type == SHT_NOBITS) bad(cat("relocation section ", i, " patches a NOBITS section"));
      for (const Elf64_Rela& r : elf->relocations(i)) {
        if (ELF64_R_SYM(r.r_info) >= symbols.size())
          bad(cat("relocation in section ", i, " names symbol ", ELF64_R_SYM(r.r_info), " of ", symbols.size()));
        fn(rs.sh_info, r);
      }
    }
  }

  void plan_got_and_stubs() {
    got_slot.assign(symbols.size(), -1);
    stub_slot.assign(symbols.size(), -1);
    for_each_rela([&](uint32_t, const Elf64_Rela& r) {
      const uint32_t type = ELF64_R_TYPE(r.r_info);
      const uint64_t sym = ELF64_R_SYM(r.r_info);
      if (uses_got(type) && got_slot[sym] < 0) got_slot[sym] = static_cast<int64_t>(got_count++);
      if (is_pc_relative_call(type) && symbols[sym].st_shndx == SHN_UNDEF && stub_slot[sym] < 0)
        stub_slot[sym] = static_cast<int64_t>(stub_count++);
    });
  }

  static Group group_of(const Elf64_Shdr& s) {
    if (s.sh_flags & SHF_EXECINSTR) return kCode;
    if (s.sh_flags & SHF_WRITE) return kData;
    return kConst;
  }

  uint64_t layout() {
    placed.assign(sections.size(), kNotLaidOut);
    uint64_t end = 0;
    for (int g = 0; g < kGroups; ++g) {
      end = align_up(end, kPage);
      group_begin[g] = end;
      for (uint32_t i = 0; i < sections.size(); ++i) {
        const Elf64_Shdr& s = sections[i];
        if (!(s.sh_flags & SHF_ALLOC) || s.sh_type == SHT_NULL || group_of(s) != g) continue;
        if (s.sh_size > kMaxImageBytes) bad(cat("section ", i, " size ", s.sh_size, " is too large"));
        end = align_up(end, std::max<uint64_t>(s.sh_addralign, 1));
        placed[i] = end;
        end += s.sh_size;
        if (end > kMaxImageBytes) bad(cat("image larger than ", kMaxImageBytes, " bytes"));
      }
      if (g == kCode) {
        end = align_up(end, kStubBytes);
        stubs_offset = end;
        end += stub_count * kStubBytes;
      } else if (g == kConst) {
        end = align_up(end, 8);
        got_offset = end;
        end += got_count * 8;
      }
    }
    group_begin[kGroups] = align_up(end, kPage);
    return std::max<uint64_t>(group_begin[kGroups], kPage);
  }

  void resolve_symbols(uint64_t base) {
    symbol_addr.assign(symbols.size(), 0);
    symbol_resolved.assign(symbols.size(), 0);
    for (uint64_t i = 1; i < symbols.size(); ++i) {
      const Elf64_Sym& s = symbols[i];
      const uint16_t shndx = s.st_shndx;
      if (shndx == SHN_UNDEF) {
        const uint64_t host = resolve_host_symbol(symbol_names[i]);
        if (host == 0)
          throw CompileError(cat("kernel calls '", symbol_names[i],
                                 "', which the CPU device does not provide (only memcpy, memset, memmove and the "
                                 "math functions of kernel_abi.h)"));
        symbol_addr[i] = host;
        symbol_resolved[i] = 1;
      } else if (shndx == SHN_ABS) {
        symbol_addr[i] = s.st_value;
        symbol_resolved[i] = 1;
      } else if (shndx == SHN_COMMON) {
        bad(cat("common symbol '", symbol_names[i], "' (compile with -fno-common)"));
      } else if (shndx >= SHN_LORESERVE) {
        bad(cat("symbol '", symbol_names[i], "' has special section index ", shndx));
      } else if (shndx >= sections.size()) {
        bad(cat("symbol '", symbol_names[i], "' in section ", shndx, " of ", sections.size()));
      } else if (placed[shndx] != kNotLaidOut) {
        if (s.st_value > sections[shndx].sh_size || s.st_size > sections[shndx].sh_size - s.st_value)
          bad(cat("symbol '", symbol_names[i], "' (value ", s.st_value, ", size ", s.st_size,
                  ") lies outside its section ", shndx));
        symbol_addr[i] = base + placed[shndx] + s.st_value;
        symbol_resolved[i] = 1;
      }
      // else: a symbol of a section we do not load (debug info); using it in a loaded relocation is an error.
    }
  }

  void write_got_and_stubs(uint8_t* image) {
    for (uint64_t i = 0; i < symbols.size(); ++i) {
      if (got_slot[i] >= 0) {
        const uint64_t a = symbol_addr[i];
        std::memcpy(image + got_offset + 8 * static_cast<uint64_t>(got_slot[i]), &a, 8);
      }
      if (stub_slot[i] >= 0) {
        // jmp *0(%rip); .quad target
        uint8_t* stub = image + stubs_offset + kStubBytes * static_cast<uint64_t>(stub_slot[i]);
        const uint8_t jmp[6] = {0xff, 0x25, 0, 0, 0, 0};
        std::memcpy(stub, jmp, sizeof jmp);
        std::memcpy(stub + sizeof jmp, &symbol_addr[i], 8);
      }
    }
  }

  void relocate(uint8_t* image) {
    const auto base = reinterpret_cast<uint64_t>(image);
    for_each_rela([&](uint32_t target_index, const Elf64_Rela& r) {
      const Elf64_Shdr& target = sections[target_index];
      const uint32_t type = ELF64_R_TYPE(r.r_info);
      const uint64_t sym = ELF64_R_SYM(r.r_info);
      if (type == R_X86_64_NONE) return;
      const uint64_t width = (type == R_X86_64_64 || type == R_X86_64_PC64) ? 8 : 4;
      if (r.r_offset > target.sh_size || width > target.sh_size - r.r_offset)
        bad(cat(reloc_name(type), " at offset ", r.r_offset, " runs past section ", target_index));
      if (sym != 0 && !symbol_resolved[sym])
        bad(cat("relocation refers to symbol '", symbol_names[sym], "' of a section that is not loaded"));

      const uint64_t place = base + placed[target_index] + r.r_offset;
      const uint64_t s = symbol_addr[sym];
      const auto a = static_cast<uint64_t>(r.r_addend);
      uint8_t* where = image + placed[target_index] + r.r_offset;
      auto put32_signed = [&](uint64_t value) {
        const auto v = static_cast<int64_t>(value);
        if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
          bad(cat(reloc_name(type), " to '", symbol_names[sym], "' is out of 32-bit range"));
        const auto v32 = static_cast<int32_t>(v);
        std::memcpy(where, &v32, 4);
      };
      switch (type) {
        case R_X86_64_64: {
          const uint64_t v = s + a;
          std::memcpy(where, &v, 8);
          break;
        }
        case R_X86_64_PC64: {
          const uint64_t v = s + a - place;
          std::memcpy(where, &v, 8);
          break;
        }
        case R_X86_64_PC32:
        case R_X86_64_PLT32: {
          const uint64_t target_addr =
              stub_slot[sym] >= 0 ? base + stubs_offset + kStubBytes * static_cast<uint64_t>(stub_slot[sym]) : s;
          put32_signed(target_addr + a - place);
          break;
        }
        case R_X86_64_GOTPCREL:
        case R_X86_64_GOTPCRELX:
        case R_X86_64_REX_GOTPCRELX: {
          const uint64_t got_entry = base + got_offset + 8 * static_cast<uint64_t>(got_slot[sym]);
          put32_signed(got_entry + a - place);
          break;
        }
        case R_X86_64_32: {
          const uint64_t v = s + a;
          if (v > std::numeric_limits<uint32_t>::max())
            bad(cat("R_X86_64_32 to '", symbol_names[sym], "' is out of range (compile with -fPIC)"));
          const auto v32 = static_cast<uint32_t>(v);
          std::memcpy(where, &v32, 4);
          break;
        }
        case R_X86_64_32S: put32_signed(s + a); break;
        default: bad(cat("unsupported relocation type ", type, " in section ", target_index));
      }
    });
  }
};

void protect(uint8_t* begin, uint64_t len, int prot) {
  if (len == 0) return;
  // The OS seam has no mprotect: this is our own anonymous mapping, not a device object.
  if (::mprotect(begin, len, prot) != 0)
    throw OsError(cat("mprotect of a kernel image (", len, " bytes): ", std::strerror(errno)), errno);
}

}  // namespace

uint64_t resolve_host_symbol(std::string_view name) {
  using F1 = float (*)(float);
  using F2 = float (*)(float, float);
  using D1 = double (*)(double);
  using D2 = double (*)(double, double);
  struct Entry {
    std::string_view name;
    uint64_t addr;
  };
  auto addr = [](auto fn) { return reinterpret_cast<uint64_t>(fn); };
  // Keep in sync with the declarations of the host section of include/hcq/kernel_abi.h.
  static const Entry table[] = {
      {"memcpy", addr(&::memcpy)},    {"memmove", addr(&::memmove)},  {"memset", addr(&::memset)},
      {"sqrtf", addr(F1(::sqrtf))},   {"sinf", addr(F1(::sinf))},     {"cosf", addr(F1(::cosf))},
      {"tanf", addr(F1(::tanf))},     {"expf", addr(F1(::expf))},     {"exp2f", addr(F1(::exp2f))},
      {"logf", addr(F1(::logf))},     {"log2f", addr(F1(::log2f))},   {"log10f", addr(F1(::log10f))},
      {"powf", addr(F2(::powf))},     {"fabsf", addr(F1(::fabsf))},   {"floorf", addr(F1(::floorf))},
      {"ceilf", addr(F1(::ceilf))},   {"truncf", addr(F1(::truncf))}, {"roundf", addr(F1(::roundf))},
      {"rintf", addr(F1(::rintf))},   {"fmodf", addr(F2(::fmodf))},   {"fminf", addr(F2(::fminf))},
      {"fmaxf", addr(F2(::fmaxf))},   {"tanhf", addr(F1(::tanhf))},   {"atanf", addr(F1(::atanf))},
      {"atan2f", addr(F2(::atan2f))}, {"asinf", addr(F1(::asinf))},   {"acosf", addr(F1(::acosf))},
      {"sinhf", addr(F1(::sinhf))},   {"coshf", addr(F1(::coshf))},   {"erff", addr(F1(::erff))},
      {"expm1f", addr(F1(::expm1f))}, {"log1pf", addr(F1(::log1pf))}, {"cbrtf", addr(F1(::cbrtf))},
      {"sqrt", addr(D1(::sqrt))},     {"sin", addr(D1(::sin))},       {"cos", addr(D1(::cos))},
      {"tan", addr(D1(::tan))},       {"exp", addr(D1(::exp))},       {"exp2", addr(D1(::exp2))},
      {"log", addr(D1(::log))},       {"log2", addr(D1(::log2))},     {"log10", addr(D1(::log10))},
      {"pow", addr(D2(::pow))},       {"fabs", addr(D1(::fabs))},     {"floor", addr(D1(::floor))},
      {"ceil", addr(D1(::ceil))},     {"trunc", addr(D1(::trunc))},   {"round", addr(D1(::round))},
      {"rint", addr(D1(::rint))},     {"fmod", addr(D2(::fmod))},     {"fmin", addr(D2(::fmin))},
      {"fmax", addr(D2(::fmax))},     {"tanh", addr(D1(::tanh))},     {"atan", addr(D1(::atan))},
      {"atan2", addr(D2(::atan2))},
  };
  for (const Entry& e : table)
    if (e.name == name) return e.addr;
  return 0;
}

ElfImage ElfImage::load(std::span<const uint8_t> object) {
  Loader ld(object);
  ld.read_headers();
  ld.read_symbols();
  ld.plan_got_and_stubs();
  const uint64_t size = ld.layout();

  Os& os = real_os();
  void* mem = os.mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw OsError(cat("mmap of a ", size, "-byte kernel image: ", std::strerror(errno)), errno);
  Mapping mapping(os, mem, size);
  auto* image = static_cast<uint8_t*>(mem);

  for (uint32_t i = 0; i < ld.sections.size(); ++i) {
    const Elf64_Shdr& s = ld.sections[i];
    if (ld.placed[i] != kNotLaidOut && s.sh_type != SHT_NOBITS)
      std::memcpy(image + ld.placed[i], ld.elf->contents(i).data(), s.sh_size);
  }
  ld.resolve_symbols(reinterpret_cast<uint64_t>(image));
  ld.write_got_and_stubs(image);
  ld.relocate(image);

  protect(image + ld.group_begin[kCode], ld.group_begin[kConst] - ld.group_begin[kCode], PROT_READ | PROT_EXEC);
  protect(image + ld.group_begin[kConst], ld.group_begin[kData] - ld.group_begin[kConst], PROT_READ);

  std::vector<NamedSymbol> symbols;
  for (uint64_t i = 1; i < ld.symbols.size(); ++i) {
    const Elf64_Sym& s = ld.symbols[i];
    const unsigned bind = ELF64_ST_BIND(s.st_info);
    if ((bind != STB_GLOBAL && bind != STB_WEAK) || s.st_shndx == SHN_UNDEF || !ld.symbol_resolved[i]) continue;
    symbols.push_back({std::string(ld.symbol_names[i]),
                       ElfSymbol{ld.symbol_addr[i], s.st_size, static_cast<uint8_t>(ELF64_ST_TYPE(s.st_info))}});
  }
  return ElfImage(std::move(mapping), std::move(symbols));
}

std::optional<ElfSymbol> ElfImage::find(std::string_view name) const {
  for (const NamedSymbol& s : symbols_)
    if (s.name == name) return s.sym;
  return std::nullopt;
}

std::vector<std::string> ElfImage::function_names() const {
  std::vector<std::string> names;
  for (const NamedSymbol& s : symbols_)
    if (s.sym.type == STT_FUNC) names.push_back(s.name);
  return names;
}

}  // namespace hcq::cpu
