/*
 * The hcq kernel ABI: how a kernel is written once and built for every device. Each kernel compiler prepends the
 * text of this file to the kernel source (it is embedded into the library at build time, so the installed header
 * and what the compilers use cannot drift apart), then `#line 1 "kernel.c"` so diagnostics point at the user's
 * lines. C++ code (loaders, the simulators' host twins, tests) includes it for hcq_kernel_desc, HCQ_KERNEL_MAGIC and
 * the host dispatch layout. docs/kernel-abi.md is the reference.
 *
 * A kernel is a function over one workgroup:
 *
 *   HCQ_KERNEL(add1, 2, 1) {                       // name, number of buffers, number of 32-bit values
 *     HCQ_FOR_EACH_THREAD(x, y, z) {                // binds this workgroup's local ids
 *       uint32_t i = HCQ_GLOBAL_ID(0, x);
 *       if (i < HCQ_VAL(0)) HCQ_BUF(float, 0)[i] = HCQ_BUF(float, 1)[i] + 1.0f;
 *     }
 *   }
 *
 * A kernel whose threads share memory and meet at barriers is written per thread instead (its body runs once for
 * every thread of the workgroup):
 *
 *   HCQ_THREAD_KERNEL(sum128, 2, 0) {               // 128 threads per workgroup
 *     HCQ_SHARED(float, s, 128);                    // workgroup-shared; declarations first
 *     uint32_t t = HCQ_LOCAL_ID(0);
 *     s[t] = HCQ_BUF(float, 1)[HCQ_GLOBAL_ID(0, t)];
 *     for (uint32_t k = 64; k > 0; k >>= 1) {
 *       HCQ_BARRIER();
 *       if (t < k) s[t] += s[t + k];
 *     }
 *     if (t == 0) HCQ_BUF(float, 0)[HCQ_GROUP_ID(0)] = s[0];
 *   }
 *
 * The file has one common part (the magic, the descriptor, the kernarg layout, the launch block and the macros a
 * kernel uses) and one section per target, picked by what the compiler predefines:
 *   host    the CPU device (C11 through clang), the simulators' host twins (the same source, built by the CPU
 *           compiler), and C++ on the host;
 *   AMDGPU  clang -target amdgcn-amd-amdhsa (__AMDGCN__), C11;
 *   NV      NVRTC (__CUDACC_RTC__, which also defines __CUDACC__), CUDA C++ with -default-device.
 * Names ending in an underscore are the sections' plumbing, not for kernels.
 */
#ifndef HCQ_KERNEL_ABI_H
#define HCQ_KERNEL_ABI_H

/* ================================================================ which target */
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define HCQ_TARGET_NV 1
#elif defined(__AMDGCN__)
#define HCQ_TARGET_AMDGPU 1
#else
#define HCQ_TARGET_HOST 1
#endif

#if defined(__CUDACC_RTC__)
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
#else
#include <stddef.h>
#include <stdint.h>
#endif

/* ================================================================ common to every target */

/* The first word of every kernel's descriptor: "HCQK" read as a little-endian 32-bit word. Loaders refuse a
 * descriptor without it, so a symbol that merely has the right name is never taken for a kernel. */
#define HCQ_KERNEL_MAGIC 0x4b514348u

/* HCQ_KERNEL(name, ...) emits `name_hcq_desc`, one of these: how many arguments the kernel takes, so a launch with
 * the wrong arguments is refused before it runs. */
typedef struct hcq_kernel_desc {
  uint32_t magic, nbufs, nvals;
} hcq_kernel_desc;

/* The kernarg layout, the same on every device: nbufs buffer addresses (8 bytes each, in the unified VA space),
 * then nvals 32-bit values. Offsets in bytes from the start of the arguments. */
#define HCQ_KERNARG_VALS_OFFSET(nbufs) (8u * (nbufs))
#define HCQ_KERNARG_BYTES(nbufs, nvals) (8u * (nbufs) + 4u * (nvals))

/* The launch block: where the device does not hand the kernel its launch shape in hardware (AMDGPU: the dispatch
 * packet gives work-items, not groups and local size, and a queue patch cannot multiply two symbolic values), the
 * queue writes it right after the arguments, at byte HCQ_KERNARG_BYTES(nbufs, nvals). */
typedef struct hcq_launch_block {
  uint32_t num_groups[3], local_size[3];
} hcq_launch_block;

/* What a kernel uses. Each target section defines the primitives behind them: the dispatch struct a body sees as
 * `hcq_d`, HCQ_DESC_LINKAGE_, HCQ_ENTRY_, HCQ_THREAD_ENTRY_, HCQ_KERNARG_SPACE_, HCQ_VALS_, HCQ_GROUP_ID,
 * HCQ_NUM_GROUPS, HCQ_LOCAL_SIZE, HCQ_LOCAL_ID, HCQ_SHARED, HCQ_BARRIER and HCQ_FOR_EACH_THREAD.
 *
 * HCQ_KERNEL's body describes the whole workgroup (HCQ_FOR_EACH_THREAD inside); HCQ_THREAD_KERNEL's body runs once
 * per thread, with HCQ_LOCAL_ID(d) its local id, HCQ_SHARED(T, name, n); declaring `name`, n elements of T shared by
 * the workgroup's threads (only at the top of the body, before other statements; several allowed; contents undefined
 * at start), and HCQ_BARRIER(); the workgroup barrier, with release/acquire ordering of shared and global memory.
 * Every thread of the workgroup must reach the same barriers: one that returns while others wait, or a barrier only
 * some reach, hangs or is undefined on a GPU; the host runs it as a kernel fault. HCQ_SHARED and HCQ_BARRIER belong
 * to HCQ_THREAD_KERNEL only (on the host they do not compile elsewhere). */
#define HCQ_KERNEL(name, nbufs, nvals)                                                             \
  HCQ_DESC_LINKAGE_ const hcq_kernel_desc name##_hcq_desc = {HCQ_KERNEL_MAGIC, (nbufs), (nvals)}; \
  HCQ_ENTRY_(name, nbufs, nvals)
