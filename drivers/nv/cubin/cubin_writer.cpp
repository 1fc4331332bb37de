// Writing into a cubin: a section appended to an existing ELF64 cubin, the image and everything else left as they are.
#include <elf.h>

#include <cstring>
#include <vector>

#include "common/elf64.hpp"
#include "hcq/backend/align.hpp"
#include "nv/cubin/cubin.hpp"
#include "nv/cubin/cubin_bad.hpp"
#include "nv/cubin/cubin_facts.hpp"

namespace hcq::nv {

using cubin_detail::bad;
using cubin_detail::kBad;
using Bytes = elf64::Bytes;

std::vector<uint8_t> append_section(std::span<const uint8_t> elf, std::string_view name,
                                    std::span<const uint8_t> bytes) {
  const Bytes in(elf, kBad);
  auto eh = elf64::read_header(in);
  if (eh.e_machine != cubin::kMachineCuda) bad("append_section: not an ELF64 cubin");
  if (uint32_t{eh.e_shnum} + 1 >= SHN_LORESERVE) bad("append_section: section header table this cannot extend");
  const elf64::Sections table(in, eh);
  std::vector<Elf64_Shdr> shdrs = table.headers();
  Elf64_Shdr& strh = shdrs[eh.e_shstrndx];
  const std::span<const uint8_t> old_names = table.contents(eh.e_shstrndx);

  std::vector<uint8_t> out(elf.begin(), elf.end());
  auto put = [&out](const void* p, size_t n, uint64_t align) {
    out.resize(align_up(out.size(), align), 0);
    const uint64_t at = out.size();
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
    return at;
  };
  // The new section's contents, then the grown name table, then the header table.
  Elf64_Shdr added{};
  added.sh_type = SHT_PROGBITS;
  added.sh_addralign = 1;
  added.sh_size = bytes.size();
  added.sh_offset = put(bytes.data(), bytes.size(), 1);
  std::vector<uint8_t> names(old_names.begin(), old_names.end());
  added.sh_name = static_cast<uint32_t>(names.size());
  names.insert(names.end(), name.begin(), name.end());
  names.push_back(0);
  strh.sh_offset = put(names.data(), names.size(), 1);
  strh.sh_size = names.size();
  shdrs.push_back(added);
  eh.e_shoff = put(shdrs.data(), shdrs.size() * sizeof(Elf64_Shdr), 8);
  eh.e_shnum = static_cast<uint16_t>(shdrs.size());
  std::memcpy(out.data(), &eh, sizeof eh);
  return out;
}

}  // namespace hcq::nv
