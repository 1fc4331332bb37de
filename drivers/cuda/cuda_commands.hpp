// The CUDA adapter's queue words, written once as data. A CUDA stream takes calls, not command words, so a CudaQueue
// records its commands in this small format (HWQueue's words and patches: a bound queue is patched in place and
// resubmitted) and the stream executor (cuda_stream.cpp) turns each command into the driver call it names when the
// queue is submitted.
//
// A command is a header dword followed by its payload dwords:
//   header bits  0..7   opcode
//          bits  8..15  reserved, zero
//          bits 16..31  total length in dwords, header included
// 64-bit operands are two dwords, low half first. Addresses are unified VA.
#pragma once

#include <array>
#include <cstdint>

namespace hcq::cuda {

enum class Opcode : uint8_t {
  wait = 0,       // addr64, value64: cuStreamWaitValue64(GEQ)
  signal = 1,     // addr64, value64: the timestamp kernel writes %globaltimer at addr+8, then cuStreamWriteValue64
  timestamp = 2,  // addr64: the timestamp kernel alone
  exec = 3,       // program64, grid32[3], block32[3], then the kernel's parameter block (variable length)
  copy = 4,       // dst64, src64, size64: cuMemcpyAsync
  barrier = 5,    // nothing to issue: a stream runs its work in order and host writes to pinned memory are coherent
  write32 = 6,    // addr64, value32: cuStreamWriteValue32
  write64 = 7,    // addr64, value64: cuStreamWriteValue64
  wait_bit =
      8,  // addr64, bit32, set32: cuStreamWaitValue32(AND) for set, (NOR with ~bit) for clear; one bit (a wider poll_bit is one per bit)
};

struct CommandInfo {
  Opcode op;
  const char* name;
  uint8_t payload;  // payload dwords; for exec, the fixed part before the parameter block
};

inline constexpr std::array<CommandInfo, 9> kCommands{{
    {Opcode::wait, "WAIT", 4},
    {Opcode::signal, "SIGNAL", 4},
    {Opcode::timestamp, "TIMESTAMP", 2},
    {Opcode::exec, "EXEC", 8},
    {Opcode::copy, "COPY", 6},
    {Opcode::barrier, "BARRIER", 0},
    {Opcode::write32, "WRITE32", 3},
    {Opcode::write64, "WRITE64", 4},
    {Opcode::wait_bit, "WAIT_BIT", 4},
}};

consteval bool commands_table_is_dense() {
  for (size_t i = 0; i < kCommands.size(); ++i)
    if (static_cast<size_t>(kCommands[i].op) != i) return false;
  return true;
}
static_assert(commands_table_is_dense(), "kCommands must be indexed by opcode");

constexpr const CommandInfo* command_info(uint32_t opcode) {
  return opcode < kCommands.size() ? &kCommands[opcode] : nullptr;
}
constexpr uint32_t make_header(Opcode op, uint32_t total_dwords) {
  return static_cast<uint32_t>(op) | (total_dwords << 16);
}
constexpr uint32_t header_opcode(uint32_t header) { return header & 0xffu; }
constexpr uint32_t header_reserved(uint32_t header) { return (header >> 8) & 0xffu; }
constexpr uint32_t header_length(uint32_t header) { return header >> 16; }
constexpr uint64_t join64(uint32_t lo, uint32_t hi) { return static_cast<uint64_t>(hi) << 32 | lo; }

}  // namespace hcq::cuda
