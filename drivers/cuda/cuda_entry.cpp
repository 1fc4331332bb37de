// The CUDA adapter's entry for the registry (drivers/backend_entry.hpp).
#include "backend_entry.hpp"
#include "cuda/cuda_device.hpp"

extern "C" const hcq::backend_entry::Adapter hcq_backend_cuda = {&hcq::cuda::open_cuda_device};
