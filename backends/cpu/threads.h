// The CPU backends' thread counts: the plain kernels' (gemm.h: OpenBLAS's, or the portable
// kernel's workers) and the OpenMP runtime's (oneDNN's primitives; libgomp, which libdnnl links).
// The OpenMP calls are looked up at run time in the libgomp already loaded (openmp_threads.cpp), so
// that nothing here is compiled with -fopenmp (the sanitizer build's clang has no OpenMP runtime
// of its own). A build without oneDNN has no OpenMP runtime (no_onednn.cpp).
#pragma once

#include <string>

namespace infer::cpu {

// "1 thread", "2 threads": how the backends' descriptions say it.
inline std::string threads_string(int n) { return std::to_string(n) + (n == 1 ? " thread" : " threads"); }

// Sets both thread counts to n >= 1.
void set_threads(int n);

// The OpenMP runtime's alone; nothing without one.
void set_openmp_threads(int n);
// Gives the calling thread the count set_openmp_threads set, where one was set (OpenMP keeps a count
// per thread): what a backend calls before it runs oneDNN, on whatever thread runs it.
void apply_openmp_threads();

// The OpenMP runtime's thread count (what oneDNN uses), or 1 when no OpenMP runtime is loaded.
int onednn_threads();

// Whether someone chose the OpenMP count: set_openmp_threads (--threads, ClassifierOptions::threads)
// or OMP_NUM_THREADS in the environment. When nobody did, the oneDNN backend chooses per pass
// between every core and one (thread_choice.h).
bool openmp_threads_chosen();
// Sets the calling thread's OpenMP count alone, n >= 1 (the oneDNN backend's choice for one pass).
void use_openmp_threads_here(int n);
// The OpenMP count of the calling thread's last oneDNN pass (0 before any): what the per-pass choice
// ran, for logs and tests (a pass puts the thread's own count back when it ends).
int last_onednn_pass_threads();

// The processors OpenMP may run on (omp_get_num_procs: the affinity mask's), or 1 without OpenMP:
// "every core" for that choice.
int openmp_processors();

}  // namespace infer::cpu
