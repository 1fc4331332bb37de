#include "common/elf64.hpp"

#include <string>

#include "hcq/error.hpp"

namespace hcq::elf64 {
namespace {

// The NUL-terminated string at `off` of a string table.
std::string_view string_at(const Bytes& table, uint64_t off, std::string_view what) {
  const std::span<const uint8_t> t = table.span();
  if (off >= t.size()) table.fail(cat(what, " name offset ", off, " is past its ", t.size(), "-byte string table"));
  const auto* begin = reinterpret_cast<const char*>(t.data() + off);
  const size_t max = t.size() - static_cast<size_t>(off);
  const size_t len = strnlen(begin, max);
  if (len == max) table.fail(cat(what, " name at offset ", off, " is not NUL-terminated"));
  return {begin, len};
}

}  // namespace

void Bytes::fail(std::string_view what) const { throw CompileError(cat(prefix_, what)); }

void Bytes::check(uint64_t off, uint64_t size, std::string_view what) const {
  if (!has(off, size)) fail(cat(what, " [", hex(off), ", +", size, ") lies outside its ", b_.size(), " bytes"));
}

Elf64_Ehdr read_header(const Bytes& file) {
  if (file.size() < sizeof(Elf64_Ehdr))
    file.fail(cat("file of ", file.size(), " bytes is shorter than an ELF64 header"));
  const auto eh = file.read<Elf64_Ehdr>(0, "ELF header");
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) file.fail("not an ELF file (no ELF magic)");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64)
    file.fail(cat("ELF class ", unsigned{eh.e_ident[EI_CLASS]}, ", expected ELF64"));
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) file.fail("not little-endian");
  return eh;
}

std::string_view Symbols::name(uint64_t i) const { return string_at(strings_, (*this)[i].st_name, cat("symbol ", i)); }

Sections::Sections(const Bytes& file, const Elf64_Ehdr& eh) : file_(file) {
  if (eh.e_shentsize != sizeof(Elf64_Shdr))
    fail(cat("e_shentsize ", eh.e_shentsize, ", expected ", sizeof(Elf64_Shdr)));
  if (eh.e_shnum == 0) fail("no section headers");
  // At and above SHN_LORESERVE the count lives elsewhere (extended numbering), which no loader here takes.
  if (eh.e_shnum >= SHN_LORESERVE) fail(cat("section header table of ", eh.e_shnum, " entries (a reserved count)"));
  file.check(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr), "section header table");
  if (eh.e_shstrndx == SHN_UNDEF || eh.e_shstrndx >= eh.e_shnum)
    fail(cat("section name table index ", eh.e_shstrndx, " is not one of ", eh.e_shnum, " sections"));
  headers_.resize(eh.e_shnum);
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    headers_[i] = file.read<Elf64_Shdr>(eh.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), "section header");
    if (headers_[i].sh_type != SHT_NOBITS && headers_[i].sh_type != SHT_NULL)
      file.check(headers_[i].sh_offset, headers_[i].sh_size, cat("section ", i, " contents"));
  }
  if (headers_[eh.e_shstrndx].sh_type != SHT_STRTAB) fail("section name table is not a string table");
  names_ = contents(eh.e_shstrndx);
}

std::span<const uint8_t> Sections::contents(uint32_t i) const {
  if (i >= headers_.size()) fail(cat("section index ", i, " of ", headers_.size(), " sections"));
  const Elf64_Shdr& h = headers_[i];
  if (h.sh_type == SHT_NOBITS || h.sh_type == SHT_NULL) return {};
  return file_.slice(h.sh_offset, h.sh_size, cat("section ", i));
}

std::string_view Sections::name(uint32_t i) const {
  if (i >= headers_.size()) fail(cat("section index ", i, " of ", headers_.size(), " sections"));
  return string_at(file_.sub(names_), headers_[i].sh_name, cat("section ", i));
}

Symbols Sections::symbols(uint32_t i) const {
  const std::span<const uint8_t> table = contents(i);
  const Elf64_Shdr& h = headers_[i];
  if (h.sh_entsize != sizeof(Elf64_Sym))
    fail(cat("symbol table entry size ", h.sh_entsize, ", expected ", sizeof(Elf64_Sym)));
  if (table.size() % sizeof(Elf64_Sym)) fail(cat("symbol table size ", table.size(), " is not whole entries"));
  if (h.sh_link >= headers_.size() || headers_[h.sh_link].sh_type != SHT_STRTAB)
    fail(cat("symbol table links to section ", h.sh_link, ", which is not a string table"));
  return Symbols(file_.sub(table), file_.sub(contents(h.sh_link)));
}

std::vector<Elf64_Rela> Sections::relocations(uint32_t i) const {
  const std::span<const uint8_t> table = contents(i);
  const bool rela = headers_[i].sh_type == SHT_RELA;
  const uint64_t entsize = rela ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel);
  if (headers_[i].sh_entsize != entsize)
    fail(cat("relocation section ", i, " entry size ", headers_[i].sh_entsize, ", expected ", entsize));
  if (table.size() % entsize) fail(cat("relocation section ", i, " size ", table.size(), " is not whole entries"));
  const Bytes t = file_.sub(table);
  std::vector<Elf64_Rela> out(table.size() / entsize);
  for (uint64_t e = 0; e < out.size(); ++e) {
    if (rela) {
      out[e] = t.read<Elf64_Rela>(e * entsize, "relocation");
    } else {
      const auto rel = t.read<Elf64_Rel>(e * entsize, "relocation");
      out[e] = {rel.r_offset, rel.r_info, 0};
    }
  }
  return out;
}

}  // namespace hcq::elf64
