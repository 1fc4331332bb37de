// The device a benchmark runs on, or the benchmark skipped with the reason when it does not open here (no GPU, no
// simulator in this build).
#pragma once

#include <benchmark/benchmark.h>

#include <exception>

#include "hcq/device.hpp"
#include "hcq/registry.hpp"

inline hcq::Device* open_or_skip(benchmark::State& state, const char* device) {
  try {
    return &hcq::open_device(device);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return nullptr;
  }
}
