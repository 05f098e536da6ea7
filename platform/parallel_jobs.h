// Independent jobs on several threads, for the start-up work that would otherwise keep one core busy
// while the others wait: the ONNX import converts its initializers this way (formats/onnx_reader.cpp),
// and the oneDNN program's build creates its primitives (oneDNN JIT-compiles each) and reorders its
// weights (backends/cpu/onednn_program.cpp).
#pragma once

#include <functional>
#include <vector>

namespace infer {

// Runs every job on up to `workers` threads, the calling one among them, and returns when all have
// ended. `prepare`, where given, runs first on each thread. After a job throws, no further job starts, and the
// exception of the first job (in the list's order) that threw is rethrown. A thread that cannot be
// started leaves its share to the others.
void run_jobs(const std::vector<std::function<void()>>& jobs, int workers, const std::function<void()>& prepare = {});

// The threads such work uses: the processors this process may run on, at most 8.
int parallel_job_threads();

}  // namespace infer
