// The CUDA adapter's queue words, written once as data. A CUDA stream takes calls, not command words, so a CudaQueue
// records its commands in this small format (HWQueue's words and patches: a bound queue is patched in place and
// resubmitted) and the stream executor (cuda_stream.cpp) turns each command into the driver call it names when the
// queue is submitted.
//
// Commands are the CPU device's word format (drivers/common/command_words.hpp: a header dword with the opcode and the
// total length, then payload dwords) with this adapter's opcodes. Addresses are unified VA.
#pragma once

#include <array>
#include <cstdint>

#include "common/command_words.hpp"

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

static_assert(cmdwords::indexed_by_opcode(kCommands), "kCommands must be indexed by opcode");

constexpr const CommandInfo* command_info(uint32_t opcode) { return cmdwords::entry_for(kCommands, opcode); }
using cmdwords::header_length;
using cmdwords::header_opcode;
using cmdwords::header_reserved;
using cmdwords::join64;
using cmdwords::make_header;

}  // namespace hcq::cuda
