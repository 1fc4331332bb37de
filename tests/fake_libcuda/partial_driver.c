/* A CUDA 12.8 libcuda that lacks most of the driver API: the loader must name the entry points it looked for and did
 * not find. It has the version and error calls only. */
#include <stddef.h>

typedef int CUresult;

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int* version) {
  if (!version) return 1; /* CUDA_ERROR_INVALID_VALUE */
  *version = 12080;
  return 0;
}

__attribute__((visibility("default"))) CUresult cuInit(unsigned flags) { return flags == 0 ? 0 : 1; }

__attribute__((visibility("default"))) CUresult cuGetErrorString(CUresult error, const char** text) {
  if (!text) return 1;
  *text = NULL;
  return error == 0 ? (*text = "no error", 0) : 1;
}

__attribute__((visibility("default"))) CUresult cuGetErrorName(CUresult error, const char** name) {
  if (!name) return 1;
  *name = NULL;
  return error == 0 ? (*name = "CUDA_SUCCESS", 0) : 1;
}
