/* A CUDA 12.8 libcuda whose one "GPU" is the host: memory, streams and stream memory operations behave as the driver
 * API documents them, over host memory and one worker thread per stream, so that the CUDA adapter's memory map,
 * copies, signal waits and writes run in CI. It has no kernels: it is a device without a PTX JIT
 * (cuModuleLoadData of PTX is CUDA_ERROR_JIT_COMPILER_NOT_FOUND, of anything else CUDA_ERROR_NO_BINARY_FOR_GPU),
 * so nothing can be launched; host functions can (cuLaunchHostFunc).
 *
 * What it refuses, as the real driver does: any call but cuDriverGetVersion and the error calls before cuInit
 * (CUDA_ERROR_NOT_INITIALIZED); calls that need a context on a thread without a current one
 * (CUDA_ERROR_INVALID_CONTEXT); sizes that are not multiples of the allocation granularity; mapping outside a
 * reservation or onto a mapped range; stream memory operations on memory the device cannot reach (neither
 * registered host memory nor mapped device memory with access set); registering host memory twice
 * (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) and unregistering what was not registered
 * (CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED). cuMemAddressReserve takes its address as a hint, as the real one does:
 * the range lands there only when that range of the address space is free.
 *
 * A stream memory operation that reaches memory no longer mapped when it runs is the GPU's MMU fault:
 * CUDA_ERROR_ILLEGAL_ADDRESS, sticky — the context's streams stop and every later call in it returns that error. The
 * context (and with it every registration and mapping) goes when its last reference is released; the next
 * cuDevicePrimaryCtxRetain starts a clean one. (The real driver documents that the process must end before CUDA
 * works again; a fresh context per test is this fake's simplification.) */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef int CUresult;
typedef uint64_t CUdeviceptr;
#define EXPORT __attribute__((visibility("default")))

enum {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kNotInitialized = 3,
  kInvalidDevice = 101,
  kNoBinaryForGpu = 209,
  kInvalidContext = 201,
  kJitCompilerNotFound = 221,
  kInvalidHandle = 400,
  kNotReady = 600,
  kHostMemoryAlreadyRegistered = 712,
  kHostMemoryNotRegistered = 713,
  kIllegalAddress = 700,
};