#define HCQ_THREAD_KERNEL(name, nbufs, nvals)                                                      \
  HCQ_DESC_LINKAGE_ const hcq_kernel_desc name##_hcq_desc = {HCQ_KERNEL_MAGIC, (nbufs), (nvals)}; \
  HCQ_THREAD_ENTRY_(name, nbufs, nvals)
#define HCQ_BUF(T, i) ((T *)(uintptr_t)((const HCQ_KERNARG_SPACE_ uint64_t *)hcq_d->kernargs)[i])
#define HCQ_VAL(i) (HCQ_VALS_[i])
#define HCQ_GLOBAL_ID(d, l) (HCQ_GROUP_ID(d) * HCQ_LOCAL_SIZE(d) + (l))

/* ================================================================ host: CPU device, host twins, C++ */
#if defined(HCQ_TARGET_HOST)

/* The device calls the kernel once per workgroup, possibly from several threads at once for different
 * workgroups, with the launch shape in the dispatch (no launch block).
 *
 * An HCQ_THREAD_KERNEL's entry hands its per-thread body to run_threads_, which runs every thread of the workgroup
 * in its own context (own stack, own dispatch copy with local_id set): HCQ_BARRIER() suspends the thread until all
 * have arrived, then they resume one after another in a seeded pseudo-random order (thread_seed_, the knob
 * HCQ_SIM_THREAD_SEED), each running to its next barrier or its end without interruption; HCQ_SHARED takes its
 * array from a per-workgroup arena filled with 0xff bytes at the start of each workgroup, so a read that no barrier
 * orders after its write sees garbage instead of passing by luck. The runner is drivers/cpu/workgroup_threads.hpp;
 * the fields after num_groups/local_size are appended so that HCQ_KERNEL kernels built before them still work. */
typedef struct hcq_thread_ hcq_thread_; /* a thread's context in the runner (opaque) */
typedef struct hcq_dispatch {
  const unsigned char *kernargs; /* buffers (8-byte addresses), then 32-bit values */
  const uint32_t *vals;          /* = kernargs + HCQ_KERNARG_VALS_OFFSET(nbufs) */
  uint32_t group_id[3], num_groups[3], local_size[3];
  uint32_t local_id[3];  /* HCQ_THREAD_KERNEL: this thread's local id (0 elsewhere) */
  uint64_t thread_seed_; /* the order threads resume in after a barrier derives from it */
  void (*run_threads_)(const struct hcq_dispatch *, void (*)(const struct hcq_dispatch *, hcq_thread_ *));
  void (*barrier_)(hcq_thread_ *);
  void *(*shared_)(hcq_thread_ *, size_t bytes, size_t align); /* the thread's next HCQ_SHARED array */
} hcq_dispatch;

