// A launch's arguments (buffer addresses, kernel values) gathered per kernel on the eager path: on the stack up to N,
// on the heap beyond (a kernel that reads many buffers or fuses many random tensors), with no allocation per launch
// in the usual case.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <vector>

namespace hcq::fw {

template <class T, size_t N>
class ArgArray {
 public:
  explicit ArgArray(size_t n) : size_(n) {
    if (n > N) big_.resize(n);
  }
  ArgArray(const ArgArray&) = delete;
  ArgArray& operator=(const ArgArray&) = delete;
  T& operator[](size_t k) { return data()[k]; }
  std::span<const T> span() { return {data(), size_}; }

 private:
  T* data() { return size_ > N ? big_.data() : small_.data(); }
  size_t size_;
  std::array<T, N> small_{};
  std::vector<T> big_;
};

}  // namespace hcq::fw
