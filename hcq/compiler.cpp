// Compiler::compile_cached: the on-disk cache in front of every backend's real compile.
#include "hcq/compiler.hpp"

#include <filesystem>

#include "hcq/error.hpp"
#include "hcq/knobs.hpp"

namespace hcq {

std::string Compiler::cache_key(std::string_view source) const {
  std::string key = identity();
  key += '\0';
  key += target();
  key += '\0';
  key += options();
  key += '\0';
  key += source;
  return key;
}

std::vector<uint8_t> Compiler::compile_cached(std::string_view source) {
  return compile_cached(source, CompileCache(knobs::cache_dir()), knobs::assert_compile());
}

std::vector<uint8_t> Compiler::compile_cached(std::string_view source, const CompileCache& cache, bool assert_compile) {
  const std::string key = cache_key(source);
  if (auto hit = cache.get(key)) return std::move(*hit);
  if (assert_compile) {
    throw CompileError(cat("HCQ_ASSERT_COMPILE=1 but ", identity(), " (target ", target(),
                           ") had to compile (cache miss for key hash ",
                           std::filesystem::path(cache.path_for(key)).stem().string(), " in ", cache.dir(), ")"));
  }
  std::vector<uint8_t> binary = compile(source);
  cache.put(key, binary);
  return binary;
}

}  // namespace hcq
