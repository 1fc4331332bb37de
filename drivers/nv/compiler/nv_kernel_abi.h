/*
 * The NVIDIA side of the hcq kernel ABI: the same macros as drivers/cpu/kernel_abi.h, so one kernel source builds
 * for the CPU device, AMD GPUs and NVIDIA GPUs. The NV compiler prepends this text to every kernel and compiles it
 * with NVRTC as CUDA C++ (-default-device: helper functions are device functions); it is embedded into the library
 * at build time, so this file is the only copy.
 *
 * HCQ_KERNEL(name, nbufs, nvals) defines `extern "C" __global__ void name(...)` taking ONE parameter: a block of
 * nbufs buffer addresses (8 bytes each) followed by nvals 32-bit values, exactly the kernarg layout of the other
 * backends. The launch writes it into the parameter space of constant bank 0 (EIATTR_PARAM_CBANK says where); the
 * body reads it in place (__grid_constant__: no copy to the stack). The block is 8-byte aligned and rounded up to
 * 8 bytes (at least 8 for a kernel without arguments).
 * It also defines `name_hcq_desc` in global memory: {magic, nbufs, nvals}. The cubin loader reads it (.nv.global.init)
 * to know the argument counts, as AMD's metadata gives them.
 * Workgroup ids come from blockIdx, local ids from threadIdx, the grid from gridDim / blockDim: the QMD carries the
 * launch shape, so there is no launch block after the arguments.
 * HCQ_FOR_EACH_THREAD runs its body once, in each GPU thread, with that thread's local ids.
 */
#ifndef HCQ_KERNEL_ABI_H
#define HCQ_KERNEL_ABI_H

/* NVRTC has no libc headers: the fixed-width types of the device ABI (LP64). */
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef unsigned long long uintptr_t;
typedef long long intptr_t;
typedef unsigned long size_t;

#define HCQ_KERNEL_MAGIC 0x4b514348u /* "HCQK" little endian */

typedef struct hcq_kernel_desc {
  uint32_t magic, nbufs, nvals;
} hcq_kernel_desc;

typedef struct hcq_dispatch {
  const unsigned char *kernargs; /* buffers (8-byte addresses), then 32-bit values: the kernel's parameter block */
  uint32_t nbufs, nvals;
} hcq_dispatch;

template <unsigned N>
struct alignas(8) hcq_kernargs {
  unsigned char bytes[N];
};
#define HCQ_KERNARG_BYTES_(nb, nv) ((nb) * 8u + (nv) * 4u > 0u ? (nb) * 8u + (nv) * 4u : 1u)

#define HCQ_KERNEL(name, nbufs, nvals)                                                                      \
  extern "C" __device__ const hcq_kernel_desc name##_hcq_desc = {HCQ_KERNEL_MAGIC, (nbufs), (nvals)};       \
  static __device__ __forceinline__ void name##_hcq_body(const hcq_dispatch *hcq_d);                        \
  extern "C" __global__ void name(const __grid_constant__ hcq_kernargs<HCQ_KERNARG_BYTES_(nbufs, nvals)> hcq_k) { \
    const hcq_dispatch d = {hcq_k.bytes, (nbufs), (nvals)};                                                 \
    name##_hcq_body(&d);                                                                                    \
  }                                                                                                         \
  static __device__ __forceinline__ void name##_hcq_body(const hcq_dispatch *hcq_d)

#define HCQ_BUF(T, i) ((T *)(uintptr_t)((const uint64_t *)hcq_d->kernargs)[i])
#define HCQ_VAL(i) (((const uint32_t *)(hcq_d->kernargs + 8u * hcq_d->nbufs))[i])

#define HCQ_GROUP_ID(d) ((uint32_t)((d) == 0 ? blockIdx.x : (d) == 1 ? blockIdx.y : blockIdx.z))
#define HCQ_NUM_GROUPS(d) ((uint32_t)((d) == 0 ? gridDim.x : (d) == 1 ? gridDim.y : gridDim.z))
#define HCQ_LOCAL_SIZE(d) ((uint32_t)((d) == 0 ? blockDim.x : (d) == 1 ? blockDim.y : blockDim.z))

/* Binds this thread's local ids; the body runs once (every thread of the block runs it). */
#define HCQ_FOR_EACH_THREAD(lx, ly, lz)                                                                 \
  for (uint32_t lz = threadIdx.z, ly = threadIdx.y, lx = threadIdx.x, hcq_once_ = 1; hcq_once_; hcq_once_ = 0)

#define HCQ_GLOBAL_ID(d, l) (HCQ_GROUP_ID(d) * HCQ_LOCAL_SIZE(d) + (l))

/* memcpy/memset and the math functions (sqrtf, expf, ...) are NVRTC builtins in device code. */

#endif /* HCQ_KERNEL_ABI_H */
