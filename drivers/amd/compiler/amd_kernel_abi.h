/*
 * The AMDGPU side of the hcq kernel ABI: the same macros as drivers/cpu/kernel_abi.h, so one kernel source builds
 * for the CPU device and for AMD GPUs. The AMD compiler prepends this text to every C kernel (it is embedded into
 * the library at build time, so this file is the only copy).
 *
 * HCQ_KERNEL(name, nbufs, nvals) emits `name` as an ordinary function plus `name_hcq_desc`; the compiler then turns
 * `name` into an amdgpu_kernel whose explicit arguments are nbufs global pointers followed by nvals 32-bit values,
 * so the kernarg segment and the code object's metadata say exactly what the body reads:
 *   kernarg segment = nbufs buffer addresses (8 bytes each), then nvals 32-bit values (then the launch block
 *   below, which the queue adds and the metadata does not describe).
 * The body reads them through the kernarg segment pointer. Workgroup ids come from the workgroup-id SGPRs. Right
 * after the explicit arguments (byte 8*nbufs + 4*nvals) the queue writes a launch block:
 *   uint32_t num_groups[3]; uint32_t local_size[3];
 * rather than using the dispatch packet's grid (work-items = groups * local): a queue patch can store a symbolic
 * group count or local size as is, but cannot multiply two of them. So kernels never read the dispatch pointer
 * (LLVM then does not enable it, and the kernarg pointer is the first user SGPR pair).
 * HCQ_FOR_EACH_THREAD runs its body once, in each GPU thread, with that thread's local ids.
 *
 * Math: the functions the AMDGPU backend lowers natively map to clang builtins; any other libm call is an
 * undefined symbol and fails the link with its name.
 */
#ifndef HCQ_KERNEL_ABI_H
#define HCQ_KERNEL_ABI_H

#include <stddef.h>
#include <stdint.h>

#define HCQ_KERNEL_MAGIC 0x4b514348u /* "HCQK" little endian */

#define HCQ_AS_CONSTANT __attribute__((address_space(4)))

typedef struct hcq_kernel_desc {
  uint32_t magic, nbufs, nvals;
} hcq_kernel_desc;

typedef struct hcq_dispatch {
  const HCQ_AS_CONSTANT unsigned char *kernargs; /* buffers (8-byte addresses), 32-bit values, launch block */
  uint32_t nbufs, nvals;
} hcq_dispatch;

#define HCQ_KERNEL(name, nbufs, nvals)                                                              \
  const hcq_kernel_desc name##_hcq_desc = {HCQ_KERNEL_MAGIC, (nbufs), (nvals)};                     \
  static inline __attribute__((always_inline)) void name##_hcq_body(const hcq_dispatch *hcq_d);     \
  void name(void) {                                                                                 \
    const hcq_dispatch d = {(const HCQ_AS_CONSTANT unsigned char *)__builtin_amdgcn_kernarg_segment_ptr(), \
                            (nbufs), (nvals)};                                                      \
    name##_hcq_body(&d);                                                                            \
  }                                                                                                 \
  static inline __attribute__((always_inline)) void name##_hcq_body(const hcq_dispatch *hcq_d)

#define HCQ_BUF(T, i) ((T *)(uintptr_t)((const HCQ_AS_CONSTANT uint64_t *)hcq_d->kernargs)[i])
#define HCQ_VAL(i) (((const HCQ_AS_CONSTANT uint32_t *)(hcq_d->kernargs + 8u * hcq_d->nbufs))[i])

static inline __attribute__((always_inline)) uint32_t hcq_group_id(uint32_t d) {
  return d == 0 ? __builtin_amdgcn_workgroup_id_x() : d == 1 ? __builtin_amdgcn_workgroup_id_y()
                                                             : __builtin_amdgcn_workgroup_id_z();
}
/* The launch block: num_groups[3], then local_size[3], after the explicit arguments. */
#define HCQ_LAUNCH_(i) \
  (((const HCQ_AS_CONSTANT uint32_t *)(hcq_d->kernargs + 8u * hcq_d->nbufs + 4u * hcq_d->nvals))[i])

#define HCQ_GROUP_ID(d) (hcq_group_id(d))
#define HCQ_NUM_GROUPS(d) (HCQ_LAUNCH_(d))
#define HCQ_LOCAL_SIZE(d) (HCQ_LAUNCH_(3u + (d)))

/* Binds this thread's local ids; the body runs once (every thread of the workgroup runs it). */
#define HCQ_FOR_EACH_THREAD(lx, ly, lz)                                                       \
  for (uint32_t lz = __builtin_amdgcn_workitem_id_z(), ly = __builtin_amdgcn_workitem_id_y(), \
                lx = __builtin_amdgcn_workitem_id_x(), hcq_once_ = 1;                        \
       hcq_once_; hcq_once_ = 0)

#define HCQ_GLOBAL_ID(d, l) (HCQ_GROUP_ID(d) * HCQ_LOCAL_SIZE(d) + (l))

#define memcpy __builtin_memcpy
#define memmove __builtin_memmove
#define memset __builtin_memset
#define sqrtf __builtin_sqrtf
#define sinf __builtin_sinf
#define cosf __builtin_cosf
#define expf __builtin_expf
#define exp2f __builtin_exp2f
#define logf __builtin_logf
#define log2f __builtin_log2f
#define log10f __builtin_log10f
#define fabsf __builtin_fabsf
#define floorf __builtin_floorf
#define ceilf __builtin_ceilf
#define truncf __builtin_truncf
#define roundf __builtin_roundf
#define rintf __builtin_rintf
#define fminf __builtin_fminf
#define fmaxf __builtin_fmaxf
#define sqrt __builtin_sqrt
#define fabs __builtin_fabs
#define floor __builtin_floor
#define ceil __builtin_ceil
#define trunc __builtin_trunc
#define round __builtin_round
#define rint __builtin_rint
#define fmin __builtin_fmin
#define fmax __builtin_fmax

#endif /* HCQ_KERNEL_ABI_H */
