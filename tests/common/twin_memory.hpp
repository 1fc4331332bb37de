// A pretend GPU address space for host-twin tests: the host ranges a test allows, translated to themselves (the
// simulators map GPU memory at its own VA), plus code images placed at GPU VAs of their own; everything else is
// unmapped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "twins/twin_registry.hpp"

namespace hcq::sim::test {

struct Memory {
  std::vector<std::pair<const void*, size_t>> ranges;
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> images;  // GPU VA -> the bytes there (an uploaded image)

  // What the registry checks a dispatch's code against: `bytes` uploaded at GPU VA `va`.
  std::vector<uint8_t>& place(uint64_t va, std::vector<uint8_t> bytes) {
    images.emplace_back(va, std::move(bytes));
    return images.back().second;
  }
  Translate translate() const {
    return [this](uint64_t va, uint64_t size) -> std::byte* {
      for (const auto& [p, n] : ranges) {
        const auto b = reinterpret_cast<uint64_t>(p);
        if (va >= b && size <= n && va - b <= n - size) return reinterpret_cast<std::byte*>(va);
      }
      for (const auto& [b, bytes] : images) {
        const std::vector<uint8_t>& v = bytes;
        if (va >= b && size <= v.size() && va - b <= v.size() - size)
          return reinterpret_cast<std::byte*>(const_cast<uint8_t*>(v.data())) + (va - b);
      }
      return nullptr;
    };
  }
  TwinMemory twin() const { return TwinMemory{translate(), nullptr}; }
};

}  // namespace hcq::sim::test
