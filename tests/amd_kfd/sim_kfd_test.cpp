// The simulated KFD through the OS seam: ioctl validation and errnos as the kernel gives them, memory at the same VA
// on host and GPU, queues and doorbells, events.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/kfd_ioctl.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include "amd/kfd/compat/kfd_runtime_enable.hpp"
#include "amd/kfd/kfd.hpp"
#include "hcq/backend/process.hpp"
#include "hcq/memory.hpp"
#include "sim/kfd/sim_kfd.hpp"
#include "sim/sim_os.hpp"

namespace hcq::sim {
namespace {

class SimKfdTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    kfd_ = std::make_shared<SimKfd>(std::vector<std::string>{GetParam()});
    os_ = std::make_unique<SimOs>(std::vector<std::shared_ptr<SimDriver>>{kfd_});
    gpu_id_ = kfd_->gpu_id(0);
    fd_ = os_->open("/dev/kfd", O_RDWR);
    ASSERT_GE(fd_, 0);
    render_ = os_->open("/dev/dri/renderD128", O_RDWR);
    ASSERT_GE(render_, 0);
  }
  void TearDown() override {
    for (auto [va, size] : reserved_) process().va.free(va, size);
    os_->close(render_);
    os_->close(fd_);
  }
  // ioctl: 0 or the errno.
  int io(unsigned long req, void* arg) { return os_->ioctl(fd_, req, arg) == 0 ? 0 : errno; }
  void acquire() {
    kfd_ioctl_acquire_vm_args a{static_cast<uint32_t>(render_), gpu_id_};
    ASSERT_EQ(io(AMDKFD_IOC_ACQUIRE_VM, &a), 0);
  }
  uint64_t reserve(uint64_t size) {
    const uint64_t va = process().va.alloc(size);
    reserved_.emplace_back(va, size);
    return va;
  }
  // Allocates `size` at a fresh VA; returns the handle (0 with *err set on failure).
  uint64_t alloc(uint64_t size, uint32_t flags, uint64_t* va_out = nullptr, uint64_t* off = nullptr,
                 int* err = nullptr) {
    kfd_ioctl_alloc_memory_of_gpu_args a{};
    a.va_addr = reserve(size);
    a.size = size;
    a.gpu_id = gpu_id_;
    a.flags = flags;
    const int e = io(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a);
    if (err) *err = e;
    if (va_out) *va_out = a.va_addr;
    if (off) *off = a.mmap_offset;
    return e == 0 ? a.handle : 0;
  }
  int map(uint64_t handle, uint32_t gpu, bool do_map = true) {
    kfd_ioctl_map_memory_to_gpu_args m{};
    m.handle = handle;
    m.device_ids_array_ptr = reinterpret_cast<uint64_t>(&gpu);
    m.n_devices = 1;
    return io(do_map ? AMDKFD_IOC_MAP_MEMORY_TO_GPU : AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, &m);
  }

  std::shared_ptr<SimKfd> kfd_;
  std::unique_ptr<SimOs> os_;
  uint32_t gpu_id_ = 0;
  int fd_ = -1, render_ = -1;
  std::vector<std::pair<uint64_t, uint64_t>> reserved_;
};

constexpr uint32_t kGtt = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
constexpr uint32_t kVram = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;

TEST_P(SimKfdTest, TopologyReportsTheTarget) {
  const std::vector<amd::KfdNode> nodes = amd::kfd_topology(*os_);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].gfx, GetParam());
  EXPECT_EQ(nodes[0].gpu_id, gpu_id_);
  EXPECT_EQ(nodes[0].render_minor, 128u);
  EXPECT_GT(nodes[0].vram_bytes, 0u);
  EXPECT_GT(nodes[0].simd_count, 0u);
  EXPECT_EQ(nodes[0].num_xcc, std::string(GetParam()) == "gfx942" ? 8u : 1u);
  // Paths outside the simulated machine go to the real OS.
  EXPECT_FALSE(os_->read_file("/sys/devices/virtual/kfd/kfd/topology/nodes/7/properties"));
  EXPECT_TRUE(os_->read_file("/proc/self/status"));
}