#define HCQ_DESC_LINKAGE_
#define HCQ_KERNARG_SPACE_
#define HCQ_ENTRY_(name, nbufs, nvals) void name(const hcq_dispatch *hcq_d)
#define HCQ_THREAD_ENTRY_(name, nbufs, nvals)                                      \
  static void name##_hcq_thread(const hcq_dispatch *hcq_d, hcq_thread_ *hcq_thr_); \
  void name(const hcq_dispatch *hcq_d) { hcq_d->run_threads_(hcq_d, name##_hcq_thread); } \
  static void name##_hcq_thread(const hcq_dispatch *hcq_d, hcq_thread_ *hcq_thr_)
#define HCQ_VALS_ (hcq_d->vals)
#define HCQ_GROUP_ID(d) (hcq_d->group_id[d])
#define HCQ_NUM_GROUPS(d) (hcq_d->num_groups[d])
#define HCQ_LOCAL_SIZE(d) (hcq_d->local_size[d])
#define HCQ_LOCAL_ID(d) (hcq_d->local_id[d])
#define HCQ_SHARED(T, name, n) \
  T *const name = (T *)hcq_d->shared_(hcq_thr_, sizeof(T) * (size_t)(n), __alignof__(T))
#define HCQ_BARRIER() hcq_d->barrier_(hcq_thr_)

/* Loops over the threads of this workgroup, x fastest, binding lx, ly, lz (uint32_t). */
#define HCQ_FOR_EACH_THREAD(lx, ly, lz)                         \
  for (uint32_t lz = 0; lz < hcq_d->local_size[2]; ++lz)        \
    for (uint32_t ly = 0; ly < hcq_d->local_size[1]; ++ly)      \
      for (uint32_t lx = 0; lx < hcq_d->local_size[0]; ++lx)

/* The environment is freestanding: no libc beyond memcpy/memset/memmove and these math functions, which the CPU
 * ELF loader resolves from the host (keep in sync with its whitelist, drivers/cpu/elf_loader.cpp); any other
 * external symbol is refused. Hidden from C++, which has its own declarations. Limits: 1024 threads per workgroup,
 * local dims <= 1024, global dims <= 2^31-1. */
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

/* The value of a bfloat16 or float16 storage word (exact), for the host's micro-kernels and matrix products. */
static inline float hcq_bf16_to_f32_(uint16_t h) {
  const uint32_t w = (uint32_t)h << 16;
  float f;
  __builtin_memcpy(&f, &w, sizeof f);
  return f;
}
static inline float hcq_f16_to_f32_(uint16_t h) {
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  float v = (float)m * 0x1p-24f; /* subnormals and zeros */
  if (e != 0) {
    const uint32_t u = e == 0x1fu ? 0x7f800000u | (m << 13) : ((e + 112u) << 23) | (m << 13);
    __builtin_memcpy(&v, &u, sizeof v);
  }
  return (h & 0x8000u) ? -v : v;
}

#endif /* HCQ_TARGET_HOST */

/* ================================================================ AMDGPU: clang -target amdgcn */
#if defined(HCQ_TARGET_AMDGPU)

/* The kernarg segment is in the constant address space. The AMD compiler turns `name` into an amdgpu_kernel whose
 * explicit arguments are nbufs global pointers then nvals 32-bit values, so the code object's metadata describes
 * exactly the common layout; the launch block follows, written by the queue and not described by the metadata.
 * Kernels never read the dispatch pointer (LLVM then does not enable it, and the kernarg pointer is the first user
 * SGPR pair); workgroup ids come from the workgroup-id SGPRs. */
#define HCQ_KERNARG_SPACE_ __attribute__((address_space(4)))

typedef struct hcq_dispatch {
  const HCQ_KERNARG_SPACE_ unsigned char *kernargs; /* arguments, then the launch block */
  uint32_t nbufs, nvals;
} hcq_dispatch;

#define HCQ_DESC_LINKAGE_
#define HCQ_ENTRY_(name, nbufs, nvals)                                                                     \
  static inline __attribute__((always_inline)) void name##_hcq_body(const hcq_dispatch *hcq_d);            \
  void name(void) {                                                                                        \
    const hcq_dispatch d = {(const HCQ_KERNARG_SPACE_ unsigned char *)__builtin_amdgcn_kernarg_segment_ptr(), \
                            (nbufs), (nvals)};                                                             \
    name##_hcq_body(&d);                                                                                   \
  }                                                                                                        \
  static inline __attribute__((always_inline)) void name##_hcq_body(const hcq_dispatch *hcq_d)

#define HCQ_VALS_ \
  ((const HCQ_KERNARG_SPACE_ uint32_t *)(hcq_d->kernargs + HCQ_KERNARG_VALS_OFFSET(hcq_d->nbufs)))
#define HCQ_LAUNCH_BLOCK_ \
  ((const HCQ_KERNARG_SPACE_ hcq_launch_block *)(hcq_d->kernargs + HCQ_KERNARG_BYTES(hcq_d->nbufs, hcq_d->nvals)))

static inline __attribute__((always_inline)) uint32_t hcq_group_id(uint32_t d) {
  return d == 0 ? __builtin_amdgcn_workgroup_id_x() : d == 1 ? __builtin_amdgcn_workgroup_id_y()
                                                             : __builtin_amdgcn_workgroup_id_z();
}
#define HCQ_GROUP_ID(d) (hcq_group_id(d))
#define HCQ_NUM_GROUPS(d) (HCQ_LAUNCH_BLOCK_->num_groups[d])
#define HCQ_LOCAL_SIZE(d) (HCQ_LAUNCH_BLOCK_->local_size[d])
#define HCQ_LOCAL_ID_X_ __builtin_amdgcn_workitem_id_x()
#define HCQ_LOCAL_ID_Y_ __builtin_amdgcn_workitem_id_y()
#define HCQ_LOCAL_ID_Z_ __builtin_amdgcn_workitem_id_z()
/* Shared memory is LDS (address space 3): a function-scope static array, left uninitialized (LDS cannot be
 * initialized; the compiler sums the kernel's arrays into the code object's group_segment_fixed_size, which the
 * dispatch passes on). The barrier: stores before it are released to the workgroup, S_BARRIER, then acquired. */
#define HCQ_SHARED(T, name, n) \
  static __attribute__((address_space(3), loader_uninitialized)) T name[(n)]
#define HCQ_BARRIER()                                      \
  do {                                                     \
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup"); \
    __builtin_amdgcn_s_barrier();                          \
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup"); \
  } while (0)

/* Math: what the AMDGPU backend lowers natively maps to clang builtins; any other libm call is an undefined symbol
 * and fails the link with its name. */
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

#endif /* HCQ_TARGET_AMDGPU */

/* ================================================================ NV: NVRTC, CUDA C++ */
#if defined(HCQ_TARGET_NV)

/* `name` is an extern "C" __global__ function of ONE parameter: the common kernarg layout as a block, which the
 * launch writes into the parameter space of constant bank 0 and the body reads in place (__grid_constant__: no copy
 * to the stack). The block is 8-byte aligned and at least 1 byte, so its size rounds up to 8 (8 for a kernel without
 * arguments). The descriptor lives in global memory (.nv.global.init), where the cubin loader reads it. The QMD
 * carries the launch shape: ids and sizes come from blockIdx, threadIdx, gridDim and blockDim (no launch block).
 * memcpy, memset and the math functions are NVRTC builtins in device code. */
typedef struct hcq_dispatch {
  const unsigned char *kernargs; /* the kernel's parameter block */
  uint32_t nbufs, nvals;
} hcq_dispatch;

template <unsigned N>
struct alignas(8) hcq_kernargs {
  unsigned char bytes[N];
};
#define HCQ_NV_PARAM_BYTES_(nb, nv) (HCQ_KERNARG_BYTES(nb, nv) > 0u ? HCQ_KERNARG_BYTES(nb, nv) : 1u)

#define HCQ_DESC_LINKAGE_ extern "C" __device__
#define HCQ_KERNARG_SPACE_
#define HCQ_ENTRY_(name, nbufs, nvals)                                                                              \
  static __device__ __forceinline__ void name##_hcq_body(const hcq_dispatch *hcq_d);                                \
  extern "C" __global__ void name(const __grid_constant__ hcq_kernargs<HCQ_NV_PARAM_BYTES_(nbufs, nvals)> hcq_k) { \
    const hcq_dispatch d = {hcq_k.bytes, (nbufs), (nvals)};                                                         \
    name##_hcq_body(&d);                                                                                            \
  }                                                                                                                 \
  static __device__ __forceinline__ void name##_hcq_body(const hcq_dispatch *hcq_d)

#define HCQ_VALS_ ((const uint32_t *)(hcq_d->kernargs + HCQ_KERNARG_VALS_OFFSET(hcq_d->nbufs)))
#define HCQ_GROUP_ID(d) ((uint32_t)((d) == 0 ? blockIdx.x : (d) == 1 ? blockIdx.y : blockIdx.z))
#define HCQ_NUM_GROUPS(d) ((uint32_t)((d) == 0 ? gridDim.x : (d) == 1 ? gridDim.y : gridDim.z))
#define HCQ_LOCAL_SIZE(d) ((uint32_t)((d) == 0 ? blockDim.x : (d) == 1 ? blockDim.y : blockDim.z))
#define HCQ_LOCAL_ID_X_ threadIdx.x
#define HCQ_LOCAL_ID_Y_ threadIdx.y
#define HCQ_LOCAL_ID_Z_ threadIdx.z
/* Static shared memory: the cubin's .nv.shared.<kernel> section, whose size the launch puts in the QMD. */
#define HCQ_SHARED(T, name, n) __shared__ T name[(n)]
#define HCQ_BARRIER() __syncthreads()

#endif /* HCQ_TARGET_NV */

/* ================================================================ 16-byte vectors, every target
 * hcq_f32x4 (4 floats) and hcq_u16x8 (8 16-bit words: float16 and bfloat16 storage) are 16 bytes, 16-byte aligned,
 * with elements read and written as v[i]. A load or store through a pointer to one is one 16-byte access (AMDGPU:
 * flat_load_b128 on gfx1100, the buffers being generic pointers); its address must be a multiple of 16. clang: its
 * ext_vector_type; NVRTC: an aligned struct (CUDA's float4 has no v[i], and no 8 x 16-bit type); GCC (C++ on the
 * host including this header): its vector_size. */
#if defined(HCQ_TARGET_NV)
struct alignas(16) hcq_f32x4 {
  float e_[4];
  __device__ float &operator[](int i) { return e_[i]; }
  __device__ const float &operator[](int i) const { return e_[i]; }
};
struct alignas(16) hcq_u16x8 {
  uint16_t e_[8];
  __device__ uint16_t &operator[](int i) { return e_[i]; }
  __device__ const uint16_t &operator[](int i) const { return e_[i]; }
};
#elif defined(__clang__)
typedef float hcq_f32x4 __attribute__((ext_vector_type(4)));
typedef uint16_t hcq_u16x8 __attribute__((ext_vector_type(8)));
#else
typedef float hcq_f32x4 __attribute__((vector_size(16)));
typedef uint16_t hcq_u16x8 __attribute__((vector_size(16)));
#endif

/* ================================================================ both GPU targets */
#if defined(HCQ_TARGET_AMDGPU) || defined(HCQ_TARGET_NV)
/* A GPU runs the body once per thread already: a thread kernel is a kernel whose body reads its own local id. */
#define HCQ_THREAD_ENTRY_(name, nbufs, nvals) HCQ_ENTRY_(name, nbufs, nvals)
#define HCQ_LOCAL_ID(d) ((uint32_t)((d) == 0 ? HCQ_LOCAL_ID_X_ : (d) == 1 ? HCQ_LOCAL_ID_Y_ : HCQ_LOCAL_ID_Z_))
/* Every GPU thread runs the body once, with its own local ids bound. */
#define HCQ_FOR_EACH_THREAD(lx, ly, lz)                                                            \
  for (uint32_t lz = HCQ_LOCAL_ID_Z_, ly = HCQ_LOCAL_ID_Y_, lx = HCQ_LOCAL_ID_X_, hcq_once_ = 1; \
       hcq_once_; hcq_once_ = 0)
#endif

/* ================================================================ bf16 matmul micro-kernels (host, x86-64, C)
 * What a generated bf16 matmul kernel (fp32 accumulation) calls on the CPU device, one function per path of
 * hcq::Bf16MatmulPath (hcq/cpu_features.hpp), all of the same signature so that the code generator picks one by the
 * device's features (DeviceInfo::cpu_isa, the framework's TargetFacts::cpu_isa):
 *
 *   void hcq_bf16_mm16_<path>(float *c, uint32_t ldc, const uint16_t *a, uint32_t lda,
 *                             const uint16_t *bp, uint32_t ldbp, uint32_t k);
 *
 *   C[16 x 16] += A[16 x k] . B[k x 16]: c row i at c + i*ldc (floats), a row i at a + i*lda (bf16 bits), B given
 *   VNNI-packed by hcq_bf16_pack_vnni (k/2 rows of 32 bf16, row r at bp + r*ldbp: B[2r][j] at 2j, B[2r+1][j] at
 *   2j+1), k a multiple of 32 (pad A's columns and B's rows with zeros). Products and sums in fp32 (bf16 x bf16 is
 *   exact in fp32); the order of the sums differs by path, and amx / avx512_bf16 flush fp32 denormals to zero.
 *
 * Paths: amx (tdpbf16ps on tiles: between hcq_amx_begin() and hcq_amx_end() on the calling thread), avx512_bf16
 * (vdpbf16ps), avx512 and avx2 (FMAs on bf16 widened to fp32), scalar (plain C). Each function carries its
 * instructions' target attribute, so every kernel compiles on any x86-64 host whatever -march=native enables; a path
 * whose features the device does not report must never be called (SIGILL, or for AMX without Linux's permission a
 * SIGILL at the first tile load). The tile state is the OS thread's: an HCQ_THREAD_KERNEL's threads share it, so
 * tiles must not be live across HCQ_BARRIER. The AMX intrinsics (_tile_loadconfig, _tile_loadd, _tile_dpbf16ps,
 * _tile_stored, _tile_release, _mm512_dpbf16_ps) are the clang builtins below: <immintrin.h> would be parsed for every
 * kernel this file is prepended to (docs/kernel-abi.md gives the cost). */
#if defined(HCQ_TARGET_HOST) && defined(__x86_64__) && defined(__clang__) && !defined(__cplusplus)

typedef float hcq_f32x16_ __attribute__((vector_size(64)));
typedef uint32_t hcq_u32x16_ __attribute__((vector_size(64)));
typedef __bf16 hcq_bf16x32_ __attribute__((vector_size(64)));
typedef float hcq_f32x8_ __attribute__((vector_size(32)));
typedef uint32_t hcq_u32x8_ __attribute__((vector_size(32)));

/* B[k x n] (row r at b + r*ldb) into the VNNI layout: bp row r (r < k/2, at bp + r*ldbp, ldbp >= 2n) holds
 * B[2r][j] at 2j and B[2r+1][j] at 2j+1; k even. */
static inline void hcq_bf16_pack_vnni(uint16_t *bp, uint32_t ldbp, const uint16_t *b, uint32_t ldb, uint32_t k,
                                      uint32_t n) {
  for (uint32_t r = 0; r < k / 2; ++r)
    for (uint32_t j = 0; j < n; ++j) {
      bp[(size_t)r * ldbp + 2 * j] = b[(size_t)(2 * r) * ldb + j];
      bp[(size_t)r * ldbp + 2 * j + 1] = b[(size_t)(2 * r + 1) * ldb + j];
    }
}

/* The tile palette: palette 1, all eight tiles 16 rows x 64 bytes (16 fp32 of C, 32 bf16 of A, or 16 pairs of packed
 * B). hcq_bf16_mm16_amx uses tiles 0..2 as C, A, B and 3..5 for its second accumulator chain; hcq_bf16_mm32_amx
 * uses 0..3 as C, 4..5 as A and 6..7 as B. The 64-byte layout is the SDM's (LDTILECFG): palette, start row, 14
 * reserved bytes, colsb[16], rows[16]. */
typedef struct hcq_amx_config_ {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} hcq_amx_config_;

static inline __attribute__((target("amx-tile"))) void hcq_amx_begin(void) {
  hcq_amx_config_ cfg;
  __builtin_memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  __builtin_ia32_tile_loadconfig(&cfg);
}

/* Returns the tiles to their initial state, so the thread's context switches save no tile data again. */
static inline __attribute__((target("amx-tile"))) void hcq_amx_end(void) { __builtin_ia32_tilerelease(); }

/* Two accumulators (tiles 0 and 3) over alternate 32-deep steps, so that one tdpbf16ps need not wait for the
 * previous one's result; summed through memory at the end. */
static inline __attribute__((target("amx-tile,amx-bf16"))) void hcq_bf16_mm16_amx(float *c, uint32_t ldc,
                                                                                  const uint16_t *a, uint32_t lda,
                                                                                  const uint16_t *bp, uint32_t ldbp,
                                                                                  uint32_t k) {
  float odd[16 * 16];
  __builtin_ia32_tileloadd64(0, c, (size_t)ldc * 4);
  __builtin_ia32_tilezero(3);
  uint32_t s = 0;
  for (; s + 64 <= k; s += 64) {
    __builtin_ia32_tileloadd64(1, a + s, (size_t)lda * 2);
    __builtin_ia32_tileloadd64(2, bp + (size_t)(s / 2) * ldbp, (size_t)ldbp * 2);
    __builtin_ia32_tileloadd64(4, a + s + 32, (size_t)lda * 2);
    __builtin_ia32_tileloadd64(5, bp + (size_t)(s / 2 + 16) * ldbp, (size_t)ldbp * 2);
    __builtin_ia32_tdpbf16ps(0, 1, 2);
    __builtin_ia32_tdpbf16ps(3, 4, 5);
  }
  if (s < k) {
    __builtin_ia32_tileloadd64(1, a + s, (size_t)lda * 2);
    __builtin_ia32_tileloadd64(2, bp + (size_t)(s / 2) * ldbp, (size_t)ldbp * 2);
    __builtin_ia32_tdpbf16ps(0, 1, 2);
  }
  __builtin_ia32_tilestored64(0, c, (size_t)ldc * 4);
  __builtin_ia32_tilestored64(3, odd, 64);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) c[(size_t)i * ldc + j] += odd[i * 16 + j];
}

