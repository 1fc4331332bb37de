// Semaphore memory operations shared by the host's SEM_EXECUTE, the compute engine's QMD releases and report
// semaphores, and the copy engine's LAUNCH_DMA releases. The report layout every class shares: the payload at +0
// (32 or 64 bits), and when a timestamp is asked for, the 16-byte form with the GPU time in nanoseconds at +8.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "sim/nv_engine/channel_context.hpp"

namespace hcq::sim::nv_engine {

// Writes a semaphore release. Returns the unmapped address on failure.
std::optional<uint64_t> release_semaphore(ChannelContext& ctx, uint64_t va, uint64_t payload, bool is64,
                                          bool timestamp);

// A reduction applied to a semaphore in memory (atomic). `op` is the reduction's enum name (IMIN, IMAX, IXOR, IAND,
// IOR, IADD, INC, DEC, as the host and copy classes name them). Returns "" or why it could not.
std::string reduce_semaphore(ChannelContext& ctx, uint64_t va, std::string_view op, bool is_signed, uint64_t payload,
                             bool is64);

}  // namespace hcq::sim::nv_engine