TEST_P(SimKfdTest, VersionUnknownCommandsAndSizes) {
  kfd_ioctl_get_version_args v{};
  ASSERT_EQ(io(AMDKFD_IOC_GET_VERSION, &v), 0);
  EXPECT_EQ(v.major_version, 1u);
  EXPECT_EQ(io(_IOWR('K', 0x7f, kfd_ioctl_get_version_args), &v), ENOTTY);  // beyond the command table
  EXPECT_EQ(io(_IOWR('K', 0x00, kfd_ioctl_get_version_args), &v), ENOTTY);  // below it
  EXPECT_EQ(io(AMDKFD_IOC_GET_VERSION, nullptr), EFAULT);
  // A short argument: the kernel copies what the caller gave and zero-fills the rest.
  uint32_t major_only = 0;
  ASSERT_EQ(io(_IOR('K', 0x01, uint32_t), &major_only), 0);
  EXPECT_EQ(major_only, 1u);
  // Render nodes take no KFD ioctls.
  EXPECT_NE(os_->ioctl(render_, AMDKFD_IOC_GET_VERSION, &v), 0);
  EXPECT_EQ(errno, ENOTTY);
}

TEST_P(SimKfdTest, AcquireVmNeedsTheRenderNode) {
  kfd_ioctl_alloc_memory_of_gpu_args early{};
  early.va_addr = reserve(4096);
  early.size = 4096;
  early.gpu_id = gpu_id_;
  early.flags = kGtt;
  EXPECT_EQ(io(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &early), ENODEV);     // no VM yet
  kfd_ioctl_acquire_vm_args a{static_cast<uint32_t>(fd_), gpu_id_};  // /dev/kfd is not a render node
  EXPECT_EQ(io(AMDKFD_IOC_ACQUIRE_VM, &a), EINVAL);
  a = {9999, gpu_id_};
  EXPECT_EQ(io(AMDKFD_IOC_ACQUIRE_VM, &a), EINVAL);
  a = {static_cast<uint32_t>(render_), gpu_id_ + 1};
  EXPECT_EQ(io(AMDKFD_IOC_ACQUIRE_VM, &a), EINVAL);
  acquire();
  acquire();  // the same file again is fine
  const int other = os_->open("/dev/dri/renderD128", O_RDWR);
  a = {static_cast<uint32_t>(other), gpu_id_};
  EXPECT_EQ(io(AMDKFD_IOC_ACQUIRE_VM, &a), EBUSY);
  os_->close(other);
}

TEST_P(SimKfdTest, Apertures) {
  kfd_ioctl_get_process_apertures_new_args a{};
  ASSERT_EQ(io(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &a), 0);
  ASSERT_EQ(a.num_of_nodes, 1u);
  kfd_process_device_apertures ap{};
  a.kfd_process_device_apertures_ptr = reinterpret_cast<uint64_t>(&ap);
  ASSERT_EQ(io(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &a), 0);
  EXPECT_EQ(ap.gpu_id, gpu_id_);
  EXPECT_LE(ap.gpuvm_base, process().va.base());
  EXPECT_GE(ap.gpuvm_limit, process().va.base() + process().va.size() - 1);
  a.kfd_process_device_apertures_ptr = 0;
  EXPECT_EQ(io(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &a), EFAULT);
}

