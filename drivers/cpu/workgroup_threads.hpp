// The runner behind HCQ_THREAD_KERNEL on the host (the CPU device and the simulators' host twins): it runs every
// thread of a workgroup in its own context (a fiber, fiber_context.hpp) so that HCQ_BARRIER() can suspend one thread
// and run the others, and it is strict on purpose, so that a kernel that works here works for the right reason:
//
//   - At a barrier a thread suspends. Once every thread of the group has arrived, they resume one after another in
//     a pseudo-random order drawn from the dispatch's seed (the knob HCQ_SIM_THREAD_SEED; the group id and the
//     barrier's number are mixed in), and each runs to its next barrier or its end without interruption. The first
//     run of the threads is shuffled the same way. A missing barrier thus reads a value its writer has not yet
//     stored, the same one on every run with one seed.
//   - HCQ_SHARED arrays come from a per-workgroup arena of kSharedBytes that is filled with 0xff bytes before each
//     workgroup: a read before its write sees NaN (floats) or all ones, not a zero or the previous group's value.
//   - A thread that ends while others wait at a barrier (a barrier only some threads reach), and shared arrays over
//     the arena's size, end the workgroup with an error the device reports as the kernel's fault (a GPU would hang
//     or corrupt memory).
//
// Cost (x86-64): two context switches per thread and barrier, a few nanoseconds each. A thread that ends gives its
// stack back at once, so a kernel without barriers uses one stack; the pool grows to one stack per thread waiting at
// a barrier (at most 1024 per OS thread, 64 KiB each, reserved lazily and touched only as deep as kernels go).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "hcq/kernel_abi.h"

namespace hcq::cpu {

// The shared memory a workgroup may declare: what the smallest GPU hcq supports gives a workgroup without opting in
// (AMD LDS and NV static shared memory both stop at 48 to 64 KiB).
inline constexpr size_t kWorkgroupSharedBytes = size_t{64} << 10;

// Points a dispatch's runner fields (run_threads_, barrier_, shared_) at this runner and sets its seed.
void attach_workgroup_threads(hcq_dispatch& d, uint64_t seed);

// Why the last HCQ_THREAD_KERNEL workgroup this OS thread ran broke the rules, or "" (and clears it).
std::string take_workgroup_error();

// For a SIGSEGV handler that leaves a kernel with siglongjmp (drivers/sim/common/guarded_run.cpp): if the thread is
// on a workgroup fiber, the sanitizers learn that the thread's own stack runs next, and the runner abandons the
// workgroup's fibers on its next use (their stacks return to the pool). Async-signal-safe; a no-op off a fiber.
void workgroup_threads_before_jump() noexcept;
// On the thread's own stack, after that jump landed.
void workgroup_threads_after_jump() noexcept;

}  // namespace hcq::cpu
