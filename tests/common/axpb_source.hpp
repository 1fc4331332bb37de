// The kernel every device's tests run: out[i] = in[i] * scale + bias for i < n (2 buffers, 3 values), in the C of
// hcq's kernel ABI, which the CPU, AMD and NV compilers all take. An array, so it has one address in every test
// (the compile caches key on it).
#pragma once

namespace hcq::test {

inline constexpr char kAxpbSource[] = R"(
HCQ_KERNEL(axpb, 2, 3) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    uint32_t i = HCQ_GLOBAL_ID(0, x);
    float scale = (float)HCQ_VAL(1), bias = (float)HCQ_VAL(2);
    if (i < HCQ_VAL(0)) HCQ_BUF(float, 0)[i] = HCQ_BUF(const float, 1)[i] * scale + bias;
  }
}
)";

}  // namespace hcq::test