/* C[32 x 32] += A[32 x k] . B[k x 32] (B's 32 columns packed side by side: ldbp >= 64): four 16 x 16 accumulators
 * (tiles 0-3), and per 32-deep step A's two row halves (tiles 4, 5) and B's two column halves (6, 7) loaded once each
 * and used twice, where hcq_bf16_mm16_amx loads one A and one B per tdpbf16ps. AMX only; the code generator calls it
 * on 32-row, 32-column blocks. */
static inline __attribute__((target("amx-tile,amx-bf16"))) void hcq_bf16_mm32_amx(float *c, uint32_t ldc,
                                                                                  const uint16_t *a, uint32_t lda,
                                                                                  const uint16_t *bp, uint32_t ldbp,
                                                                                  uint32_t k) {
  const size_t sc = (size_t)ldc * 4, sa = (size_t)lda * 2, sb = (size_t)ldbp * 2;
  float *c1 = c + (size_t)16 * ldc;
  const uint16_t *a1 = a + (size_t)16 * lda;
  __builtin_ia32_tileloadd64(0, c, sc);
  __builtin_ia32_tileloadd64(1, c + 16, sc);
  __builtin_ia32_tileloadd64(2, c1, sc);
  __builtin_ia32_tileloadd64(3, c1 + 16, sc);
  for (uint32_t s = 0; s < k; s += 32) {
    const uint16_t *b = bp + (size_t)(s / 2) * ldbp;
    __builtin_ia32_tileloadd64(4, a + s, sa);
    __builtin_ia32_tileloadd64(6, b, sb);
    __builtin_ia32_tdpbf16ps(0, 4, 6);
    __builtin_ia32_tileloadd64(7, b + 32, sb);
    __builtin_ia32_tdpbf16ps(1, 4, 7);
    __builtin_ia32_tileloadd64(5, a1 + s, sa);
    __builtin_ia32_tdpbf16ps(2, 5, 6);
    __builtin_ia32_tdpbf16ps(3, 5, 7);
  }
  __builtin_ia32_tilestored64(0, c, sc);
  __builtin_ia32_tilestored64(1, c + 16, sc);
  __builtin_ia32_tilestored64(2, c1, sc);
  __builtin_ia32_tilestored64(3, c1 + 16, sc);
}

