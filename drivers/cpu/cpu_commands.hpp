// The CPU device's command set, written once as data. The encoder (cpu_queue), the consumer (cpu_worker) and the
// decoder of hcq-dump all read this table; nobody keeps a second list of opcodes or lengths.
//
// A command is a header dword followed by its payload dwords:
//   header bits  0..7   opcode
//          bits  8..15  reserved, must be zero (a non-zero value faults the queue: it catches garbage early)
//          bits 16..31  total length in dwords, header included
// 64-bit operands are two dwords, low half first. Addresses are unified VA (the same on the host).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "common/command_words.hpp"

namespace hcq::cpu {

enum class Opcode : uint8_t {
  nop = 0,        // variable length: the payload is ignored (padding)
  skip = 1,       // the rest of the ring up to its end is filler; the consumer wraps to slot 0
  wait = 2,       // addr64, value64: block until *(u64*)addr >= value
  signal = 3,     // addr64, value64: all prior work done, then clock at addr+8, then release-store value at addr
  timestamp = 4,  // addr64: clock at addr+8 (CLOCK_MONOTONIC nanoseconds)
  exec = 5,       // program64, kernargs64, global64[3], local64[3] (64-bit so a patched dim >= 2^32 is seen)
  copy = 6,       // dst64, src64, size64
  barrier = 7,    // full memory fence
  write32 = 8,    // addr64, value32: release store
  write64 = 9,    // addr64, value64: release store
  poll_bit = 10,  // addr64, mask32, set32: block until (*(u32*)addr & mask) == (set ? mask : 0)
  indirect = 11,  // addr64, ndwords32: run the commands in [addr, addr + 4*ndwords) (bound queues)
};

struct CommandInfo {
  Opcode op;
  const char* name;
  // Payload dwords after the header, or kVariableLength (only NOP: any length >= 1 is valid).
  uint8_t payload;
};
inline constexpr uint8_t kVariableLength = 0xff;

inline constexpr std::array<CommandInfo, 12> kCommands{{
    {Opcode::nop, "NOP", kVariableLength},
    {Opcode::skip, "SKIP", 0},
    {Opcode::wait, "WAIT", 4},
    {Opcode::signal, "SIGNAL", 4},
    {Opcode::timestamp, "TIMESTAMP", 2},
    {Opcode::exec, "EXEC", 16},
    {Opcode::copy, "COPY", 6},
    {Opcode::barrier, "BARRIER", 0},
    {Opcode::write32, "WRITE32", 3},
    {Opcode::write64, "WRITE64", 4},
    {Opcode::poll_bit, "POLL_BIT", 4},
    {Opcode::indirect, "INDIRECT", 3},
}};

// The table is indexed by opcode value; keep it dense and in order.
static_assert(cmdwords::indexed_by_opcode(kCommands), "kCommands must be indexed by opcode");

// The entry for a raw opcode byte, or nullptr when no such command exists.
constexpr const CommandInfo* command_info(uint32_t opcode) { return cmdwords::entry_for(kCommands, opcode); }
constexpr const CommandInfo& command_info(Opcode op) { return kCommands[static_cast<size_t>(op)]; }

// Name for messages; "unknown" for an opcode outside the table.
constexpr const char* opcode_name(uint32_t opcode) {
  const CommandInfo* info = command_info(opcode);
  return info ? info->name : "unknown";
}

// Total length (header included) of a fixed-length command.
constexpr uint32_t command_length(Opcode op) { return 1u + command_info(op).payload; }

using cmdwords::header_length;
using cmdwords::header_opcode;
using cmdwords::header_reserved;
using cmdwords::join64;
using cmdwords::make_header;

// The longest command: the consumer copies a payload into a fixed buffer of this size.
consteval uint32_t max_fixed_payload() {
  uint32_t m = 0;
  for (const CommandInfo& c : kCommands)
    if (c.payload != kVariableLength && c.payload > m) m = c.payload;
  return m;
}
inline constexpr uint32_t kMaxPayload = max_fixed_payload();

// Why a header is not a well-formed command, or nullopt when it is. `available` is how many dwords (header
// included) the stream holds from this header on; SKIP is accepted here and its extent is the caller's business.
constexpr std::optional<const char*> check_header(uint32_t header, uint64_t available) {
  const CommandInfo* info = command_info(header_opcode(header));
  if (!info) return "unknown opcode";
  if (header_reserved(header) != 0) return "reserved header bits set";
  const uint32_t len = header_length(header);
  if (info->payload == kVariableLength) {
    if (len == 0) return "zero length";
  } else if (len != 1u + info->payload) {
    return "length does not match the opcode";
  }
  if (info->op != Opcode::skip && len > available) return "command runs past the end of the stream";
  return std::nullopt;
}

}  // namespace hcq::cpu