TEST_P(SimKfdTest, AllocValidation) {
  acquire();
  int err = 0;
  alloc(4096, 0, nullptr, nullptr, &err);
  EXPECT_EQ(err, EINVAL) << "no memory type";
  alloc(4096, kGtt | (1u << 20), nullptr, nullptr, &err);
  EXPECT_EQ(err, EINVAL) << "unknown flag bit";
  kfd_ioctl_alloc_memory_of_gpu_args a{};
  a.va_addr = reserve(8192);
  a.gpu_id = gpu_id_;
  a.flags = kGtt;
  a.size = 0;
  EXPECT_EQ(io(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a), EINVAL) << "size 0";
  a.size = 4096;
  a.va_addr += 12;
  EXPECT_EQ(io(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a), EINVAL) << "unaligned VA";
  a.va_addr = uint64_t{1} << 50;
  EXPECT_EQ(io(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a), EINVAL) << "VA beyond the GPUVM aperture";
  a.va_addr = reserve(4096);
  a.gpu_id = gpu_id_ + 1;
  EXPECT_EQ(io(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a), EINVAL) << "unknown gpu";
  a.gpu_id = gpu_id_;
  a.flags = KFD_IOC_ALLOC_MEM_FLAGS_VRAM;
  a.size = uint64_t{1} << 46;
  a.va_addr = uint64_t{1} << 40;
  EXPECT_EQ(io(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a), ENOMEM) << "more than the VRAM";
  a.flags = KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL;
  a.size = 4096;
  EXPECT_EQ(io(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a), EINVAL) << "doorbell BO of the wrong size";
  a.size = SimKfd::kDoorbellSliceBytes;
  a.va_addr = reserve(a.size);
  EXPECT_EQ(io(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a), 0);
  a.flags = KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP;
  a.size = 8192;
  EXPECT_EQ(io(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a), EINVAL) << "MMIO remap is one page";
  a.size = 4096;
  a.va_addr = reserve(4096);
  EXPECT_EQ(io(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a), 0);
  a.flags = KFD_IOC_ALLOC_MEM_FLAGS_USERPTR;
  a.mmap_offset = 0;
  EXPECT_EQ(io(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a), EINVAL) << "USERPTR without an address";
}

TEST_P(SimKfdTest, SameVaOnHostAndGpu) {
  acquire();
  uint64_t va = 0, off = 0;
  const uint64_t h = alloc(65536, kVram | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC, &va, &off);
  ASSERT_NE(h, 0u);
  EXPECT_EQ(kfd_->translate(gpu_id_, va, 8), nullptr) << "not mapped on the GPU yet";
  ASSERT_EQ(map(h, gpu_id_), 0);
  ASSERT_EQ(map(h, gpu_id_), 0) << "mapping twice is a no-op";
  EXPECT_EQ(map(h, gpu_id_ + 1), EINVAL);
  void* p = os_->mmap(reinterpret_cast<void*>(va), 65536, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, render_,
                      static_cast<off_t>(off));
  ASSERT_EQ(p, reinterpret_cast<void*>(va));
  std::memcpy(static_cast<char*>(p) + 100, "hello gpu", 10);
  std::byte* gpu = kfd_->translate(gpu_id_, va + 100, 10);
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(std::memcmp(gpu, "hello gpu", 10), 0);
  std::memcpy(gpu, "from gpu!", 10);  // and the other way round
  EXPECT_EQ(std::memcmp(static_cast<char*>(p) + 100, "from gpu!", 10), 0);
  EXPECT_EQ(kfd_->translate(gpu_id_, va + 65530, 16), nullptr) << "a range past the end faults";
  // The simulated GPU uses the process's own mapping while there is one (so host and engines touch the same
  // addresses), and the simulator's once the process unmaps it; the bytes are the same either way.
  EXPECT_EQ(gpu, static_cast<std::byte*>(p) + 100);
  // Replaced by a reservation (MAP_FIXED), as the backends drop a host mapping inside the VA space: SimOs tells the
  // driver, as the kernel implicitly unmaps. (A munmap would leave a hole that another mmap of this process could
  // take before TearDown re-reserves the range over it.)
  ASSERT_EQ(os_->mmap(p, 65536, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0), p);
  gpu = kfd_->translate(gpu_id_, va + 100, 10);
  ASSERT_NE(gpu, nullptr);
  EXPECT_NE(gpu, reinterpret_cast<std::byte*>(va + 100));
  EXPECT_EQ(std::memcmp(gpu, "from gpu!", 10), 0);
  // Render-node mmap: only a buffer's exact offset, no larger than the buffer.
  EXPECT_EQ(os_->mmap(nullptr, 65536, PROT_READ, MAP_SHARED, render_, static_cast<off_t>(off + 4096)), MAP_FAILED);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(os_->mmap(nullptr, 2 * 65536, PROT_READ, MAP_SHARED, render_, static_cast<off_t>(off)), MAP_FAILED);

  kfd_ioctl_free_memory_of_gpu_args f{h};
  EXPECT_EQ(io(AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f), EBUSY) << "still mapped";
  ASSERT_EQ(map(h, gpu_id_, false), 0);
  EXPECT_EQ(map(h, gpu_id_, false), EINVAL) << "not mapped any more";
  EXPECT_EQ(kfd_->translate(gpu_id_, va, 8), nullptr);
  ASSERT_EQ(io(AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f), 0);
  EXPECT_EQ(io(AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f), EINVAL) << "double free";
  f.handle = 0x123456789ull;
  EXPECT_EQ(io(AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f), EINVAL) << "unknown handle";
  EXPECT_EQ(map(h, gpu_id_), EINVAL) << "map of a freed handle";
}

