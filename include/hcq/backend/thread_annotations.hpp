// Clang's thread-safety analysis (-Wthread-safety): which mutex guards which member, checked at compile time when
// the compiler is clang (scripts/test.sh runs that check); other compilers see empty macros.
// Nothing here owns anything but its own std::mutex.
#pragma once

#include <mutex>

#if defined(__clang__)
#define HCQ_TSA(x) __attribute__((x))
#else
#define HCQ_TSA(x)
#endif

#define HCQ_CAPABILITY(name) HCQ_TSA(capability(name))
#define HCQ_SCOPED_CAPABILITY HCQ_TSA(scoped_lockable)
#define HCQ_GUARDED_BY(m) HCQ_TSA(guarded_by(m))
#define HCQ_REQUIRES(...) HCQ_TSA(requires_capability(__VA_ARGS__))
#define HCQ_EXCLUDES(...) HCQ_TSA(locks_excluded(__VA_ARGS__))
#define HCQ_ACQUIRE(...) HCQ_TSA(acquire_capability(__VA_ARGS__))
#define HCQ_RELEASE(...) HCQ_TSA(release_capability(__VA_ARGS__))
#define HCQ_TRY_ACQUIRE(...) HCQ_TSA(try_acquire_capability(__VA_ARGS__))
#define HCQ_ASSERT_HELD(m) HCQ_TSA(assert_capability(m))
// For a function that hands a held lock to an object (Device::reserve_timeline): the analysis follows locks within
// one function only.
#define HCQ_HANDS_OFF_LOCK HCQ_TSA(no_thread_safety_analysis)

namespace hcq {

// std::mutex with the annotations the analysis needs (libstdc++'s own carries none).
class HCQ_CAPABILITY("mutex") Mutex {
 public:
  void lock() HCQ_ACQUIRE() { m_.lock(); }
  void unlock() HCQ_RELEASE() { m_.unlock(); }
  bool try_lock() HCQ_TRY_ACQUIRE(true) { return m_.try_lock(); }
  // For code the analysis cannot follow (a lock held by an object handed between functions): states that the
  // caller holds it.
  void assert_held() const HCQ_ASSERT_HELD(this) {}

 private:
  std::mutex m_;
};

// std::lock_guard for Mutex, visible to the analysis.
class HCQ_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& m) HCQ_ACQUIRE(m) : m_(m) { m_.lock(); }
  ~MutexLock() HCQ_RELEASE() { m_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& m_;
};

}  // namespace hcq
