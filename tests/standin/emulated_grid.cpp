// The emulated grid of device_emulation.h: blocks in order; within a block, one fiber per thread
// when the kernel has barriers. A fiber is a stack of its own (mmap'ed once per host thread, with a
// guard page below it, and reused by every launch) and a saved stack pointer; switching saves the
// callee-saved registers on the stack being left and pops them from the one entered (x86-64 System V:
// rbx, rbp, r12-r15; no signal mask, no system call: swapcontext's sigprocmask made a 256-thread
// block's barrier cost milliseconds). Under AddressSanitizer each switch is announced to it
// (__sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber), as its documentation asks.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/standin/device.h"
#include "tests/standin/device_emulation.h"

#if !defined(__x86_64__)
#error "the emulated grid switches fibers with x86-64 code (tests/standin/emulated_grid.cpp)"
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STANDIN_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define STANDIN_ASAN 1
#endif
#ifdef STANDIN_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

// Saves the callee-saved registers on the current stack and its stack pointer in *from, then
// continues on the stack `to` (saved the same way, or prepared by new_fiber_stack).
extern "C" void standin_fiber_switch(void** from, void* to);
__asm__(
    ".text\n"
    ".globl standin_fiber_switch\n"
    ".hidden standin_fiber_switch\n"
    ".type standin_fiber_switch,@function\n"
    "standin_fiber_switch:\n"
    "  pushq %rbp\n"
    "  pushq %rbx\n"
    "  pushq %r12\n"
    "  pushq %r13\n"
    "  pushq %r14\n"
    "  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n"
    "  popq %r14\n"
    "  popq %r13\n"
    "  popq %r12\n"
    "  popq %rbx\n"
    "  popq %rbp\n"
    "  ret\n"
    ".size standin_fiber_switch,.-standin_fiber_switch\n");

namespace standin::emulated {

thread_local ThreadIndices current;

namespace {

#ifdef STANDIN_ASAN
constexpr std::size_t kStackBytes = 256 << 10;  // AddressSanitizer's redzones triple a frame
#else
constexpr std::size_t kStackBytes = 64 << 10;
#endif
constexpr unsigned kMaxThreads = 1024;  // a block's limit (kernels.cpp checks it before a launch)

enum class State { Ready, AtBarrier, Done };

struct Fiber {
  char* stack = nullptr;  // its lowest usable byte; the guard page is below
  void* sp = nullptr;
  State state = State::Done;
  void* asan_fake_stack = nullptr;
};

// One per host thread that runs kernels: its fibers' stacks, kept for the next launch.
struct Scheduler {
  std::vector<Fiber> fibers;
  void* host_sp = nullptr;  // the stack run_grid runs on, while a fiber runs
  const void* host_stack_bottom = nullptr;
  std::size_t host_stack_size = 0;
  const std::function<void()>* body = nullptr;
  const char* kernel = "";
  unsigned running = 0;
  bool barriers = false;