TEST_P(SimKfdTest, MapValidation) {
  acquire();
  uint64_t va = 0;
  const uint64_t h = alloc(4096, kGtt, &va);
  kfd_ioctl_map_memory_to_gpu_args m{};
  m.handle = h;
  uint32_t id = gpu_id_;
  m.device_ids_array_ptr = reinterpret_cast<uint64_t>(&id);
  EXPECT_EQ(io(AMDKFD_IOC_MAP_MEMORY_TO_GPU, &m), EINVAL) << "no devices";
  m.n_devices = 1;
  m.n_success = 2;
  EXPECT_EQ(io(AMDKFD_IOC_MAP_MEMORY_TO_GPU, &m), EINVAL) << "n_success > n_devices";
  m.n_success = 0;
  m.device_ids_array_ptr = 0;
  EXPECT_EQ(io(AMDKFD_IOC_MAP_MEMORY_TO_GPU, &m), EFAULT);
  // Overlapping VA on one GPU: the second mapping is refused.
  kfd_ioctl_alloc_memory_of_gpu_args a{};
  a.va_addr = va;
  a.size = 4096;
  a.gpu_id = gpu_id_;
  a.flags = kGtt;
  ASSERT_EQ(io(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a), 0);
  ASSERT_EQ(map(h, gpu_id_), 0);
  EXPECT_EQ(map(a.handle, gpu_id_), EINVAL);
}

TEST_P(SimKfdTest, UserptrIsTheHostAddress) {
  acquire();
  alignas(4096) static thread_local unsigned char host[8192];
  kfd_ioctl_alloc_memory_of_gpu_args a{};
  a.va_addr = reinterpret_cast<uint64_t>(host);
  a.mmap_offset = a.va_addr;
  a.size = sizeof host;
  a.gpu_id = gpu_id_;
  a.flags = KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
  ASSERT_EQ(io(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a), 0);
  ASSERT_EQ(map(a.handle, gpu_id_), 0);
  host[5000] = 42;
  EXPECT_EQ(kfd_->translate(gpu_id_, a.va_addr + 5000, 1), reinterpret_cast<std::byte*>(&host[5000]));
  ASSERT_EQ(map(a.handle, gpu_id_, false), 0);
  kfd_ioctl_free_memory_of_gpu_args f{a.handle};
  EXPECT_EQ(io(AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f), 0);
}

