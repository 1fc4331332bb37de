// A checked view of a little-endian ELF64 file: the header's identification, the section header table, section
// names, symbol tables and relocation sections. The three loaders (NVIDIA cubins, AMDHSA code objects, the CPU
// device's x86-64 objects) read their input through it; what makes a file one of theirs (e_machine, e_type, the
// vendor's sections, notes and relocation types) stays with each loader and its facts file.
//
// The bytes are untrusted (a cache file, a user, a fuzzer): every offset, size and index is checked before use, and
// anything malformed throws hcq::CompileError("<prefix><what>"), the prefix naming the kind of file ("bad cubin: ").
// Nothing here copies the input: the views point into it and live no longer than it.
#pragma once

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace hcq::elf64 {

// Bounds-checked reads from a byte range.
class Bytes {
 public:
  Bytes(std::span<const uint8_t> bytes, std::string_view error_prefix) : b_(bytes), prefix_(error_prefix) {}

  bool has(uint64_t off, uint64_t size) const { return off <= b_.size() && size <= b_.size() - off; }
  // CompileError naming `what` unless [off, off + size) lies inside.
  void check(uint64_t off, uint64_t size, std::string_view what) const;
  template <class T>
  T read(uint64_t off, std::string_view what) const {
    check(off, sizeof(T), what);
    T v;
    std::memcpy(&v, b_.data() + off, sizeof(T));
    return v;
  }
  std::span<const uint8_t> slice(uint64_t off, uint64_t size, std::string_view what) const {
    check(off, size, what);
    return b_.subspan(static_cast<size_t>(off), static_cast<size_t>(size));
  }
  // The same checks over a part of these bytes (a section's contents), failing with the same prefix.
  Bytes sub(std::span<const uint8_t> part) const { return Bytes(part, prefix_); }
  size_t size() const { return b_.size(); }
  std::span<const uint8_t> span() const { return b_; }
  [[noreturn]] void fail(std::string_view what) const;

 private:
  std::span<const uint8_t> b_;
  std::string_view prefix_;
};

// The ELF header, once its identification says ELF64, little-endian. The machine, type, OS ABI and flags are the
// caller's to check.
Elf64_Ehdr read_header(const Bytes& file);

// The entries of one symbol table (SHT_SYMTAB or SHT_DYNSYM), with names from its linked string table.
class Symbols {
 public:
  uint64_t size() const { return count_; }
  Elf64_Sym operator[](uint64_t i) const { return table_.read<Elf64_Sym>(i * sizeof(Elf64_Sym), "symbol"); }
  std::string_view name(uint64_t i) const;

 private:
  friend class Sections;
  Symbols(Bytes table, Bytes strings) : table_(table), strings_(strings), count_(table.size() / sizeof(Elf64_Sym)) {}
  Bytes table_, strings_;
  uint64_t count_;
};

// The section header table: its entry size, its place in the file, e_shstrndx naming a string table, and every
// section's contents (but SHT_NOBITS and SHT_NULL) inside the file, all checked on construction.
class Sections {
 public:
  Sections(const Bytes& file, const Elf64_Ehdr& header);

  uint32_t size() const { return static_cast<uint32_t>(headers_.size()); }
  const Elf64_Shdr& operator[](uint32_t i) const { return headers_[i]; }
  const std::vector<Elf64_Shdr>& headers() const { return headers_; }
  // Section i's bytes; empty for SHT_NOBITS and SHT_NULL. CompileError when i is not a section.
  std::span<const uint8_t> contents(uint32_t i) const;
  // Section i's name in the section name table.
  std::string_view name(uint32_t i) const;
  // The symbol table in section i: entry size, whole entries, sh_link naming a string table.
  Symbols symbols(uint32_t i) const;
  // The entries of SHT_RELA or SHT_REL section i, as Elf64_Rela (a REL entry's addend is 0: it lives in the patched
  // field). Entry size and whole entries are checked; what they point at is the caller's to check.
  std::vector<Elf64_Rela> relocations(uint32_t i) const;
  [[noreturn]] void fail(std::string_view what) const { file_.fail(what); }

 private:
  Bytes file_;
  std::vector<Elf64_Shdr> headers_;
  std::span<const uint8_t> names_;
};

}  // namespace hcq::elf64