  ~Scheduler() {
    for (Fiber& f : fibers) {
      if (f.stack) munmap(f.stack - page(), kStackBytes + page());
    }
  }
  static std::size_t page() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }
};
thread_local Scheduler scheduler;

void announce_switch(void** fake_stack_save, const void* bottom, std::size_t size) {
#ifdef STANDIN_ASAN
  __sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
#else
  static_cast<void>(fake_stack_save);
  static_cast<void>(bottom);
  static_cast<void>(size);
#endif
}

void announce_arrival(void* fake_stack, const void** old_bottom, std::size_t* old_size) {
#ifdef STANDIN_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, old_bottom, old_size);
#else
  static_cast<void>(fake_stack);
  static_cast<void>(old_bottom);
  static_cast<void>(old_size);
#endif
}

// Back to run_grid from the running fiber; returns when run_grid resumes it (never once Done).
void yield_to_host(Fiber& f) {
  announce_switch(f.state == State::Done ? nullptr : &f.asan_fake_stack, scheduler.host_stack_bottom,
                  scheduler.host_stack_size);
  standin_fiber_switch(&f.sp, scheduler.host_sp);
  announce_arrival(f.asan_fake_stack, nullptr, nullptr);
}

// Where every fiber starts, on its own stack: the thread's body, then back to run_grid for good.
[[noreturn]] void fiber_main() {
  announce_arrival(nullptr, &scheduler.host_stack_bottom, &scheduler.host_stack_size);
  (*scheduler.body)();
  Fiber& f = scheduler.fibers[scheduler.running];
  f.state = State::Done;
  yield_to_host(f);
  standin::fail(scheduler.kernel, "an emulated thread was resumed after it returned");
}

// The stack of a new fiber: fiber_main's address where standin_fiber_switch's `ret` takes it, six
// zeroed registers below it, and the stack aligned as the ABI wants at a function's entry.
void* new_fiber_stack(char* stack) {
  auto top = reinterpret_cast<std::uintptr_t>(stack + kStackBytes) & ~std::uintptr_t{15};
  auto* slot = reinterpret_cast<void**>(top);
  *--slot = nullptr;  // fiber_main's return address: it never returns
  *--slot = reinterpret_cast<void*>(&fiber_main);
  for (int i = 0; i < 6; ++i) *--slot = nullptr;  // rbp, rbx, r12-r15
  return slot;
}

void ensure_fibers(unsigned n) {
  const std::size_t guard = Scheduler::page();
  while (scheduler.fibers.size() < n) {
    void* m =
        mmap(nullptr, kStackBytes + guard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) standin::fail(scheduler.kernel, "cannot map a stack for an emulated thread");
    mprotect(m, guard, PROT_NONE);  // an overflow faults here rather than in the next stack
    Fiber f;
    f.stack = static_cast<char*>(m) + guard;
    scheduler.fibers.push_back(f);
  }
}

void set_thread(unsigned t, dim3 block) {
  current.thread = uint3{t % block.x, t / block.x % block.y, t / (block.x * block.y)};
}

// One block's threads as fibers, phase by phase: a phase runs every ready thread until it reaches
// a barrier or returns.
void run_block_with_barriers(unsigned threads, dim3 block) {
  for (unsigned t = 0; t < threads; ++t) {
    Fiber& f = scheduler.fibers[t];
    f.sp = new_fiber_stack(f.stack);
    f.state = State::Ready;
  }
  for (unsigned phase = 0;; ++phase) {
    for (unsigned i = 0; i < threads; ++i) {
      const unsigned t = phase % 2 == 0 ? i : threads - 1 - i;
      Fiber& f = scheduler.fibers[t];
      if (f.state != State::Ready) continue;
      set_thread(t, block);
      scheduler.running = t;
      void* fake = nullptr;
      announce_switch(&fake, f.stack, kStackBytes);
      standin_fiber_switch(&scheduler.host_sp, f.sp);
      announce_arrival(fake, nullptr, nullptr);
    }
    unsigned waiting = 0;
    for (unsigned t = 0; t < threads; ++t) waiting += scheduler.fibers[t].state == State::AtBarrier ? 1 : 0;
    if (waiting == 0) return;  // every thread returned
    if (waiting != threads) {
      standin::fail(scheduler.kernel, "__syncthreads() reached by " + std::to_string(waiting) + " of " +
                                          std::to_string(threads) +
                                          " threads of a block while the others had returned: a barrier in "
                                          "divergent code");
    }
    for (unsigned t = 0; t < threads; ++t) scheduler.fibers[t].state = State::Ready;
  }
}

}  // namespace

void sync_threads() {
  if (!scheduler.barriers) {
    standin::fail(scheduler.kernel,
                  "called __syncthreads(), and the stand-in runs it without barriers: mark it as a kernel with "
                  "barriers in tests/standin/kernels.cpp");
  }
  Fiber& f = scheduler.fibers[scheduler.running];
  f.state = State::AtBarrier;
  yield_to_host(f);
}

void run_grid(const char* kernel, dim3 grid, dim3 block, bool barriers, const std::function<void()>& thread_body) {
  const unsigned threads = block.x * block.y * block.z;
  if (threads == 0 || threads > kMaxThreads) standin::fail(kernel, "an emulated block of " + std::to_string(threads));
  scheduler.kernel = kernel;
  scheduler.barriers = barriers;
  scheduler.body = &thread_body;
  if (barriers) ensure_fibers(threads);
  current.block_dim = block;
  current.grid_dim = grid;
  for (unsigned z = 0; z < grid.z; ++z) {
    for (unsigned y = 0; y < grid.y; ++y) {
      for (unsigned x = 0; x < grid.x; ++x) {
        current.block = uint3{x, y, z};
        if (barriers) {
          run_block_with_barriers(threads, block);
          continue;
        }
        for (unsigned t = 0; t < threads; ++t) {
          set_thread(t, block);
          thread_body();
        }
      }
    }
  }
  scheduler.body = nullptr;
}

}  // namespace standin::emulated