/* One zmm accumulator per row of C; each step broadcasts A's pair (a[i][2r], a[i][2r+1]) against packed row r. */
static inline __attribute__((target("avx512f,avx512bf16"))) void hcq_bf16_mm16_avx512_bf16(
    float *c, uint32_t ldc, const uint16_t *a, uint32_t lda, const uint16_t *bp, uint32_t ldbp, uint32_t k) {
  hcq_f32x16_ acc[16];
  for (int i = 0; i < 16; ++i) __builtin_memcpy(&acc[i], c + (size_t)i * ldc, 64);
  for (uint32_t r = 0; r < k / 2; ++r) {
    hcq_bf16x32_ b;
    __builtin_memcpy(&b, bp + (size_t)r * ldbp, 64);
    for (int i = 0; i < 16; ++i) {
      uint32_t pair;
      __builtin_memcpy(&pair, a + (size_t)i * lda + 2 * r, 4);
      const hcq_u32x16_ splat = (hcq_u32x16_){0} + pair;
      acc[i] = __builtin_ia32_dpbf16ps_512(acc[i], (hcq_bf16x32_)splat, b);
    }
  }
  for (int i = 0; i < 16; ++i) __builtin_memcpy(c + (size_t)i * ldc, &acc[i], 64);
}

/* A packed row's 32-bit word j holds B[2r][j] in its low half and B[2r+1][j] in its high half: shifting the low
 * half up, or masking the low half off, gives each as fp32. */