TEST_P(SimKfdTest, QueueValidationAndDoorbell) {
  acquire();
  uint64_t ring = 0, ptrs = 0, off = 0;
  const uint64_t hr = alloc(4096, kGtt, &ring);
  const uint64_t hp = alloc(4096, kGtt, &ptrs, &off);
  ASSERT_EQ(map(hr, gpu_id_), 0);
  kfd_ioctl_create_queue_args c{};
  c.ring_base_address = ring;
  c.ring_size = 4096;
  c.gpu_id = gpu_id_;
  c.queue_type = KFD_IOC_QUEUE_TYPE_SDMA;
  c.read_pointer_address = ptrs;
  c.write_pointer_address = ptrs + 8;
  c.queue_percentage = 100;
  EXPECT_EQ(io(AMDKFD_IOC_CREATE_QUEUE, &c), EINVAL) << "pointers in unmapped memory";
  ASSERT_EQ(map(hp, gpu_id_), 0);
  auto bad = c;
  bad.ring_size = 3000;
  EXPECT_EQ(io(AMDKFD_IOC_CREATE_QUEUE, &bad), EINVAL) << "ring size not a power of two";
  bad = c;
  bad.ring_size = 8192;
  EXPECT_EQ(io(AMDKFD_IOC_CREATE_QUEUE, &bad), EINVAL) << "ring larger than its buffer";
  bad = c;
  bad.queue_percentage = 101;
  EXPECT_EQ(io(AMDKFD_IOC_CREATE_QUEUE, &bad), EINVAL);
  bad = c;
  bad.queue_priority = 16;
  EXPECT_EQ(io(AMDKFD_IOC_CREATE_QUEUE, &bad), EINVAL);
  bad = c;
  bad.write_pointer_address = uint64_t{1} << 60;
  EXPECT_EQ(io(AMDKFD_IOC_CREATE_QUEUE, &bad), EFAULT) << "pointer outside user space";
  bad = c;
  bad.queue_type = 9;
  EXPECT_EQ(io(AMDKFD_IOC_CREATE_QUEUE, &bad), 524) << "unknown queue type: ENOTSUPP";
  bad = c;
  bad.gpu_id = gpu_id_ + 1;
  EXPECT_EQ(io(AMDKFD_IOC_CREATE_QUEUE, &bad), EINVAL);
  bad = c;
  bad.queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE;
  bad.eop_buffer_address = uint64_t{1} << 40;
  bad.eop_buffer_size = 4096;
  EXPECT_EQ(io(AMDKFD_IOC_CREATE_QUEUE, &bad), EINVAL) << "EOP buffer not mapped";

  ASSERT_EQ(io(AMDKFD_IOC_CREATE_QUEUE, &c), 0);
  const auto st = kfd_->queue_state(c.queue_id);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->desc.type, SimQueueType::sdma);
  EXPECT_EQ(st->desc.ring_va, ring);
  EXPECT_EQ(st->desc.rptr_va, ptrs);
  EXPECT_EQ(st->desc.wptr_va, ptrs + 8);

  // The doorbell page through /dev/kfd: one slice, at the page-aligned offset.
  const uint64_t base = c.doorbell_offset & ~uint64_t{8191};
  EXPECT_EQ(os_->mmap(nullptr, 4096, PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(base)), MAP_FAILED);
  void* db = os_->mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(base));
  ASSERT_NE(db, MAP_FAILED);
  auto* slot = reinterpret_cast<volatile uint64_t*>(static_cast<char*>(db) + (c.doorbell_offset - base));
  os_->write_doorbell64(slot, 64);
  os_->write_doorbell64(slot, 128);
  auto after = kfd_->queue_state(c.queue_id);
  EXPECT_EQ(after->doorbell_writes, 2u);
  EXPECT_EQ(after->last_doorbell, 128u);
  EXPECT_EQ(*slot, 128u);
  *slot = 7;  // a plain store is not a doorbell write the simulator sees
  EXPECT_EQ(kfd_->queue_state(c.queue_id)->doorbell_writes, 2u);
  os_->munmap(db, 8192);

  kfd_ioctl_destroy_queue_args d{c.queue_id, 0};
  EXPECT_EQ(io(AMDKFD_IOC_DESTROY_QUEUE, &d), 0);
  EXPECT_EQ(io(AMDKFD_IOC_DESTROY_QUEUE, &d), EINVAL);
  EXPECT_FALSE(kfd_->queue_state(c.queue_id));
}

