#include "twins/nv_twins.hpp"

#include "hcq/error.hpp"
#include "nv/cubin/cubin.hpp"

namespace hcq::sim {

ImageDesc image_of(const nv::Cubin& cubin, uint64_t base) {
  ImageDesc img{cubin.identity(), cubin.relocations().empty() ? cubin.image() : cubin.image_at(base), {}};
  for (const nv::CubinKernel& k : cubin.kernels()) {
    img.kernels.push_back({k.name, k.code_offset, std::nullopt, k.param_offset, k.param_size, {}});
    for (const nv::CubinConstantBank& b : cubin.banks_of(k))
      img.kernels.back().banks.push_back({b.bank, b.offset, b.size});
  }
  return img;
}

size_t add_from_source(TwinRegistry& registry, const nv::Cubin& cubin, Compiler& cpu_compiler) {
  std::vector<SourceKernel> kernels;
  for (const nv::CubinKernel& k : cubin.kernels())
    kernels.push_back({k.name, k.num_buffers, k.num_values, k.param_size});
  return registry.add_from_source(cubin.identity(), cat(cubin.arch(), " cubin"), cubin.source(), kernels, cpu_compiler);
}

}  // namespace hcq::sim
