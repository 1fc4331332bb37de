// A pretend GPU address space for host-twin tests: the host ranges a test allows, translated to themselves (the
// simulators map GPU memory at its own VA); everything else is unmapped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "twins/twin_registry.hpp"

namespace hcq::sim::test {

struct Memory {
  std::vector<std::pair<const void*, size_t>> ranges;
  Translate translate() const {
    return [this](uint64_t va, uint64_t size) -> std::byte* {
      for (const auto& [p, n] : ranges) {
        const auto b = reinterpret_cast<uint64_t>(p);
        if (va >= b && size <= n && va - b <= n - size) return reinterpret_cast<std::byte*>(va);
      }
      return nullptr;
    };
  }
};

}  // namespace hcq::sim::test
