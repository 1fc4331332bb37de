// Small text helpers shared by the subcommands' tables.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace hcq::tool {

// `value` with `decimals` digits after the point; "-" when it was not measured (NaN).
inline std::string fixed(double value, int decimals) {
  if (!std::isfinite(value)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

// 1536 -> "1.5 KiB": memory sizes people can read at a glance.
inline std::string human_bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  while (v >= 1024.0 && unit + 1 < std::size(kUnits)) {
    v /= 1024.0;
    ++unit;
  }
  return fixed(v, unit == 0 ? 0 : 1) + " " + kUnits[unit];
}

// Left-aligns `s` in a column of `width` characters (at least one space follows).
inline std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

}  // namespace hcq::tool
