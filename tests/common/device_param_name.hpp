// The gtest name of a test instantiated per device name ("SIM-AMD:gfx1100" -> "SIM_AMD_gfx1100"): gtest allows only
// letters, digits and underscores, and the scripts' filters match the underscored form.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <string>

namespace hcq::test {

inline std::string device_param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

}  // namespace hcq::test
