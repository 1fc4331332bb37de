// GPFIFO facts: the 8-byte ring entry that points the channel at a pushbuffer segment (NVC56F_GP_ENTRY0/1, the same
// bits in NVC86F, NVC96F, NVCA6F), the USERD words the host and the GPU share (GPGet, GPPut) and the usermode
// doorbell (NVC361_NOTIFY_CHANNEL_PENDING), written with the channel's work-submit token.
#pragma once

#include <array>
#include <cstdint>

#include "nv/facts/bits.hpp"

namespace hcq::nv::gpfifo {

inline constexpr uint32_t kEntryBytes = 8;

// The entry as one little-endian u64: ENTRY0 is bits 31:0, ENTRY1 bits 63:32.
inline constexpr std::array<EnumName, 2> kFetchEnums{{{0, "UNCONDITIONAL"}, {1, "CONDITIONAL"}}};
inline constexpr std::array<EnumName, 2> kLevelEnums{{{0, "MAIN"}, {1, "SUBROUTINE"}}};
inline constexpr std::array<EnumName, 2> kSyncEnums{{{0, "PROCEED"}, {1, "WAIT"}}};
inline constexpr std::array<EnumName, 5> kOpcodeEnums{
    {{0, "NOP"}, {1, "ILLEGAL"}, {2, "GP_CRC"}, {3, "PB_CRC"}, {4, "SET_PB_SEGMENT_EXTENDED_BASE"}}};

inline constexpr BitField kFetch{"FETCH", 0, 1, kFetchEnums};   // ENTRY0 0:0
inline constexpr BitField kGet{"GET", 2, 30};                   // ENTRY0 31:2: pushbuffer address bits 31:2
inline constexpr BitField kGetHi{"GET_HI", 32, 8};              // ENTRY1 7:0: pushbuffer address bits 39:32
inline constexpr BitField kLevel{"LEVEL", 41, 1, kLevelEnums};  // ENTRY1 9:9
inline constexpr BitField kLength{"LENGTH", 42, 21};            // ENTRY1 30:10: segment length in dwords
inline constexpr BitField kSync{"SYNC", 63, 1, kSyncEnums};     // ENTRY1 31:31
// A control entry has LENGTH 0; ENTRY1 7:0 is then its OPCODE and ENTRY0 its OPERAND.
inline constexpr BitField kOpcode{"OPCODE", 32, 8, kOpcodeEnums};
inline constexpr BitField kOperand{"OPERAND", 0, 32};

// A pushbuffer segment must lie below 2^40 (GET + GET_HI) and be 4-byte aligned; its length is at most
// 2^21 - 1 dwords.
inline constexpr uint64_t kMaxSegmentAddress = (uint64_t{1} << 40) - 1;
inline constexpr uint32_t kMaxSegmentDwords = (1u << 21) - 1;

// USERD (the channel's control page, Nvc56fControl): the GPU's read index and the host's write index into the ring.
inline constexpr uint32_t kUserdGpGetOffset = 0x88;
inline constexpr uint32_t kUserdGpPutOffset = 0x8c;

// Usermode doorbell: writing the channel's work-submit token (NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN) to this
// offset of the usermode region tells the GPU that GPPut moved. The region is 64 KiB (NVC361_NV_USERMODE__SIZE).
inline constexpr uint32_t kDoorbellOffset = 0x90;
inline constexpr uint32_t kUsermodeSize = 0x10000;

}  // namespace hcq::nv::gpfifo
