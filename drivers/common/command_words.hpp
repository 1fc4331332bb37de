// The command-word format the CPU device and the CUDA adapter share (each with its own opcodes, as data in
// cpu_commands.hpp and cuda_commands.hpp): a header dword followed by payload dwords.
//   header bits  0..7   opcode
//          bits  8..15  reserved, zero
//          bits 16..31  total length in dwords, header included
// 64-bit operands are two dwords, low half first. Each device's table of commands is indexed by opcode value.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hcq::cmdwords {

template <class Opcode>
constexpr uint32_t make_header(Opcode op, uint32_t total_dwords) {
  return static_cast<uint32_t>(op) | (total_dwords << 16);
}
constexpr uint32_t header_opcode(uint32_t header) { return header & 0xffu; }
constexpr uint32_t header_reserved(uint32_t header) { return (header >> 8) & 0xffu; }
constexpr uint32_t header_length(uint32_t header) { return header >> 16; }

// Joins two payload dwords into a 64-bit operand (low half first).
constexpr uint64_t join64(uint32_t lo, uint32_t hi) { return static_cast<uint64_t>(hi) << 32 | lo; }

// Whether a table of commands (entries with an `op`) holds each opcode at its own index: dense and in order.
template <class Table>
consteval bool indexed_by_opcode(const Table& table) {
  for (size_t i = 0; i < table.size(); ++i)
    if (static_cast<size_t>(table[i].op) != i) return false;
  return true;
}

// The entry for a raw opcode, or nullptr when the table has none.
template <class Table>
constexpr const typename Table::value_type* entry_for(const Table& table, uint32_t opcode) {
  return opcode < table.size() ? &table[opcode] : nullptr;
}

}  // namespace hcq::cmdwords
