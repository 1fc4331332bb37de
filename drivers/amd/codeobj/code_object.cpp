// Parsing order: header, program headers (the image), section headers (symbols, notes, relocations, .hcq sections),
// then kernels. Every read goes through the checked ELF64 view (drivers/common/elf64.hpp).
#include "amd/codeobj/code_object.hpp"

#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>

#include "amd/codeobj/elf_facts.hpp"
#include "amd/codeobj/msgpack.hpp"
#include "common/elf64.hpp"
#include "hcq/backend/align.hpp"
#include "hcq/error.hpp"

namespace hcq::amd {
namespace {

constexpr uint64_t kMaxImageBytes = uint64_t{1} << 30;  // far beyond any kernel; stops a header asking for 2^64
constexpr uint32_t kMaxKernels = 4096;

constexpr std::string_view kBad = "bad code object: ";
[[noreturn]] void bad(const std::string& what) { throw CompileError(cat(kBad, what)); }

struct MetaKernel {
  std::string symbol;
  uint64_t kernarg_size = 0, kernarg_align = 0;
  uint32_t args = 0, bufs = 0, vals = 0;
  bool has_kernarg_size = false;
};

// The parts of the AMDGPU metadata we use: amdhsa.kernels[*].{.symbol, .kernarg_segment_size,
// .kernarg_segment_align, .args[*].value_kind}.
std::vector<MetaKernel> parse_metadata(std::span<const uint8_t> doc) {
  msgpack::Reader r(doc);
  std::vector<MetaKernel> out;
  const uint32_t top = r.map_header();
  for (uint32_t i = 0; i < top; ++i) {
    if (r.peek() != msgpack::Reader::Type::str) {
      r.skip();
      r.skip();
      continue;
    }
    if (r.str() != "amdhsa.kernels") {
      r.skip();
      continue;
    }
    const uint32_t nk = r.array_header();
    for (uint32_t k = 0; k < nk; ++k) {
      MetaKernel mk;
      const uint32_t fields = r.map_header();
      for (uint32_t f = 0; f < fields; ++f) {
        if (r.peek() != msgpack::Reader::Type::str) {
          r.skip();
          r.skip();
          continue;
        }
        const std::string_view key = r.str();
        if (key == ".symbol") {
          mk.symbol = std::string(r.str());
        } else if (key == ".kernarg_segment_size") {
          mk.kernarg_size = r.uint();
          mk.has_kernarg_size = true;
        } else if (key == ".kernarg_segment_align") {
          mk.kernarg_align = r.uint();
        } else if (key == ".args") {
          const uint32_t na = r.array_header();
          for (uint32_t a = 0; a < na; ++a) {
            const uint32_t af = r.map_header();
            std::string_view kind;
            for (uint32_t j = 0; j < af; ++j) {
              if (r.peek() != msgpack::Reader::Type::str) {
                r.skip();
                r.skip();
              } else if (r.str() == ".value_kind") {
                kind = r.str();
              } else {
                r.skip();
              }
            }
            if (kind.substr(0, 7) == "hidden_") continue;
            ++mk.args;
            if (kind == "global_buffer") ++mk.bufs;
            if (kind == "by_value") ++mk.vals;
          }
        } else {
          r.skip();
        }
      }
      if (out.size() >= kMaxKernels) bad(cat("metadata lists more than ", kMaxKernels, " kernels"));
      out.push_back(std::move(mk));
    }
  }
  return out;
}

}  // namespace

std::string code_object_identity(std::span<const uint8_t> bytes) {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull ^ bytes.size();
  for (uint8_t c : bytes) {
    a = (a ^ c) * 0x100000001b3ull;
    b = (b ^ c ^ 0x5a) * 0x100000001b3ull;
    b ^= b >> 29;
  }
  char s[33];
  std::snprintf(s, sizeof s, "%016llx%016llx", static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
  return s;
}

CodeObject CodeObject::parse(std::span<const uint8_t> elf) {
  const elf64::Bytes in(elf, kBad);
  CodeObject co;

  // ---- header ----
  const Elf64_Ehdr eh = elf64::read_header(in);
  if (eh.e_machine != elf::kMachineAmdgpu)
    bad(cat("e_machine ", eh.e_machine, ", expected ", elf::kMachineAmdgpu, " (EM_AMDGPU)"));
  if (eh.e_ident[EI_OSABI] != elf::kOsAbiAmdhsa)
    bad(cat("OS ABI ", int{eh.e_ident[EI_OSABI]}, ", expected ", int{elf::kOsAbiAmdhsa}, " (ELFOSABI_AMDGPU_HSA)"));
  const uint8_t abi = eh.e_ident[EI_ABIVERSION];
  if (abi < elf::kAbiVersionV4 || abi > elf::kAbiVersionV6)
    bad(cat("ABI version ", int{abi}, ": only code object v4, v5 and v6 are supported"));
  co.version_ = abi + 2u;
  if (eh.e_type != ET_DYN) bad(cat("e_type ", eh.e_type, ", expected ET_DYN (a linked code object, not a .o)"));
  const auto gfx = elf::gfx_of_mach(eh.e_flags & elf::kFlagsMachMask);
  if (!gfx) bad(cat("unknown EF_AMDGPU_MACH ", hex(eh.e_flags & elf::kFlagsMachMask)));
  co.gfx_ = std::string(*gfx);

  // ---- program headers: the image ----
  if (eh.e_phnum == 0) bad("no program headers");
  if (eh.e_phentsize != sizeof(Elf64_Phdr)) bad(cat("e_phentsize ", eh.e_phentsize, ", expected ", sizeof(Elf64_Phdr)));
  in.check(eh.e_phoff, uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr), "program header table");
  std::vector<Elf64_Phdr> loads, notes;
  uint64_t image_end = 0;
  for (uint32_t i = 0; i < eh.e_phnum; ++i) {
    const auto ph = in.read<Elf64_Phdr>(eh.e_phoff + uint64_t{i} * sizeof(Elf64_Phdr), "program header");
    if (ph.p_type == PT_NOTE) notes.push_back(ph);
    if (ph.p_type != PT_LOAD) continue;
    const std::string what = cat("PT_LOAD ", i);
    in.check(ph.p_offset, ph.p_filesz, what + " file bytes");
    if (ph.p_filesz > ph.p_memsz) bad(cat(what, " has p_filesz ", ph.p_filesz, " > p_memsz ", ph.p_memsz));
    if (ph.p_vaddr > kMaxImageBytes || ph.p_memsz > kMaxImageBytes - ph.p_vaddr)
      bad(cat(what, " at vaddr ", hex(ph.p_vaddr), " (+", ph.p_memsz, ") is beyond ", kMaxImageBytes, " bytes"));
    if (ph.p_align > 1 && !is_power_of_two(ph.p_align))
      bad(cat(what, " alignment ", ph.p_align, " is not a power of two"));
    if (ph.p_align > 1 && ph.p_align <= kMaxImageBytes) co.align_ = std::max<uint64_t>(co.align_, ph.p_align);
    for (const Elf64_Phdr& o : loads)
      if (ph.p_vaddr < o.p_vaddr + o.p_memsz && o.p_vaddr < ph.p_vaddr + ph.p_memsz)
        bad(cat(what, " [", hex(ph.p_vaddr), ", +", ph.p_memsz, ") overlaps another PT_LOAD"));
    image_end = std::max(image_end, ph.p_vaddr + ph.p_memsz);
    loads.push_back(ph);
  }
  if (loads.empty()) bad("no PT_LOAD segment");
  co.align_ = std::max<uint64_t>(co.align_, elf::kCodeAlignment);
  co.image_.assign(static_cast<size_t>(image_end), 0);
  for (const Elf64_Phdr& ph : loads)
    if (ph.p_filesz) std::memcpy(co.image_.data() + ph.p_vaddr, elf.data() + ph.p_offset, ph.p_filesz);
  auto executable = [&](uint64_t vaddr) {
    for (const Elf64_Phdr& ph : loads)
      if ((ph.p_flags & PF_X) && vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_memsz) return true;
    return false;
  };

  // ---- section headers ----
  const elf64::Sections sh(in, eh);

  // Symbols: the full table if present, else the dynamic one.
  std::optional<uint32_t> symtab;
  for (uint32_t i = 0; i < sh.size(); ++i)
    if (sh[i].sh_type == SHT_DYNSYM) symtab = i;
  for (uint32_t i = 0; i < sh.size(); ++i)
    if (sh[i].sh_type == SHT_SYMTAB) symtab = i;
  if (!symtab) bad("no symbol table");

  // Relocations: only R_AMDGPU_RELATIVE64 (lld emits it for pointers inside the image).
  for (uint32_t i = 0; i < sh.size(); ++i) {
    if (sh[i].sh_type == SHT_REL) bad(cat("section ", i, " holds SHT_REL relocations; AMDGPU uses SHT_RELA"));
    if (sh[i].sh_type != SHT_RELA || !(sh[i].sh_flags & SHF_ALLOC)) continue;
    for (const Elf64_Rela& r : sh.relocations(i)) {
      const uint32_t type = ELF64_R_TYPE(r.r_info);
      if (type == elf::kRelocNone) continue;
      if (type != elf::kRelocRelative64)
        bad(cat("relocation type ", type, " at ", hex(r.r_offset), ": only R_AMDGPU_RELATIVE64 can be loaded"));
      if (r.r_offset > co.image_.size() || co.image_.size() - r.r_offset < 8)
        bad(cat("relocation at ", hex(r.r_offset), " is outside the ", co.image_.size(), "-byte image"));
      co.relocs_.push_back({r.r_offset, r.r_addend});
    }
  }

  // Notes (from sections, else from PT_NOTE segments): the AMDGPU metadata.
  std::vector<MetaKernel> meta;
  bool have_meta = false;
  auto scan_notes = [&](std::span<const uint8_t> n) {
    size_t pos = 0;
    while (n.size() - pos >= 12) {
      uint32_t namesz, descsz, type;
      std::memcpy(&namesz, n.data() + pos, 4);
      std::memcpy(&descsz, n.data() + pos + 4, 4);
      std::memcpy(&type, n.data() + pos + 8, 4);
      pos += 12;
      const uint64_t name_pad = (uint64_t{namesz} + 3) & ~uint64_t{3}, desc_pad = (uint64_t{descsz} + 3) & ~uint64_t{3};
      if (name_pad > n.size() - pos || desc_pad > n.size() - pos - name_pad)
        bad(cat("note of name size ", namesz, " and data size ", descsz, " runs past its section"));
      const std::string_view name(reinterpret_cast<const char*>(n.data() + pos), namesz ? namesz - 1 : 0);
      const std::span<const uint8_t> desc = n.subspan(pos + name_pad, descsz);
      pos += name_pad + desc_pad;
      if (type == elf::kNoteAmdgpuMetadata && name == elf::kNoteOwner) {
        if (have_meta) bad("two AMDGPU metadata notes");
        meta = parse_metadata(desc);
        have_meta = true;
      }
    }
  };
  bool note_sections = false;
  for (uint32_t i = 0; i < sh.size(); ++i)
    if (sh[i].sh_type == SHT_NOTE) {
      note_sections = true;
      scan_notes(sh.contents(i));
    }
  if (!note_sections)
    for (const Elf64_Phdr& ph : notes) scan_notes(in.slice(ph.p_offset, ph.p_filesz, "PT_NOTE"));
  if (!have_meta) bad("no AMDGPU metadata note (NT_AMDGPU_METADATA)");

  // Our own non-allocated sections (.hcq*).
  for (uint32_t i = 0; i < sh.size(); ++i) {
    if (sh[i].sh_type == SHT_NULL || (sh[i].sh_flags & SHF_ALLOC)) continue;
    const std::string_view name = sh.name(i);
    if (name.substr(0, 4) != ".hcq") continue;
    const std::span<const uint8_t> b = sh.contents(i);
    co.extra_sections_.push_back({std::string(name), std::vector<uint8_t>(b.begin(), b.end())});
  }

  // ---- kernels: every "<name>.kd" object symbol ----
  const elf64::Symbols syms = sh.symbols(*symtab);
  for (uint64_t si = 0; si < syms.size(); ++si) {
    const Elf64_Sym s = syms[si];
    if (s.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s.st_info) != STT_OBJECT) continue;
    const std::string_view name = syms.name(si);
    if (name.size() <= 3 || name.substr(name.size() - 3) != ".kd") continue;
    CodeObjectKernel k;
    k.name = std::string(name.substr(0, name.size() - 3));
    if (s.st_size != elf::kKernelDescriptorBytes)
      bad(cat("kernel descriptor ", name, " has size ", s.st_size, ", expected ", elf::kKernelDescriptorBytes));
    if (s.st_value > co.image_.size() || co.image_.size() - s.st_value < elf::kKernelDescriptorBytes)
      bad(cat("kernel descriptor ", name, " at ", hex(s.st_value), " is outside the ", co.image_.size(),
              "-byte image"));
    if (s.st_value % 64) bad(cat("kernel descriptor ", name, " at ", hex(s.st_value), " is not 64-byte aligned"));
    k.descriptor_offset = s.st_value;
    k.descriptor = KernelDescriptor::parse(
        std::as_bytes(std::span<const uint8_t>(co.image_).subspan(s.st_value, elf::kKernelDescriptorBytes)));
    const int64_t entry = k.descriptor.kernel_code_entry_byte_offset;
    const int64_t code = static_cast<int64_t>(s.st_value) + entry;  // both far below 2^62: no overflow
    if (entry < -static_cast<int64_t>(kMaxImageBytes) || entry > static_cast<int64_t>(kMaxImageBytes) || code < 0 ||
        static_cast<uint64_t>(code) >= co.image_.size())
      bad(cat("kernel ", k.name, " code entry offset ", entry, " points outside the image"));
    k.code_offset = static_cast<uint64_t>(code);
    if (k.code_offset % elf::kCodeAlignment)
      bad(cat("kernel ", k.name, " code at ", hex(k.code_offset), " is not ", elf::kCodeAlignment, "-byte aligned"));
    if (!executable(k.code_offset))
      bad(cat("kernel ", k.name, " code at ", hex(k.code_offset), " is not in an executable segment"));
    const auto m = std::find_if(meta.begin(), meta.end(), [&](const MetaKernel& mk) { return mk.symbol == name; });
    if (m == meta.end()) bad(cat("kernel ", k.name, " has no metadata entry (.symbol ", name, ")"));
    if (!m->has_kernarg_size) bad(cat("kernel ", k.name, " metadata has no .kernarg_segment_size"));
    if (m->kernarg_size > (1u << 20)) bad(cat("kernel ", k.name, " kernarg segment of ", m->kernarg_size, " bytes"));
    if (m->kernarg_align > 4096 || (m->kernarg_align && !is_power_of_two(m->kernarg_align)))
      bad(cat("kernel ", k.name, " kernarg alignment ", m->kernarg_align));
    k.kernarg_segment_size = static_cast<uint32_t>(m->kernarg_size);
    k.kernarg_segment_align = static_cast<uint32_t>(m->kernarg_align);
    k.arg_count = m->args;
    k.num_buffers = m->bufs;
    k.num_values = m->vals;
    for (const CodeObjectKernel& o : co.kernels_)
      if (o.name == k.name) bad(cat("kernel ", k.name, " is defined twice"));
    if (co.kernels_.size() >= kMaxKernels) bad(cat("more than ", kMaxKernels, " kernels"));
    co.kernels_.push_back(std::move(k));
  }
  co.identity_ = code_object_identity(elf);
  return co;
}