static inline __attribute__((target("avx512f"))) void hcq_bf16_mm16_avx512(float *c, uint32_t ldc, const uint16_t *a,
                                                                          uint32_t lda, const uint16_t *bp,
                                                                          uint32_t ldbp, uint32_t k) {
  hcq_f32x16_ acc[16];
  for (int i = 0; i < 16; ++i) __builtin_memcpy(&acc[i], c + (size_t)i * ldc, 64);
  for (uint32_t r = 0; r < k / 2; ++r) {
    hcq_u32x16_ w;
    __builtin_memcpy(&w, bp + (size_t)r * ldbp, 64);
    const hcq_f32x16_ b0 = (hcq_f32x16_)(w << 16), b1 = (hcq_f32x16_)(w & 0xffff0000u);
    for (int i = 0; i < 16; ++i) {
      const uint16_t *ar = a + (size_t)i * lda + 2 * r;
      acc[i] += hcq_bf16_to_f32_(ar[0]) * b0;
      acc[i] += hcq_bf16_to_f32_(ar[1]) * b1;
    }
  }
  for (int i = 0; i < 16; ++i) __builtin_memcpy(c + (size_t)i * ldc, &acc[i], 64);
}

/* The same with 8-wide vectors: C in four 8 x 8 quarters, eight ymm accumulators each. */
static inline __attribute__((target("avx2,fma"))) void hcq_bf16_mm16_avx2(float *c, uint32_t ldc, const uint16_t *a,
                                                                         uint32_t lda, const uint16_t *bp,
                                                                         uint32_t ldbp, uint32_t k) {
  for (int i0 = 0; i0 < 16; i0 += 8)
    for (int j0 = 0; j0 < 16; j0 += 8) {
      hcq_f32x8_ acc[8];
      for (int i = 0; i < 8; ++i) __builtin_memcpy(&acc[i], c + (size_t)(i0 + i) * ldc + j0, 32);
      for (uint32_t r = 0; r < k / 2; ++r) {
        hcq_u32x8_ w;
        __builtin_memcpy(&w, bp + (size_t)r * ldbp + 2 * j0, 32);
        const hcq_f32x8_ b0 = (hcq_f32x8_)(w << 16), b1 = (hcq_f32x8_)(w & 0xffff0000u);
        for (int i = 0; i < 8; ++i) {
          const uint16_t *ar = a + (size_t)(i0 + i) * lda + 2 * r;
          acc[i] += hcq_bf16_to_f32_(ar[0]) * b0;
          acc[i] += hcq_bf16_to_f32_(ar[1]) * b1;
        }
      }
      for (int i = 0; i < 8; ++i) __builtin_memcpy(c + (size_t)(i0 + i) * ldc + j0, &acc[i], 32);
    }
}

static inline void hcq_bf16_mm16_scalar(float *c, uint32_t ldc, const uint16_t *a, uint32_t lda, const uint16_t *bp,
                                        uint32_t ldbp, uint32_t k) {
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      float s = c[(size_t)i * ldc + j];
      for (uint32_t kk = 0; kk < k; ++kk)
        s += hcq_bf16_to_f32_(a[(size_t)i * lda + kk]) * hcq_bf16_to_f32_(bp[(size_t)(kk / 2) * ldbp + 2 * j + kk % 2]);
      c[(size_t)i * ldc + j] = s;
    }
}

#endif /* bf16 matmul micro-kernels */

/* ================================================================ matrix instructions (GPUs, and their host twins)
 * A 16 x 16 x 16 product of float16 or bfloat16 operands into float32 sums, made by one wave at once on the GPU's
 * matrix unit (hcq::MatrixUnit, hcq/matrix_unit.hpp; DeviceInfo::matrix_unit says which a GPU has):
 *
 *   HCQ_MMA16_<UNIT>_<TYPE>(acc, sa, ia, lda, sb, ib, ldb, lane);   UNIT: WMMA_GFX11, WMMA_GFX12, MFMA_CDNA3,
 *                                                                   MMA_SM80; TYPE: F16, BF16
 *
 *   acc[e] += sum over k < 16 of A[m][k] * B[n][k], for e < HCQ_MMA16_<UNIT>_SUMS, with (m, n) =
 *   (HCQ_MMA16_<UNIT>_ROW(lane, e), HCQ_MMA16_<UNIT>_COL(lane, e)): acc is the lane's float[SUMS] share of the 256
 *   sums, in the instruction's own layout, which a kernel's epilogue must follow. Both operands are 16 x 16 tiles of
 *   16-bit storage words in shared memory with k contiguous: A's row m at sa[ia + m * lda], B's row n (column n of
 *   the right-hand operand, so B is given transposed) at sb[ib + n * ldb]; ia, ib, lda and ldb even. lane is the
 *   lane within the wave of HCQ_MMA16_<UNIT>_LANES (the device's wave size), HCQ_LOCAL_ID(0) % LANES in a
 *   one-dimensional workgroup (the waves are consecutive runs of LANES threads).
 *
 * Every lane of the wave makes the call together, with the same tile arguments: the instruction runs once for the
 * whole wave (convergent code: not under a branch that splits the wave). The layouts are the vendors' (lane l, g = l
 * / 16 its group of 16, element or register r):
 *   WMMA_GFX11  V_WMMA_F32_16X16X16_F16 / _BF16 in wave32 (AMD's RDNA3 ISA guide, "Wave Matrix Multiply
 *               Accumulate"): A row l % 16, k = r (16 of them; lanes 16-31 repeat 0-15), B column l % 16 likewise;
 *               8 sums: column l % 16, rows 2e + g.
 *   WMMA_GFX12  the same instructions on GC 12 (AMD's RDNA4 ISA guide): A row l % 16, k = 8 (r / 4) + 4 g + r % 4
 *               for r < 8, B column l % 16 likewise; 8 sums: column l % 16, rows 8 g + e.
 *   MFMA_CDNA3  V_MFMA_F32_16X16X16_F16 / _BF16 in wave64 (AMD's CDNA3 ISA guide, "Matrix Arithmetic
 *               Instructions"): A row l % 16, k = 4 g + r for r < 4, B column l % 16 likewise; 4 sums: column l %
 *               16, rows 4 g + e.
 *   MMA_SM80    two PTX mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.f32 (sm_80 on; PTX ISA, "Matrix
 *               fragments for mma.m16n8k16"), one per 8 columns. With q = l / 4 and t = l % 4, a lane holds rows q
 *               and q + 8 and columns 2t and 2t + 1 of each: e = 0..3 the first 8 columns ((q, 2t), (q, 2t + 1),
 *               (q + 8, 2t), (q + 8, 2t + 1)), e = 4..7 the same of columns 8 to 15.
 * On the host (the simulated GPUs' twins) each lane computes its own sums from shared memory in that layout, so a
 * kernel that reads its sums elsewhere, stages its operands in another layout or passes another lane is as wrong
 * there as on the GPU. */
