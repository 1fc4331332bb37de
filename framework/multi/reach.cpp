// check_devices_reach (include/hcq/multi.hpp): whether every pair of devices can copy to each other, found out the
// only reliable way, by copying: a GPU maps a peer's memory only when both are GPUs of one driver (one KFD process,
// one NVIDIA driver context), or the memory is host memory; the driver says which when asked to map it. A failure
// inside a realize would name only one buffer, so the MultiTensor ops check up front and name both devices.
#include <mutex>
#include <set>
#include <utility>

#include "framework/tensor/build.hpp"
#include "hcq/buffer.hpp"
#include "hcq/device.hpp"
#include "hcq/multi.hpp"
#include "hcq/registry.hpp"

namespace hcq {

namespace {

std::mutex g_mu;
std::set<std::pair<std::string, std::string>> g_reachable;  // canonical names, ordered pairs both ways checked

void probe(const std::string& a, const std::string& b) {
  Device& da = open_device(a);
  Device& db = open_device(b);
  Buffer x(da, 4), y(db, 4);
  try {
    y.copy_from(x);
    x.copy_from(y);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(cat("devices ", a, " and ", b, " cannot reach each other: ", e.what(),
                              ". Put every part on GPUs of one driver (e.g. SIM-AMD:gfx1100 with SIM-AMD:gfx1100:1) "
                              "or on CPU devices, or bring the tensor through the host first (to(\"CPU\"))"));
  }
  da.synchronize();
  db.synchronize();
}

}  // namespace

void check_devices_reach(const std::vector<std::string>& devices) {
  std::vector<std::string> names;
  for (const std::string& d : devices) names.push_back(fw::canonical_device(d));
  for (size_t i = 0; i < names.size(); ++i) {
    for (size_t j = i + 1; j < names.size(); ++j) {
      if (names[i] == names[j]) continue;
      auto key = std::minmax(names[i], names[j]);
      std::pair<std::string, std::string> k(key.first, key.second);
      {
        std::lock_guard lock(g_mu);
        if (g_reachable.count(k)) continue;
      }
      probe(k.first, k.second);  // outside the lock: it copies and waits on two devices
      std::lock_guard lock(g_mu);
      g_reachable.insert(std::move(k));
    }
  }
}

}  // namespace hcq