// Each doorbell slot reaches its own queue (the driver looks the queue up by slot): two queues on one GPU count
// only their own doorbells, a 4-byte store to the upper half of a slot is that slot's, a destroyed queue's slot
// lands as plain memory, and a queue made later in the freed slot gets that slot's doorbells from then on.
TEST_P(SimKfdTest, DoorbellSlotsReachTheirOwnQueue) {
  acquire();
  uint64_t ring = 0, ptrs = 0;
  const uint64_t hr = alloc(4096, kGtt, &ring);
  const uint64_t hp = alloc(4096, kGtt, &ptrs);
  ASSERT_EQ(map(hr, gpu_id_), 0);
  ASSERT_EQ(map(hp, gpu_id_), 0);
  auto make = [&](uint64_t ptr_offset) {
    kfd_ioctl_create_queue_args c{};
    c.ring_base_address = ring;
    c.ring_size = 4096;
    c.gpu_id = gpu_id_;
    c.queue_type = KFD_IOC_QUEUE_TYPE_SDMA;
    c.read_pointer_address = ptrs + ptr_offset;
    c.write_pointer_address = ptrs + ptr_offset + 8;
    c.queue_percentage = 100;
    EXPECT_EQ(io(AMDKFD_IOC_CREATE_QUEUE, &c), 0);
    return c;
  };
  const kfd_ioctl_create_queue_args a = make(0), b = make(64);
  const uint64_t base = a.doorbell_offset & ~uint64_t{8191};
  ASSERT_EQ(b.doorbell_offset & ~uint64_t{8191}, base);
  // The lowest free slots, 8 bytes apart (kfd's doorbell layout on these targets).
  ASSERT_EQ(b.doorbell_offset - a.doorbell_offset, 8u);
  char* db =
      static_cast<char*>(os_->mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(base)));
  ASSERT_NE(db, MAP_FAILED);
  auto* slot_a = reinterpret_cast<volatile uint64_t*>(db + (a.doorbell_offset - base));
  auto* slot_b = reinterpret_cast<volatile uint64_t*>(db + (b.doorbell_offset - base));

  os_->write_doorbell64(slot_a, 5);
  os_->write_doorbell64(slot_b, 9);
  os_->write_doorbell64(slot_b, 10);
  os_->write_doorbell32(reinterpret_cast<volatile uint32_t*>(db + (b.doorbell_offset - base) + 4), 3);
  EXPECT_EQ(kfd_->queue_state(a.queue_id)->doorbell_writes, 1u);
  EXPECT_EQ(kfd_->queue_state(a.queue_id)->last_doorbell, 5u);
  EXPECT_EQ(kfd_->queue_state(b.queue_id)->doorbell_writes, 3u);
  EXPECT_EQ(kfd_->queue_state(b.queue_id)->last_doorbell, 3u);

  kfd_ioctl_destroy_queue_args d{a.queue_id, 0};
  ASSERT_EQ(io(AMDKFD_IOC_DESTROY_QUEUE, &d), 0);
  os_->write_doorbell64(slot_a, 77);  // no queue listens: the store lands
  EXPECT_EQ(*slot_a, 77u);
  EXPECT_EQ(kfd_->queue_state(b.queue_id)->doorbell_writes, 3u);

  const kfd_ioctl_create_queue_args c = make(128);
  ASSERT_EQ(c.doorbell_offset, a.doorbell_offset) << "the freed slot is the lowest free one";
  os_->write_doorbell64(slot_a, 80);
  EXPECT_EQ(kfd_->queue_state(c.queue_id)->doorbell_writes, 1u);
  EXPECT_EQ(kfd_->queue_state(c.queue_id)->last_doorbell, 80u);
  EXPECT_EQ(kfd_->queue_state(b.queue_id)->doorbell_writes, 3u);
  os_->munmap(db, 8192);
}