#define HCQ_MMA16_WMMA_GFX11_LANES 32
#define HCQ_MMA16_WMMA_GFX11_SUMS 8
#define HCQ_MMA16_WMMA_GFX11_ROW(lane, e) (2 * (e) + (lane) / 16)
#define HCQ_MMA16_WMMA_GFX11_COL(lane, e) ((lane) % 16)
#define HCQ_MMA16_WMMA_GFX12_LANES 32
#define HCQ_MMA16_WMMA_GFX12_SUMS 8
#define HCQ_MMA16_WMMA_GFX12_ROW(lane, e) (8 * ((lane) / 16) + (e))
#define HCQ_MMA16_WMMA_GFX12_COL(lane, e) ((lane) % 16)
#define HCQ_MMA16_MFMA_CDNA3_LANES 64
#define HCQ_MMA16_MFMA_CDNA3_SUMS 4
#define HCQ_MMA16_MFMA_CDNA3_ROW(lane, e) (4 * ((lane) / 16) + (e))
#define HCQ_MMA16_MFMA_CDNA3_COL(lane, e) ((lane) % 16)
#define HCQ_MMA16_MMA_SM80_LANES 32
#define HCQ_MMA16_MMA_SM80_SUMS 8
#define HCQ_MMA16_MMA_SM80_ROW(lane, e) ((lane) / 4 + 8 * (((e) / 2) % 2))
#define HCQ_MMA16_MMA_SM80_COL(lane, e) (8 * ((e) / 4) + 2 * ((lane) % 4) + (e) % 2)

#if defined(HCQ_TARGET_HOST)
#define HCQ_MMA16_HOST_(UNIT, VALUE, acc, sa, ia, lda, sb, ib, ldb, lane)                                           \
  do {                                                                                                           \
    for (int e_ = 0; e_ < HCQ_MMA16_##UNIT##_SUMS; ++e_) {                                                       \
      const int64_t m_ = HCQ_MMA16_##UNIT##_ROW(lane, e_), n_ = HCQ_MMA16_##UNIT##_COL(lane, e_);                 \
      float s_ = 0.0f;                                                                                           \
      for (int k_ = 0; k_ < 16; ++k_)                                                                            \
        s_ += VALUE((sa)[(ia) + m_ * (lda) + k_]) * VALUE((sb)[(ib) + n_ * (ldb) + k_]);                         \
      (acc)[e_] += s_;                                                                                           \
    }                                                                                                            \
  } while (0)
#define HCQ_MMA16_WMMA_GFX11_F16(...) HCQ_MMA16_HOST_(WMMA_GFX11, hcq_f16_to_f32_, __VA_ARGS__)
#define HCQ_MMA16_WMMA_GFX11_BF16(...) HCQ_MMA16_HOST_(WMMA_GFX11, hcq_bf16_to_f32_, __VA_ARGS__)
#define HCQ_MMA16_WMMA_GFX12_F16(...) HCQ_MMA16_HOST_(WMMA_GFX12, hcq_f16_to_f32_, __VA_ARGS__)
#define HCQ_MMA16_WMMA_GFX12_BF16(...) HCQ_MMA16_HOST_(WMMA_GFX12, hcq_bf16_to_f32_, __VA_ARGS__)
#define HCQ_MMA16_MFMA_CDNA3_F16(...) HCQ_MMA16_HOST_(MFMA_CDNA3, hcq_f16_to_f32_, __VA_ARGS__)
#define HCQ_MMA16_MFMA_CDNA3_BF16(...) HCQ_MMA16_HOST_(MFMA_CDNA3, hcq_bf16_to_f32_, __VA_ARGS__)
#define HCQ_MMA16_MMA_SM80_F16(...) HCQ_MMA16_HOST_(MMA_SM80, hcq_f16_to_f32_, __VA_ARGS__)
#define HCQ_MMA16_MMA_SM80_BF16(...) HCQ_MMA16_HOST_(MMA_SM80, hcq_bf16_to_f32_, __VA_ARGS__)
#endif

/* AMD: each lane gathers its N operand words of A and of B (k at KOF(lane, r)) into vectors, calls the builtin and
 * writes the sums back. float16 goes in as the bits of _Float16 (a vector cast between equal sizes is a bitcast),
 * bfloat16 as shorts. Only the family that has the instruction defines the macros: a kernel rendered for one fails to
 * compile on another, naming the macro. */
#if defined(HCQ_TARGET_AMDGPU)
typedef short hcq_amd_i16x4_ __attribute__((ext_vector_type(4)));
typedef short hcq_amd_i16x8_ __attribute__((ext_vector_type(8)));
typedef short hcq_amd_i16x16_ __attribute__((ext_vector_type(16)));
typedef _Float16 hcq_amd_f16x4_ __attribute__((ext_vector_type(4)));
typedef _Float16 hcq_amd_f16x8_ __attribute__((ext_vector_type(8)));
typedef _Float16 hcq_amd_f16x16_ __attribute__((ext_vector_type(16)));
typedef float hcq_amd_f32x4_ __attribute__((ext_vector_type(4)));
typedef float hcq_amd_f32x8_ __attribute__((ext_vector_type(8)));
/* N operand words a lane, SUMS sums, k of register r at KOF(lane, r), the builtin, and the operands' type (f16 or
 * i16: bfloat16's bits). */
