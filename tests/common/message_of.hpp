// What a test checks about a thrown error: its message. Included by relative path ("../common/message_of.hpp") so
// the quick per-directory test binaries, which do not put tests/ on the include path, find it too.
#pragma once

#include <functional>
#include <string>

namespace hcq::test {

// The message of the E that `f` throws; "(nothing thrown)" when it returns. Other exceptions propagate, so the test
// fails naming them.
template <class E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

}  // namespace hcq::test
