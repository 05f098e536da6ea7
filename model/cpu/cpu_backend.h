// The CPU backend: the reference every other backend is tested against.
#pragma once

#include <memory>

#include "../backend.h"

namespace infer {

// Plans the network for up to max_batch samples and allocates every activation and scratch
// buffer now. The network must outlive the backend. Uses OpenBLAS with its default thread count
// (OPENBLAS_NUM_THREADS or the number of cores).
std::unique_ptr<Backend> make_cpu_backend(const Network& network, int max_batch);

}  // namespace infer