TEST_P(SimKfdTest, EventsAndTheEventPage) {
  acquire();
  uint64_t va = 0, off = 0;
  const uint64_t small = alloc(4096, kGtt);
  kfd_ioctl_create_event_args e{};
  e.event_page_offset = small;
  e.event_type = KFD_IOC_EVENT_SIGNAL;
  EXPECT_EQ(io(AMDKFD_IOC_CREATE_EVENT, &e), EINVAL) << "event page too small";
  const uint64_t page = alloc(SimKfd::kEventPageBytes, kGtt, &va, &off);
  ASSERT_EQ(map(page, gpu_id_), 0);
  e = {};
  e.event_page_offset = page;
  e.event_type = KFD_IOC_EVENT_SIGNAL;
  e.auto_reset = 1;
  ASSERT_EQ(io(AMDKFD_IOC_CREATE_EVENT, &e), 0);
  EXPECT_EQ(e.event_slot_index, e.event_id);
  kfd_ioctl_create_event_args again{};
  again.event_page_offset = page;
  EXPECT_EQ(io(AMDKFD_IOC_CREATE_EVENT, &again), EINVAL) << "event page already set";
  kfd_ioctl_create_event_args mem{};
  mem.event_type = KFD_IOC_EVENT_MEMORY;
  ASSERT_EQ(io(AMDKFD_IOC_CREATE_EVENT, &mem), 0);

  kfd_event_data data{};
  data.event_id = e.event_id;
  kfd_ioctl_wait_events_args w{reinterpret_cast<uint64_t>(&data), 1, 0, 0, 0};
  ASSERT_EQ(io(AMDKFD_IOC_WAIT_EVENTS, &w), 0);
  EXPECT_EQ(w.wait_result, static_cast<uint32_t>(KFD_IOC_WAIT_RESULT_TIMEOUT));
  kfd_ioctl_set_event_args s{e.event_id, 0};
  ASSERT_EQ(io(AMDKFD_IOC_SET_EVENT, &s), 0);
  ASSERT_EQ(io(AMDKFD_IOC_WAIT_EVENTS, &w), 0);
  EXPECT_EQ(w.wait_result, static_cast<uint32_t>(KFD_IOC_WAIT_RESULT_COMPLETE));
  ASSERT_EQ(io(AMDKFD_IOC_WAIT_EVENTS, &w), 0);
  EXPECT_EQ(w.wait_result, static_cast<uint32_t>(KFD_IOC_WAIT_RESULT_TIMEOUT)) << "auto reset";

  // The GPU writes the slot, then interrupts: the event fires and the slot is acknowledged.
  auto* slots =
      static_cast<uint64_t*>(os_->mmap(reinterpret_cast<void*>(va), SimKfd::kEventPageBytes, PROT_READ | PROT_WRITE,
                                       MAP_SHARED | MAP_FIXED, render_, static_cast<off_t>(off)));
  ASSERT_NE(static_cast<void*>(slots), MAP_FAILED);
  EXPECT_EQ(slots[e.event_id], SimKfd::kUnsignaledSlot);
  slots[e.event_id] = e.event_id;
  kfd_->raise_interrupt(gpu_id_, 0);
  ASSERT_EQ(io(AMDKFD_IOC_WAIT_EVENTS, &w), 0);
  EXPECT_EQ(w.wait_result, static_cast<uint32_t>(KFD_IOC_WAIT_RESULT_COMPLETE));
  EXPECT_EQ(slots[e.event_id], SimKfd::kUnsignaledSlot);

  kfd_ioctl_set_event_args sm{mem.event_id, 0};
  EXPECT_EQ(io(AMDKFD_IOC_SET_EVENT, &sm), EINVAL) << "only signal events are set from the CPU";
  kfd_ioctl_destroy_event_args d{e.event_id, 0};
  ASSERT_EQ(io(AMDKFD_IOC_DESTROY_EVENT, &d), 0);
  EXPECT_EQ(io(AMDKFD_IOC_DESTROY_EVENT, &d), EINVAL);
  data.event_id = e.event_id;
  EXPECT_EQ(io(AMDKFD_IOC_WAIT_EVENTS, &w), EINVAL) << "waiting on a destroyed event";
}

TEST_P(SimKfdTest, QueueFaultFiresTheMemoryEvent) {
  amd::KfdGpu gpu(*os_, amd::kfd_topology(*os_).at(0));
  auto q = gpu.create_queue(amd::KfdQueue::Type::compute_pm4, 4096);
  EXPECT_FALSE(gpu.poll_exception());
  kfd_->inject_fault(q->queue_id(), 0xdead000, true, "test fault");
  const std::optional<std::string> msg = gpu.poll_exception();
  ASSERT_TRUE(msg);
  EXPECT_NE(msg->find("0xdead000"), std::string::npos) << *msg;
  EXPECT_TRUE(kfd_->queue_state(q->queue_id())->faulted);
}

