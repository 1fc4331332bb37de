/* A libcuda of CUDA 11.0: what the loader must refuse as too old before it looks for anything else (CUDA 11's stream
 * memory operations are off unless the nvidia module enables them). cuDriverGetVersion is the only call a caller may
 * make before cuInit, and the only one this fake has. */
typedef int CUresult;

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int* version) {
  if (!version) return 1; /* CUDA_ERROR_INVALID_VALUE */
  *version = 11000;
  return 0;
}
