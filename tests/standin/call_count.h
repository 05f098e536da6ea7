// Call counting (test infrastructure): each stand-in library counts the calls made to its NVIDIA
// entry points, by name, so that a test can hold a piece of the product to a budget of host calls
// (the planning-call budget in tests/backends/cudnn/test_gpu_backend.cpp). Every entry point starts
// with STANDIN_COUNT_CALL(); each library exports its counts as infer_standin_<library>_calls(name):
// the calls of that name so far, or of every name when name is NULL.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace standin::counting {

class CallCounts {
 public:
  void add(const char* name) {
    const std::lock_guard<std::mutex> lock(mutex_);
    ++by_name_[name];
    ++total_;
  }
  std::uint64_t of(const char* name) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (name == nullptr) return total_;
    const auto it = by_name_.find(name);
    return it == by_name_.end() ? 0 : it->second;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::uint64_t> by_name_;
  std::uint64_t total_ = 0;
};

// This library's counts. Hidden: libcudart, libcudnn and libcuda each keep their own, and one
// library's symbol must never interpose another's.
__attribute__((visibility("hidden"))) CallCounts& library_calls();

}  // namespace standin::counting

#define STANDIN_COUNT_CALL() ::standin::counting::library_calls().add(__func__)

// Defines library_calls() and the exported query of one library (in one source file of it).
#define STANDIN_DEFINE_CALL_COUNTS(query)                                                        \
  namespace standin::counting {                                                                  \
  CallCounts& library_calls() {                                                                  \
    static CallCounts counts;                                                                    \
    return counts;                                                                               \
  }                                                                                              \
  }                                                                                              \
  extern "C" __attribute__((visibility("default"))) std::uint64_t query(const char* name) {      \
    return ::standin::counting::library_calls().of(name);                                        \
  }
