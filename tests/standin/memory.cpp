// Device and pinned allocations of the stand-in, and the pointer checks of device.h.
//
// Device memory is host memory from aligned_alloc, registered by start address. New allocations are
// filled with 0xFF bytes (a NaN in float and half): real device memory starts with whatever was there,
// and a caller that reads what it never wrote must not get zeros by luck. Freed blocks stay in a
// quarantine (up to kQuarantineBytes) before the host allocator gets them back, so that a freed
// address is not reused at once and a use after free is reported as one.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>

#include "tests/standin/state.h"

namespace standin {
namespace detail {
namespace {

constexpr std::size_t kAlignment = 256;  // cudaMalloc's documented minimum alignment
constexpr std::size_t kQuarantineBytes = std::size_t{1} << 30;

struct Registry {
  std::map<std::uintptr_t, Allocation> live;
  std::deque<Allocation> freed;  // oldest first
  std::size_t quarantined = 0;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: frees may come from static destructors
  return *r;
}

const Allocation* containing(const std::map<std::uintptr_t, Allocation>& m, std::uintptr_t a) {
  auto it = m.upper_bound(a);
  if (it == m.begin()) return nullptr;
  --it;
  const Allocation& x = it->second;
  return a < x.start + std::max<std::size_t>(x.bytes, 1) ? &x : nullptr;
}

const char* kind_name(MemoryKind k) { return k == MemoryKind::Device ? "device memory" : "pinned host memory"; }

}  // namespace

std::recursive_mutex& big_lock() {
  static std::recursive_mutex* m = new std::recursive_mutex;
  return *m;
}

const Allocation* find_allocation(const void* p) {
  return containing(registry().live, reinterpret_cast<std::uintptr_t>(p));
}

void* allocate(std::size_t bytes, MemoryKind kind) {
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (!p) return nullptr;
  std::memset(p, 0xFF, rounded);
  Registry& r = registry();
  const auto start = reinterpret_cast<std::uintptr_t>(p);
  r.live[start] = Allocation{start, bytes, kind};
  return p;
}

bool release(void* p, MemoryKind kind) {
  Registry& r = registry();
  const auto start = reinterpret_cast<std::uintptr_t>(p);
  auto it = r.live.find(start);
  if (it == r.live.end() || it->second.kind != kind) return false;
  const Allocation a = it->second;
  r.live.erase(it);
  std::memset(p, 0xFF, std::max<std::size_t>(a.bytes, 1));  // stale reads see NaN, not old values
  r.freed.push_back(a);
  r.quarantined += a.bytes;
  while (r.quarantined > kQuarantineBytes && r.freed.size() > 1) {
    const Allocation old = r.freed.front();
    r.freed.pop_front();
    r.quarantined -= old.bytes;
    std::free(reinterpret_cast<void*>(old.start));
  }
  return true;
}

std::string describe_pointer(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (!p) return "a null pointer";
  Registry& r = registry();
  if (const Allocation* live = containing(r.live, a)) {
    char text[160];
    std::snprintf(text, sizeof text, "%s (an allocation of %zu bytes at offset %" PRIuPTR ")", kind_name(live->kind),
                  live->bytes, a - live->start);
    return text;
  }
  for (auto it = r.freed.rbegin(); it != r.freed.rend(); ++it) {
    if (a >= it->start && a < it->start + std::max<std::size_t>(it->bytes, 1)) {
      return std::string("freed ") + kind_name(it->kind) + " (use after free)";
    }
  }
  return "a host pointer (not from cudaMalloc)";
}

}  // namespace detail

void fail(const char* call, const std::string& problem) {
  std::fprintf(stderr, "infer CPU stand-in: %s: %s\n", call, problem.c_str());
  std::fflush(stderr);
  std::abort();
}

void require_device(const char* call, const Range& r) {
  const detail::Guard guard(detail::big_lock());
  if (!r.p && r.bytes == 0) return;
  const detail::Allocation* a = detail::find_allocation(r.p);
  if (!a || a->kind != detail::MemoryKind::Device) {
    fail(call, std::string("argument '") + r.arg + "' is not device memory: " + detail::describe_pointer(r.p));
  }
  const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(r.p);
  if (begin - a->start + r.bytes > a->bytes) {
    char text[256];
    std::snprintf(text, sizeof text,
                  "argument '%s' out of bounds: %zu bytes from offset %" PRIuPTR
                  " of a %zu-byte allocation "
                  "(%zu bytes past its end)",
                  r.arg, r.bytes, begin - a->start, a->bytes, begin - a->start + r.bytes - a->bytes);
    fail(call, text);
  }
}

void require_host(const char* call, const void* p, const char* arg) {
  const detail::Guard guard(detail::big_lock());
  if (!p) fail(call, std::string("argument '") + arg + "' is a null pointer");
  const detail::Allocation* a = detail::find_allocation(p);
  if (a && a->kind == detail::MemoryKind::Device) {
    fail(call, std::string("argument '") + arg + "' must be host memory but is " + detail::describe_pointer(p));
  }
}

}  // namespace standin