#define HCQ_AMD_MMA_(N, SUMS, KOF, CALL, TYPE, acc, sa, ia, lda, sb, ib, ldb, lane) \
  do {                                                                            \
    hcq_amd_i16x##N##_ a_, b_;                                                    \
    hcq_amd_f32x##SUMS##_ c_;                                                     \
    for (int r_ = 0; r_ < (N); ++r_) {                                            \
      a_[r_] = (short)(sa)[(ia) + ((lane) % 16) * (lda) + KOF(lane, r_)];         \
      b_[r_] = (short)(sb)[(ib) + ((lane) % 16) * (ldb) + KOF(lane, r_)];         \
    }                                                                             \
    for (int e_ = 0; e_ < (SUMS); ++e_) c_[e_] = (acc)[e_];                       \
    c_ = CALL((hcq_amd_##TYPE##x##N##_)a_, (hcq_amd_##TYPE##x##N##_)b_, c_);      \
    for (int e_ = 0; e_ < (SUMS); ++e_) (acc)[e_] = c_[e_];                       \
  } while (0)
#endif
#if defined(HCQ_TARGET_AMDGPU) && defined(__GFX11__)
#define HCQ_WMMA_GFX11_K_(lane, r) (r)
#define HCQ_MMA16_WMMA_GFX11_F16(...) \
  HCQ_AMD_MMA_(16, 8, HCQ_WMMA_GFX11_K_, __builtin_amdgcn_wmma_f32_16x16x16_f16_w32, f16, __VA_ARGS__)
#define HCQ_MMA16_WMMA_GFX11_BF16(...) \
  HCQ_AMD_MMA_(16, 8, HCQ_WMMA_GFX11_K_, __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32, i16, __VA_ARGS__)
#endif
#if defined(HCQ_TARGET_AMDGPU) && defined(__GFX12__)
#define HCQ_WMMA_GFX12_K_(lane, r) (8 * ((r) / 4) + 4 * ((lane) / 16) + (r) % 4)
#define HCQ_MMA16_WMMA_GFX12_F16(...)                                                                            \
  HCQ_AMD_MMA_(8, 8, HCQ_WMMA_GFX12_K_, __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12, f16, \
               __VA_ARGS__)
#define HCQ_MMA16_WMMA_GFX12_BF16(...)                                                                            \
  HCQ_AMD_MMA_(8, 8, HCQ_WMMA_GFX12_K_, __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12, i16, \
               __VA_ARGS__)
#endif
#if defined(HCQ_TARGET_AMDGPU) && (defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || \
                                   defined(__gfx942__) || defined(__gfx950__))
/* MFMA's last three operands (CBSZ, ABID, BLGP: broadcasts between blocks) stay 0. */
#define HCQ_MFMA_CDNA3_K_(lane, r) (4 * ((lane) / 16) + (r))
#define HCQ_MFMA_F16_(a, b, c) __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0)
#define HCQ_MFMA_BF16_(a, b, c) __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, 0, 0, 0)
#define HCQ_MMA16_MFMA_CDNA3_F16(...) HCQ_AMD_MMA_(4, 4, HCQ_MFMA_CDNA3_K_, HCQ_MFMA_F16_, f16, __VA_ARGS__)
#define HCQ_MMA16_MFMA_CDNA3_BF16(...) HCQ_AMD_MMA_(4, 4, HCQ_MFMA_CDNA3_K_, HCQ_MFMA_BF16_, i16, __VA_ARGS__)
#endif

/* sm_80 on (NVRTC compiles device code with __CUDA_ARCH__ set). A register holds two consecutive k of a row: the
 * lower k in its low half. */
#if defined(HCQ_TARGET_NV) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define HCQ_MMA_PAIR_(s, at) ((uint32_t)(s)[at] | ((uint32_t)(s)[(at) + 1] << 16))
#define HCQ_MMA_SM80_(TYPE, acc, sa, ia, lda, sb, ib, ldb, lane)                                                   \
  do {                                                                                                          \
    const int64_t g_ = (lane) / 4, t_ = (lane) % 4;                                                            \
    const uint32_t a0_ = HCQ_MMA_PAIR_(sa, (ia) + g_ * (lda) + 2 * t_),                                         \
                   a1_ = HCQ_MMA_PAIR_(sa, (ia) + (g_ + 8) * (lda) + 2 * t_),                                   \
                   a2_ = HCQ_MMA_PAIR_(sa, (ia) + g_ * (lda) + 2 * t_ + 8),                                     \
                   a3_ = HCQ_MMA_PAIR_(sa, (ia) + (g_ + 8) * (lda) + 2 * t_ + 8);                               \
    for (int h_ = 0; h_ < 2; ++h_) {                                                                            \
      const int64_t n_ = 8 * h_ + g_;                                                                           \
      const uint32_t b0_ = HCQ_MMA_PAIR_(sb, (ib) + n_ * (ldb) + 2 * t_),                                       \
                     b1_ = HCQ_MMA_PAIR_(sb, (ib) + n_ * (ldb) + 2 * t_ + 8);                                   \
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE                                       \
                   ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"                       \
                   : "+f"((acc)[4 * h_]), "+f"((acc)[4 * h_ + 1]), "+f"((acc)[4 * h_ + 2]), "+f"((acc)[4 * h_ + 3]) \
                   : "r"(a0_), "r"(a1_), "r"(a2_), "r"(a3_), "r"(b0_), "r"(b1_));                               \
    }                                                                                                           \
  } while (0)
#define HCQ_MMA16_MMA_SM80_F16(...) HCQ_MMA_SM80_("f16", __VA_ARGS__)
#define HCQ_MMA16_MMA_SM80_BF16(...) HCQ_MMA_SM80_("bf16", __VA_ARGS__)
#endif

#endif /* HCQ_KERNEL_ABI_H */
