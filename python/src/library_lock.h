// The library's one rule for threads (<infer/classifier.h>): building a Classifier, and checking the
// environment, probe NVIDIA's libraries in a child process (fork), which no other thread may be
// inside the library for. Python threads work with the GIL released, so the GIL does not keep that:
// this lock does. Work (classify, run, preprocess) holds it shared, after releasing the GIL;
// building, check_environment and write_manifest hold it alone. A worker lets go of it before it
// takes the GIL back, so a builder holding the GIL while it waits here cannot deadlock with it.
#pragma once

#include <shared_mutex>

namespace infer::python {

inline std::shared_mutex& library_lock() {
  static std::shared_mutex lock;
  return lock;
}

}  // namespace infer::python
