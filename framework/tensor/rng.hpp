// The random generator's state, for TinyJit (framework/jit): each random tensor's key is a variable of its own (a
// 32-bit kernel value), and each replay binds the keys the eager calls would have drawn in its place.
// Element i of the k-th random tensor since manual_seed(s) is a hash of (key(s, k), i) (framework/tensor/random.cpp).
#pragma once

#include <cstdint>

namespace hcq::fw {

// The key of the k-th random tensor since manual_seed(seed).
uint32_t rng_key(uint64_t seed, uint64_t k);
// The seed manual_seed last set (0 before any).
uint64_t rng_seed();
// Takes n consecutive draws (what n random tensors built now would take) and returns the first one's k.
uint64_t rng_take(uint64_t n);
// The next draw's k, and setting it back (HCQ_JIT_CHECK reruns a replayed call eagerly on the replay's draws).
uint64_t rng_counter();
void set_rng_counter(uint64_t k);

}  // namespace hcq::fw
