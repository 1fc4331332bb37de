// What hcq-exit-child (exit_child.cpp) and its test (exit_test.cpp) share.
#pragma once

#include <string_view>

namespace hcq::conformance {

// Printed by hcq-exit-child just before it leaves: proves it got through its submissions on every device.
inline constexpr std::string_view kExitingMarker = "hcq-exit-child: leaving with work in flight";

}  // namespace hcq::conformance
