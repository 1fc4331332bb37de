// Order statistics over benchmark samples.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace hcq::tool {

// The nearest-rank q-quantile (0 < q <= 1) of `samples`; NaN when there are none. Takes a copy: callers ask for
// several quantiles of the same samples.
inline double quantile(std::vector<double> samples, double q) {
  if (samples.empty()) return std::numeric_limits<double>::quiet_NaN();
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(samples.size())));
  size_t index = std::clamp<size_t>(rank, 1, samples.size()) - 1;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(index), samples.end());
  return samples[index];
}

inline double median(const std::vector<double>& samples) { return quantile(samples, 0.5); }

}  // namespace hcq::tool
