/* A CUDA 12.8 libcuda with every entry point the adapter resolves, on a machine whose kernel driver finds no GPU:
 * cuInit returns CUDA_ERROR_NO_DEVICE (100), and as the driver API documents, every other call before a successful
 * cuInit returns CUDA_ERROR_NOT_INITIALIZED (3). cuGetErrorString/cuGetErrorName answer before cuInit (documented so)
 * for the codes this fake uses, and say CUDA_ERROR_INVALID_VALUE with a null string for codes they do not know, as
 * the real ones do for a code outside the enum. No memory, stream or kernel call does anything here. */
#include <stddef.h>

typedef int CUresult;
#define EXPORT __attribute__((visibility("default")))

enum { kSuccess = 0, kInvalidValue = 1, kNotInitialized = 3, kNoDevice = 100 };

EXPORT CUresult cuDriverGetVersion(int* version) {
  if (!version) return kInvalidValue;
  *version = 12080;
  return kSuccess;
}

EXPORT CUresult cuInit(unsigned flags) { return flags == 0 ? kNoDevice : kInvalidValue; }

struct Text {
  CUresult code;
  const char* name;
  const char* text;
};
/* The texts libcuda 12.x gives for these codes. */
static const struct Text kTexts[] = {
    {kSuccess, "CUDA_SUCCESS", "no error"},
    {kInvalidValue, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {kNotInitialized, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {kNoDevice, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
};

static const struct Text* find(CUresult code) {
  for (size_t i = 0; i < sizeof kTexts / sizeof kTexts[0]; ++i)
    if (kTexts[i].code == code) return &kTexts[i];
  return NULL;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char** text) {
  if (!text) return kInvalidValue;
  const struct Text* t = find(error);
  *text = t ? t->text : NULL;
  return t ? kSuccess : kInvalidValue;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char** name) {
  if (!name) return kInvalidValue;
  const struct Text* t = find(error);
  *name = t ? t->name : NULL;
  return t ? kSuccess : kInvalidValue;
}

/* Everything else: not initialized. The parameters do not matter to a call that refuses before looking at them. */
#define NOT_INITIALIZED(name) \
  EXPORT CUresult name(void) { return kNotInitialized; }
NOT_INITIALIZED(cuDeviceGetCount)
NOT_INITIALIZED(cuDeviceGet)
NOT_INITIALIZED(cuDeviceGetName)
NOT_INITIALIZED(cuDeviceGetUuid_v2)
NOT_INITIALIZED(cuDeviceGetAttribute)
NOT_INITIALIZED(cuDeviceTotalMem_v2)
NOT_INITIALIZED(cuDevicePrimaryCtxSetFlags_v2)
NOT_INITIALIZED(cuDevicePrimaryCtxRetain)
NOT_INITIALIZED(cuDevicePrimaryCtxRelease_v2)
NOT_INITIALIZED(cuCtxSetCurrent)
NOT_INITIALIZED(cuModuleLoadData)
NOT_INITIALIZED(cuModuleGetFunction)
NOT_INITIALIZED(cuModuleUnload)
NOT_INITIALIZED(cuFuncGetAttribute)
NOT_INITIALIZED(cuStreamCreate)
NOT_INITIALIZED(cuStreamDestroy_v2)
NOT_INITIALIZED(cuStreamQuery)
NOT_INITIALIZED(cuStreamSynchronize)
NOT_INITIALIZED(cuStreamWriteValue32_v2)
NOT_INITIALIZED(cuStreamWriteValue64_v2)
NOT_INITIALIZED(cuStreamWaitValue32_v2)
NOT_INITIALIZED(cuStreamWaitValue64_v2)
NOT_INITIALIZED(cuLaunchKernel)
NOT_INITIALIZED(cuLaunchHostFunc)
NOT_INITIALIZED(cuMemcpyAsync)
NOT_INITIALIZED(cuMemsetD8_v2)
NOT_INITIALIZED(cuMemHostRegister_v2)
NOT_INITIALIZED(cuMemHostUnregister)
NOT_INITIALIZED(cuMemHostGetDevicePointer_v2)
NOT_INITIALIZED(cuMemGetAllocationGranularity)
NOT_INITIALIZED(cuMemAddressReserve)
NOT_INITIALIZED(cuMemAddressFree)
NOT_INITIALIZED(cuMemCreate)
NOT_INITIALIZED(cuMemRelease)
NOT_INITIALIZED(cuMemMap)
NOT_INITIALIZED(cuMemUnmap)
NOT_INITIALIZED(cuMemSetAccess)