static const struct {
  CUresult code;
  const char* name;
  const char* text;
} kTexts[] = {
    {kSuccess, "CUDA_SUCCESS", "no error"},
    {kInvalidValue, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {kOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {kNotInitialized, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {kInvalidDevice, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {kInvalidContext, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {kNoBinaryForGpu, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {kJitCompilerNotFound, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "PTX JIT compiler library not found"},
    {kInvalidHandle, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {kNotReady, "CUDA_ERROR_NOT_READY", "device not ready"},
    {kIllegalAddress, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {kHostMemoryAlreadyRegistered, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {kHostMemoryNotRegistered, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
};

EXPORT CUresult cuGetErrorString(CUresult e, const char** s) {
  if (!s) return kInvalidValue;
  for (size_t i = 0; i < sizeof kTexts / sizeof kTexts[0]; ++i)
    if (kTexts[i].code == e) return *s = kTexts[i].text, kSuccess;
  *s = NULL;
  return kInvalidValue;
}

EXPORT CUresult cuGetErrorName(CUresult e, const char** s) {
  if (!s) return kInvalidValue;
  for (size_t i = 0; i < sizeof kTexts / sizeof kTexts[0]; ++i)
    if (kTexts[i].code == e) return *s = kTexts[i].name, kSuccess;
  *s = NULL;
  return kInvalidValue;
}

EXPORT CUresult cuDriverGetVersion(int* v) {
  if (!v) return kInvalidValue;
  *v = 12080;
  return kSuccess;
}

/* ---- initialisation and the context */

static atomic_int initialized;
static int primary_ctx_object; /* the primary context's handle is its address */
static _Thread_local void* current_ctx;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* guards the tables below */

#define NEED_INIT()                                         \
  do {                                                      \
    if (!atomic_load(&initialized)) return kNotInitialized; \
  } while (0)
static atomic_int sticky; /* the context's sticky error, 0 while there is none */
#define NEED_CTX()                                                  \
  do {                                                              \
    NEED_INIT();                                                    \
    if (current_ctx != &primary_ctx_object) return kInvalidContext; \
    const int sticky_error = atomic_load(&sticky);                  \
    if (sticky_error) return sticky_error;                          \
  } while (0)

EXPORT CUresult cuInit(unsigned flags) {
  if (flags != 0) return kInvalidValue;
  atomic_store(&initialized, 1);
  return kSuccess;
}

EXPORT CUresult cuDeviceGetCount(int* n) {
  NEED_INIT();
  if (!n) return kInvalidValue;
  *n = 1;
  return kSuccess;
}

EXPORT CUresult cuDeviceGet(int* d, int ordinal) {
  NEED_INIT();
  if (!d) return kInvalidValue;
  if (ordinal != 0) return kInvalidDevice;
  *d = 0;
  return kSuccess;
}

EXPORT CUresult cuDeviceGetName(char* name, int len, int d) {
  NEED_INIT();
  if (d != 0) return kInvalidDevice;
  if (!name || len <= 0) return kInvalidValue;
  const char* n = "hcq fake CUDA device (host memory, no kernels)";
  strncpy(name, n, (size_t)len - 1);
  name[len - 1] = 0;
  return kSuccess;
}

EXPORT CUresult cuDeviceGetUuid_v2(unsigned char* uuid, int d) {
  NEED_INIT();
  if (d != 0) return kInvalidDevice;
  if (!uuid) return kInvalidValue;
  for (int i = 0; i < 16; ++i) uuid[i] = (unsigned char)(0xc0 + i);
  return kSuccess;
}

/* CUdevice_attribute values, as an sm_90 GPU with 2 SMs would report them. */
static const struct {
  int attr, value;
} kAttributes[] = {
    {1, 1024}, {2, 1024}, {3, 1024}, {4, 64}, {5, 2147483647}, {6, 65535},   {7, 65535}, {8, 49152}, {10, 32},
    {16, 2},   {41, 1},   {75, 9},   {76, 0}, {91, 1},         {97, 232448}, {102, 1},   {122, 1},   {123, 1},
};

EXPORT CUresult cuDeviceGetAttribute(int* v, int attr, int d) {
  NEED_INIT();
  if (d != 0) return kInvalidDevice;
  if (!v) return kInvalidValue;
  for (size_t i = 0; i < sizeof kAttributes / sizeof kAttributes[0]; ++i)
    if (kAttributes[i].attr == attr) return *v = kAttributes[i].value, kSuccess;
  return kInvalidValue;
}

static const size_t kMemoryBytes = (size_t)1 << 30;
static const size_t kGranularity = (size_t)2 << 20;

EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, int d) {
  NEED_INIT();
  if (d != 0) return kInvalidDevice;
  if (!bytes) return kInvalidValue;
  *bytes = kMemoryBytes;
  return kSuccess;
}

EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(int d, unsigned flags) {
  NEED_INIT();
  if (d != 0) return kInvalidDevice;
  return flags <= 0x1f ? kSuccess : kInvalidValue;
}

static int primary_refs;
static void destroy_context(void); /* mu held */

EXPORT CUresult cuDevicePrimaryCtxRetain(void** ctx, int d) {
  NEED_INIT();
  if (d != 0) return kInvalidDevice;
  if (!ctx) return kInvalidValue;
  pthread_mutex_lock(&mu);
  ++primary_refs;
  pthread_mutex_unlock(&mu);
  *ctx = &primary_ctx_object;
  return kSuccess;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int d) {
  NEED_INIT();
  if (d != 0) return kInvalidDevice;
  pthread_mutex_lock(&mu);
  const int ok = primary_refs > 0;
  if (ok && --primary_refs == 0) destroy_context();
  pthread_mutex_unlock(&mu);
  return ok ? kSuccess : kInvalidContext;
}

EXPORT CUresult cuCtxSetCurrent(void* ctx) {
  NEED_INIT();
  if (ctx != NULL && ctx != &primary_ctx_object) return kInvalidContext;
  current_ctx = ctx;
  return kSuccess;
}

/* ---- memory: what the device can reach */

enum Kind { kReservation, kMapped, kRegistered };
struct Range {
  uintptr_t start;
  size_t size;
  enum Kind kind;
  int access; /* kMapped: cuMemSetAccess granted read-write */
  struct Range* next;
};
static struct Range* ranges; /* guarded by mu */

/* The context is destroyed: its registrations and mappings go with it, and its sticky error. */
static void destroy_context(void) {
  while (ranges) {
    struct Range* r = ranges;
    ranges = r->next;
    free(r);
  }
  atomic_store(&sticky, 0);
}

static struct Range* find(enum Kind kind, uintptr_t p, size_t n) {
  for (struct Range* r = ranges; r; r = r->next)
    if (r->kind == kind && p >= r->start && n <= r->size && p - r->start <= r->size - n) return r;
  return NULL;
}
static int overlaps(enum Kind kind, uintptr_t p, size_t n) {
  for (struct Range* r = ranges; r; r = r->next)
    if (r->kind == kind && p < r->start + r->size && r->start < p + n) return 1;
  return 0;
}
static void add(enum Kind kind, uintptr_t p, size_t n) {
  struct Range* r = calloc(1, sizeof *r);
  r->start = p, r->size = n, r->kind = kind, r->next = ranges;
  ranges = r;
}
static int remove_exact(enum Kind kind, uintptr_t p, size_t* n) {
  for (struct Range** at = &ranges; *at; at = &(*at)->next)
    if ((*at)->kind == kind && (*at)->start == p) {
      struct Range* r = *at;
      if (n) *n = r->size;
      *at = r->next;
      free(r);
      return 1;
    }
  return 0;
}
/* Whether the device may touch [p, p+n): registered host memory, or mapped memory with access set. */
static int reachable(uintptr_t p, size_t n) {
  pthread_mutex_lock(&mu);
  struct Range* m = find(kMapped, p, n);
  const int ok = find(kRegistered, p, n) != NULL || (m && m->access);
  pthread_mutex_unlock(&mu);
  return ok;
}

EXPORT CUresult cuMemGetAllocationGranularity(size_t* g, const void* prop, int option) {
  NEED_CTX();
  if (!g || !prop || (option != 0 && option != 1)) return kInvalidValue;
  *g = kGranularity;
  return kSuccess;
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t align, CUdeviceptr addr, uint64_t flags) {
  NEED_CTX();
  if (!ptr || size == 0 || size % kGranularity || flags != 0 || (align && (align & (align - 1)))) return kInvalidValue;
  /* The address is a hint: the kernel places the range there when it is free, elsewhere otherwise. */
  void* p = mmap((void*)addr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return kOutOfMemory;
  pthread_mutex_lock(&mu);
  add(kReservation, (uintptr_t)p, size);
  pthread_mutex_unlock(&mu);
  *ptr = (CUdeviceptr)(uintptr_t)p;
  return kSuccess;
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  NEED_CTX();
  pthread_mutex_lock(&mu);
  size_t n = 0;
  const int mapped = overlaps(kMapped, (uintptr_t)ptr, size);
  const int ok = !mapped && remove_exact(kReservation, (uintptr_t)ptr, &n);
  pthread_mutex_unlock(&mu);
  if (!ok || n != size) return kInvalidValue;
  munmap((void*)(uintptr_t)ptr, size);
  return kSuccess;
}

struct Handle {
  int fd;
  size_t size;
};

EXPORT CUresult cuMemCreate(uint64_t* handle, size_t size, const void* prop, uint64_t flags) {
  NEED_CTX();
  if (!handle || !prop || size == 0 || size % kGranularity || flags != 0) return kInvalidValue;
  const int* p = prop; /* CUmemAllocationProp: type, requestedHandleTypes, location.type, location.id */
  if (p[0] != 1 || p[2] != 1 || p[3] != 0) return kInvalidValue;
  if (size > kMemoryBytes) return kOutOfMemory;
  const int fd = memfd_create("fake-cuda-vram", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)size) != 0) return kOutOfMemory;
  struct Handle* h = malloc(sizeof *h);
  h->fd = fd, h->size = size;
  *handle = (uint64_t)(uintptr_t)h;
  return kSuccess;
}

EXPORT CUresult cuMemRelease(uint64_t handle) {
  NEED_CTX();
  struct Handle* h = (struct Handle*)(uintptr_t)handle;
  if (!h) return kInvalidValue;
  close(h->fd);
  free(h);
  return kSuccess;
}

EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, uint64_t handle, uint64_t flags) {
  NEED_CTX();
  struct Handle* h = (struct Handle*)(uintptr_t)handle;
  if (!h || offset != 0 || flags != 0 || size != h->size) return kInvalidValue;
  pthread_mutex_lock(&mu);
  const int ok = find(kReservation, (uintptr_t)ptr, size) && !overlaps(kMapped, (uintptr_t)ptr, size);
  if (ok) add(kMapped, (uintptr_t)ptr, size);
  pthread_mutex_unlock(&mu);
  if (!ok) return kInvalidValue;
  /* Mapped, not yet accessible: cuMemSetAccess grants that. */
  if (mmap((void*)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd, 0) == MAP_FAILED) return kOutOfMemory;
  return kSuccess;
}

EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const void* desc, size_t count) {
  NEED_CTX();
  const int* d = desc; /* CUmemAccessDesc: location.type, location.id, flags */
  if (!d || count != 1 || d[0] != 1 || d[1] != 0 || d[2] != 3) return kInvalidValue;
  pthread_mutex_lock(&mu);
  struct Range* r = find(kMapped, (uintptr_t)ptr, size);
  if (r) r->access = 1;
  pthread_mutex_unlock(&mu);
  if (!r) return kInvalidValue;
  mprotect((void*)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE);
  return kSuccess;
}

EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  NEED_CTX();
  pthread_mutex_lock(&mu);
  size_t n = 0;
  const int ok = remove_exact(kMapped, (uintptr_t)ptr, &n) && n == size;
  pthread_mutex_unlock(&mu);
  if (!ok) return kInvalidValue;
  /* Back to a bare reservation. */
  mmap((void*)(uintptr_t)ptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  return kSuccess;
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr ptr, unsigned char value, size_t n) {
  NEED_CTX();
  if (!reachable((uintptr_t)ptr, n)) return kInvalidValue;
  memset((void*)(uintptr_t)ptr, value, n);
  return kSuccess;
}

EXPORT CUresult cuMemHostRegister_v2(void* p, size_t size, unsigned flags) {
  NEED_CTX();
  if (!p || size == 0 || (flags & ~0xfu)) return kInvalidValue;
  pthread_mutex_lock(&mu);
  const int taken = overlaps(kRegistered, (uintptr_t)p, size);
  if (!taken) add(kRegistered, (uintptr_t)p, size);
  pthread_mutex_unlock(&mu);
  return taken ? kHostMemoryAlreadyRegistered : kSuccess;
}

EXPORT CUresult cuMemHostUnregister(void* p) {
  NEED_CTX();
  pthread_mutex_lock(&mu);
  const int ok = remove_exact(kRegistered, (uintptr_t)p, NULL);
  pthread_mutex_unlock(&mu);
  return ok ? kSuccess : kHostMemoryNotRegistered;
}

EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* d, void* p, unsigned flags) {
  NEED_CTX();
  if (!d || flags != 0) return kInvalidValue;
  pthread_mutex_lock(&mu);
  const int ok = find(kRegistered, (uintptr_t)p, 1) != NULL;
  pthread_mutex_unlock(&mu);
  if (!ok) return kInvalidValue;
  *d = (CUdeviceptr)(uintptr_t)p; /* CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: the same address */
  return kSuccess;
}

/* ---- modules: none can be loaded */

EXPORT CUresult cuModuleLoadData(void** module, const void* image) {
  NEED_CTX();
  if (!module || !image) return kInvalidValue;
  const char* text = image;
  /* PTX is text (it starts with a directive or a comment); anything else would be a cubin or fatbin. */
  return (text[0] == '.' || text[0] == '/') ? kJitCompilerNotFound : kNoBinaryForGpu;
}
EXPORT CUresult cuModuleGetFunction(void** f, void* m, const char* name) {
  NEED_CTX();
  (void)f, (void)m, (void)name;
  return kInvalidHandle;
}
EXPORT CUresult cuModuleUnload(void* m) {
  NEED_CTX();
  (void)m;
  return kInvalidHandle;
}
EXPORT CUresult cuFuncGetAttribute(int* v, int attr, void* f) {
  NEED_INIT();
  (void)v, (void)attr, (void)f;
  return kInvalidHandle;
}
EXPORT CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                               unsigned shared, void* stream, void** params, void** extra) {
  NEED_CTX();
  (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)stream, (void)params,
      (void)extra;
  return kInvalidHandle;
}

/* ---- streams: one worker thread each, running its operations in order */

enum OpKind { kWait32, kWait64, kWrite32, kWrite64, kCopy, kHostFn };
struct Op {
  enum OpKind kind;
  uintptr_t addr, src;
  uint64_t value;
  unsigned flags;
  size_t size;
  void (*fn)(void*);
  void* data;
  struct Op* next;
};
struct Stream {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct Op *head, *tail;
  int running; /* an operation is being run */
  int destroyed;
};

static int wait_done(const struct Op* op) {
  if (op->kind == kWait64) {
    const uint64_t v = atomic_load_explicit((_Atomic uint64_t*)op->addr, memory_order_acquire);
    return (int64_t)(v - op->value) >= 0; /* CU_STREAM_WAIT_VALUE_GEQ, the only 64-bit wait hcq uses */
  }
  const uint32_t v = atomic_load_explicit((_Atomic uint32_t*)op->addr, memory_order_acquire);
  const uint32_t w = (uint32_t)op->value;
  switch (op->flags & 0xf) {
    case 0: return (int32_t)(v - w) >= 0;
    case 1: return v == w;
    case 2: return (v & w) != 0;
    case 3: return ~(v | w) != 0;
  }
  return 1;
}

static int reachable(uintptr_t p, size_t n);

static void run(struct Op* op) {
  if (atomic_load(&sticky)) return; /* a faulted context runs nothing more */
  if (op->kind != kCopy && op->kind != kHostFn) {
    const size_t n = (op->kind == kWait64 || op->kind == kWrite64) ? 8 : 4;
    if (!reachable(op->addr, n)) {
      atomic_store(&sticky, kIllegalAddress); /* the MMU fault */
      return;
    }
  }
  switch (op->kind) {
    case kWait32:
    case kWait64:
      while (!wait_done(op) && !atomic_load(&sticky)) sched_yield();
      break;
    case kWrite32:
      atomic_thread_fence(memory_order_seq_cst);
      atomic_store_explicit((_Atomic uint32_t*)op->addr, (uint32_t)op->value, memory_order_release);
      break;
    case kWrite64:
      atomic_thread_fence(memory_order_seq_cst);
      atomic_store_explicit((_Atomic uint64_t*)op->addr, op->value, memory_order_release);
      break;
    case kCopy: memmove((void*)op->addr, (const void*)op->src, op->size); break;
    case kHostFn: op->fn(op->data); break;
  }
}

static void* worker(void* arg) {
  struct Stream* s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->head && !s->destroyed) pthread_cond_wait(&s->cv, &s->mu);
    if (!s->head) break; /* destroyed and drained */
    struct Op* op = s->head;
    s->running = 1;
    pthread_mutex_unlock(&s->mu);
    run(op);
    pthread_mutex_lock(&s->mu);
    s->head = op->next;
    if (!s->head) s->tail = NULL;
    s->running = 0;
    free(op);
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
  return NULL;
}

EXPORT CUresult cuStreamCreate(void** stream, unsigned flags) {
  NEED_CTX();
  if (!stream || flags > 1) return kInvalidValue;
  struct Stream* s = calloc(1, sizeof *s);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  if (pthread_create(&s->thread, NULL, worker, s) != 0) return kOutOfMemory;
  pthread_detach(s->thread);
  *stream = s;
  return kSuccess;
}

/* As the driver documents: returns at once; the stream's resources go once its work is done. */
EXPORT CUresult cuStreamDestroy_v2(void* stream) {
  NEED_CTX();
  struct Stream* s = stream;
  if (!s) return kInvalidHandle;
  pthread_mutex_lock(&s->mu);
  s->destroyed = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  return kSuccess;
}

static CUresult enqueue(void* stream, struct Op op) {
  struct Stream* s = stream;
  if (!s) return kInvalidHandle; /* hcq never uses the legacy default stream */
  struct Op* o = malloc(sizeof *o);
  *o = op;
  o->next = NULL;
  pthread_mutex_lock(&s->mu);
  if (s->tail) s->tail->next = o;
  else s->head = o;
  s->tail = o;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  return kSuccess;
}

EXPORT CUresult cuStreamQuery(void* stream) {
  NEED_CTX();
  struct Stream* s = stream;
  if (!s) return kInvalidHandle;
  pthread_mutex_lock(&s->mu);
  const int busy = s->head != NULL || s->running;
  pthread_mutex_unlock(&s->mu);
  return busy ? kNotReady : kSuccess;
}

EXPORT CUresult cuStreamSynchronize(void* stream) {
  NEED_CTX();
  struct Stream* s = stream;
  if (!s) return kInvalidHandle;
  pthread_mutex_lock(&s->mu);
  while (s->head || s->running) pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
  return kSuccess;
}

static CUresult memop(void* stream, enum OpKind kind, CUdeviceptr addr, uint64_t value, unsigned flags) {
  const size_t n = (kind == kWait64 || kind == kWrite64) ? 8 : 4;
  if (addr % n || !reachable((uintptr_t)addr, n)) return kInvalidValue;
  struct Op op = {.kind = kind, .addr = (uintptr_t)addr, .value = value, .flags = flags};
  return enqueue(stream, op);
}

EXPORT CUresult cuStreamWaitValue32_v2(void* s, CUdeviceptr a, uint32_t v, unsigned f) {
  NEED_CTX();
  if ((f & 0xf) > 3) return kInvalidValue;
  return memop(s, kWait32, a, v, f);
}
EXPORT CUresult cuStreamWaitValue64_v2(void* s, CUdeviceptr a, uint64_t v, unsigned f) {
  NEED_CTX();
  if ((f & 0xf) != 0) return kInvalidValue; /* this fake implements the GEQ 64-bit wait only */
  return memop(s, kWait64, a, v, f);
}
EXPORT CUresult cuStreamWriteValue32_v2(void* s, CUdeviceptr a, uint32_t v, unsigned f) {
  NEED_CTX();
  if (f > 1) return kInvalidValue;
  return memop(s, kWrite32, a, v, f);
}
EXPORT CUresult cuStreamWriteValue64_v2(void* s, CUdeviceptr a, uint64_t v, unsigned f) {
  NEED_CTX();
  if (f > 1) return kInvalidValue;
  return memop(s, kWrite64, a, v, f);
}

/* With unified addressing the direction comes from the pointers; memory the driver does not know is pageable host
 * memory, which the real driver copies too. */
EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, void* stream) {
  NEED_CTX();
  struct Op op = {.kind = kCopy, .addr = (uintptr_t)dst, .src = (uintptr_t)src, .size = n};
  return enqueue(stream, op);
}

EXPORT CUresult cuLaunchHostFunc(void* stream, void (*fn)(void*), void* data) {
  NEED_CTX();
  if (!fn) return kInvalidValue;
  struct Op op = {.kind = kHostFn, .fn = fn, .data = data};
  return enqueue(stream, op);
}
