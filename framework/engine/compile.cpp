#include "framework/engine/compile.hpp"

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/registry.hpp"

namespace hcq::fw {
namespace {

std::mutex g_mu;
// Made after the registry opened the devices, so destroyed before it at exit: the programs unload while their
// devices live.
std::unordered_map<std::string, std::shared_ptr<const CompiledKernel>>& cache() {
  static std::unordered_map<std::string, std::shared_ptr<const CompiledKernel>> c;
  return c;
}
std::atomic<uint64_t> g_compiled{0};

std::string numbered(const std::string& source) {
  std::string out;
  int line = 1;
  size_t pos = 0;
  while (pos <= source.size()) {
    const size_t eol = std::min(source.find('\n', pos), source.size());
    if (pos == source.size()) break;
    char num[16];
    std::snprintf(num, sizeof num, "%4d | ", line++);
    out += num;
    out.append(source, pos, eol - pos);
    out += '\n';
    pos = eol + 1;
  }
  return out;
}

}  // namespace

uint64_t kernels_compiled() { return g_compiled.load(); }

std::vector<std::shared_ptr<const CompiledKernel>> compile_kernels(const std::vector<KernelRequest>& requests) {
  std::vector<std::shared_ptr<const CompiledKernel>> out(requests.size());
  std::vector<size_t> misses;                     // the first request of each (device, source) not in the cache
  std::unordered_map<std::string, size_t> first;  // key -> index in requests
  {
    std::lock_guard lock(g_mu);
    for (size_t k = 0; k < requests.size(); ++k) {
      const std::string key = requests[k].device + '\0' + requests[k].rendered.source;
      if (auto it = cache().find(key); it != cache().end()) {
        out[k] = it->second;
      } else if (first.emplace(key, k).second) {
        misses.push_back(k);
      }
    }
  }
  if (misses.empty()) return out;

  // Compile the misses in parallel: the CPU compiler runs clang as a child process per call and keeps no state
  // between calls, so concurrent compile_cached calls are safe; loading stays on this thread.
  std::vector<std::vector<uint8_t>> binaries(misses.size());
  std::vector<std::exception_ptr> errors(misses.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t j; (j = next.fetch_add(1)) < misses.size();) {
      const KernelRequest& r = requests[misses[j]];
      try {
        binaries[j] = open_device(r.device).compiler().compile_cached(r.rendered.source);
      } catch (...) {
        errors[j] = std::current_exception();
      }
    }
  };
  const size_t threads = std::min<size_t>(misses.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();

  for (size_t j = 0; j < misses.size(); ++j) {
    const KernelRequest& r = requests[misses[j]];
    if (errors[j]) {
      try {
        std::rethrow_exception(errors[j]);
      } catch (const CompileError& e) {
        throw CompileError(cat("kernel ", r.rendered.name, " on ", r.device, " failed to compile. Its source:\n",
                               numbered(r.rendered.source), "The compiler said:\n", e.what()));
      }
    }
    auto k = std::make_shared<CompiledKernel>();
    k->device = r.device;
    k->rendered = r.rendered;
    k->program = open_device(r.device).load_program(r.rendered.name, binaries[j]);
    g_compiled.fetch_add(1);
    std::lock_guard lock(g_mu);
    const std::string key = r.device + '\0' + r.rendered.source;
    auto [it, inserted] = cache().emplace(key, std::move(k));
    out[misses[j]] = it->second;
  }
  for (size_t k = 0; k < requests.size(); ++k)
    if (!out[k]) {
      std::lock_guard lock(g_mu);
      out[k] = cache().at(requests[k].device + '\0' + requests[k].rendered.source);
    }
  return out;
}

}  // namespace hcq::fw