std::vector<uint8_t> CodeObject::image_at(uint64_t base) const {
  if (base % align_)
    throw InvalidArgument(cat("code object load base ", hex(base), " is not ", align_, "-byte aligned"));
  std::vector<uint8_t> out = image_;
  for (const Relocation& r : relocs_) {
    const uint64_t v = base + static_cast<uint64_t>(r.addend);
    std::memcpy(out.data() + r.offset, &v, 8);
  }
  return out;
}

const CodeObjectKernel* CodeObject::find(std::string_view name) const {
  for (const CodeObjectKernel& k : kernels_)
    if (k.name == name) return &k;
  return nullptr;
}

const CodeObjectKernel& CodeObject::kernel(std::string_view name) const {
  if (const CodeObjectKernel* k = find(name)) return *k;
  std::string have;
  for (const CodeObjectKernel& k : kernels_) have += (have.empty() ? "" : ", ") + k.name;
  throw InvalidArgument(cat("kernel '", name, "' is not in the ", gfx_,
                            " code object (it has: ", have.empty() ? "no kernels" : have, ")"));
}

const CodeObjectKernel* CodeObject::kernel_at_descriptor(uint64_t offset) const {
  for (const CodeObjectKernel& k : kernels_)
    if (k.descriptor_offset == offset) return &k;
  return nullptr;
}

const CodeObjectKernel* CodeObject::kernel_at_code(uint64_t offset) const {
  for (const CodeObjectKernel& k : kernels_)
    if (k.code_offset == offset) return &k;
  return nullptr;
}

KernelInfo CodeObject::info(std::string_view name, const Target& t, uint32_t dynamic_lds_bytes) const {
  if (t.name != gfx_) throw InvalidArgument(cat("code object was built for ", gfx_, ", not for ", t.name));
  return KernelInfo::from_descriptor(kernel(name).descriptor, t, dynamic_lds_bytes);
}

std::span<const uint8_t> CodeObject::section(std::string_view name) const {
  for (const Extra& e : extra_sections_)
    if (e.name == name) return e.bytes;
  return {};
}

}  // namespace hcq::amd
