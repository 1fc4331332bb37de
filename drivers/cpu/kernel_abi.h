/*
 * The CPU device's kernel ABI. The CPU compiler prepends this text to every kernel source (it is embedded into the
 * library at build time, so this file is the only copy), and user code line numbers stay correct through #line.
 *
 * A kernel is a C11 function over one workgroup:
 *
 *   HCQ_KERNEL(add1, 2, 1) {                       // name, number of buffers, number of 32-bit values
 *     HCQ_FOR_EACH_THREAD(x, y, z) {                // the threads of this workgroup
 *       uint32_t i = HCQ_GLOBAL_ID(0, x);
 *       if (i < HCQ_VAL(0)) HCQ_BUF(float, 0)[i] = HCQ_BUF(float, 1)[i] + 1.0f;
 *     }
 *   }
 *
 * HCQ_KERNEL also emits `<name>_hcq_desc`, a descriptor the loader checks (magic) and reads to learn how many
 * arguments the kernel takes, so a launch with the wrong arguments is refused before it runs.
 *
 * Kernarg segment: nbufs buffer addresses (8 bytes each, unified VA), then nvals 32-bit values. The device calls the
 * kernel once per workgroup, possibly from several threads at once for different workgroups.
 *
 * The environment is freestanding: no libc beyond memcpy/memset/memmove and the math functions declared below
 * (the loader refuses any other external symbol). Limits: 1024 threads per workgroup, local dims <= 1024,
 * global dims <= 2^31-1.
 */
#ifndef HCQ_KERNEL_ABI_H
#define HCQ_KERNEL_ABI_H

#include <stddef.h>
#include <stdint.h>

#define HCQ_KERNEL_MAGIC 0x4b514348u /* "HCQK" little endian */

typedef struct hcq_dispatch {
  const unsigned char *kernargs; /* buffers (8-byte addresses), then 32-bit values */
  const uint32_t *vals;          /* = kernargs + 8 * nbufs */
  uint32_t group_id[3], num_groups[3], local_size[3];
} hcq_dispatch;

typedef struct hcq_kernel_desc {
  uint32_t magic, nbufs, nvals;
} hcq_kernel_desc;

#define HCQ_KERNEL(name, nbufs, nvals)                                               \
  const hcq_kernel_desc name##_hcq_desc = {HCQ_KERNEL_MAGIC, (nbufs), (nvals)};      \
  void name(const hcq_dispatch *hcq_d)

#define HCQ_BUF(T, i) ((T *)(uintptr_t)((const uint64_t *)hcq_d->kernargs)[i])
#define HCQ_VAL(i) (hcq_d->vals[i])
#define HCQ_GROUP_ID(d) (hcq_d->group_id[d])
#define HCQ_NUM_GROUPS(d) (hcq_d->num_groups[d])
#define HCQ_LOCAL_SIZE(d) (hcq_d->local_size[d])

/* Loops over the threads of this workgroup, x fastest, binding lx, ly, lz (uint32_t). */
#define HCQ_FOR_EACH_THREAD(lx, ly, lz)                         \
  for (uint32_t lz = 0; lz < hcq_d->local_size[2]; ++lz)        \
    for (uint32_t ly = 0; ly < hcq_d->local_size[1]; ++ly)      \
      for (uint32_t lx = 0; lx < hcq_d->local_size[0]; ++lx)

#define HCQ_GLOBAL_ID(d, l) (HCQ_GROUP_ID(d) * HCQ_LOCAL_SIZE(d) + (l))

/* What the loader resolves from the host (keep in sync with the whitelist in elf_loader.cpp). Hidden from C++,
 * which includes this file for the struct layouts and has its own declarations of these. */
#ifndef __cplusplus
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
float sqrtf(float), sinf(float), cosf(float), tanf(float), expf(float), exp2f(float), logf(float), log2f(float),
    log10f(float), powf(float, float), fabsf(float), floorf(float), ceilf(float), truncf(float), roundf(float),
    rintf(float), fmodf(float, float), fminf(float, float), fmaxf(float, float), tanhf(float), atanf(float),
    atan2f(float, float), asinf(float), acosf(float), sinhf(float), coshf(float), erff(float), expm1f(float),
    log1pf(float), cbrtf(float);
double sqrt(double), sin(double), cos(double), tan(double), exp(double), exp2(double), log(double), log2(double),
    log10(double), pow(double, double), fabs(double), floor(double), ceil(double), trunc(double), round(double),
    rint(double), fmod(double, double), fmin(double, double), fmax(double, double), tanh(double), atan(double),
    atan2(double, double);
#endif

#endif /* HCQ_KERNEL_ABI_H */