TEST_P(SimKfdTest, RuntimeEnable) {
  namespace kc = amd::kfd_compat;
  kfd_ioctl_get_version_args v{};
  ASSERT_EQ(io(AMDKFD_IOC_GET_VERSION, &v), 0);
  ASSERT_GE(v.minor_version, kc::kRuntimeEnableMinor) << "the simulated KFD claims the debugger API";
  kc::RuntimeEnableArgs re{};
  re.mode_mask = kc::kRuntimeEnable;
  EXPECT_EQ(io(kc::kIocRuntimeEnable, &re), 0);
  EXPECT_EQ(io(kc::kIocRuntimeEnable, &re), EBUSY) << "enabled twice";
  kc::RuntimeEnableArgs off{};
  EXPECT_EQ(io(kc::kIocRuntimeEnable, &off), 0) << "disable";
  EXPECT_EQ(io(kc::kIocRuntimeEnable, &re), 0) << "enable again after a disable";
  EXPECT_EQ(io(kc::kIocRuntimeEnable, &off), 0);
  // Once the process has queues, enabling is refused.
  amd::KfdGpu gpu(*os_, amd::kfd_topology(*os_).at(0));  // enables at bring-up (EBUSY/EEXIST tolerated)
  EXPECT_TRUE(gpu.runtime_enabled());
  EXPECT_EQ(io(kc::kIocRuntimeEnable, &re), EBUSY);
  EXPECT_EQ(io(kc::kIocRuntimeEnable, &off), 0);
  auto q = gpu.create_queue(amd::KfdQueue::Type::compute_pm4, 4096);
  EXPECT_EQ(io(kc::kIocRuntimeEnable, &re), EEXIST) << "queues exist";
}

// Two GPUs in one KFD process: one event page (the second GPU's signal event takes a slot in the first's), and an
// exception of one GPU reaches both GPUs' waiters, naming the GPU it happened on.
TEST_P(SimKfdTest, TwoGpusShareTheEventPageAndSeeEachOthersFaults) {
  auto kfd2 = std::make_shared<SimKfd>(std::vector<std::string>{GetParam(), GetParam()});
  SimOs os2(std::vector<std::shared_ptr<SimDriver>>{kfd2});
  const std::vector<amd::KfdNode> nodes = amd::kfd_topology(os2);
  ASSERT_EQ(nodes.size(), 2u);
  amd::KfdGpu a(os2, nodes[0]), b(os2, nodes[1]);
  EXPECT_NE(a.event_slot_va(), 0u);
  // One event page per process, a's: b's signal event takes a slot in it (mapped on b's GPU too).
  EXPECT_EQ(b.event_slot_va() - a.event_slot_va(), (uint64_t{b.signal_event_id()} - a.signal_event_id()) * 8);
  auto q = a.create_queue(amd::KfdQueue::Type::compute_pm4, 4096);
  kfd2->inject_fault(q->queue_id(), 0xbad000, true, "test fault");
  const std::optional<amd::KfdException> ea = a.wait_exception(1000), eb = b.wait_exception(1000);
  ASSERT_TRUE(ea && eb);
  EXPECT_EQ(ea->gpu_id, a.gpu_id());
  EXPECT_EQ(eb->gpu_id, a.gpu_id()) << "b learns of a's fault, and whose it is";
  EXPECT_EQ(eb->va, 0xbad000u);
  EXPECT_FALSE(a.wait_exception(0)) << "auto-reset: delivered once";
  // A wake-up is not an exception.
  b.wake_exception_waiter();
  EXPECT_FALSE(b.wait_exception(1000));
}

INSTANTIATE_TEST_SUITE_P(Targets, SimKfdTest, ::testing::Values("gfx942", "gfx1100", "gfx1201"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace hcq::sim
