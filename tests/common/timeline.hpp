// For tests that build a timeline submission by hand, in pieces (the wait in one helper, the signal in another):
// takes the next timeline value at once, as a submission's slot does when committed. Code outside the tests
// submits through Device::submit, or holds a Device::TimelineSlot from the reservation to the submit.
#pragma once

#include <cstdint>

#include "hcq/device.hpp"

namespace hcq::test {

inline uint64_t take_timeline_value(Device& dev) { return dev.reserve_timeline().commit().value(); }

}  // namespace hcq::test
