// infer-gemm-bench: the plain kernels' sgemm (backends/cpu/gemm/gemm.h) on the shipped model's matrix
// shapes and a few larger ones, one thread, in GFLOP/s. Built twice, against OpenBLAS
// (infer-gemm-bench) and against the portable kernel of the Windows build
// (infer-gemm-bench-portable); tools/bench/bench-gemm.sh runs both in one go. A program that prints
// numbers, not a test.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/gemm/gemm.h"

namespace {

using infer::cpu::Transpose;

struct Shape {
  const char* what;
  Transpose b_op;
  int m, n, k;
};

// Median seconds of one call, over enough repeats for about 0.2 s per shape.
double seconds_per_call(const Shape& s, const std::vector<float>& a, const std::vector<float>& b,
                        std::vector<float>& c) {
  const int ldb = s.b_op == Transpose::Yes ? s.k : s.n;
  const auto once = [&] { infer::cpu::sgemm(s.b_op, s.m, s.n, s.k, a.data(), s.k, b.data(), ldb, 0.0f, c.data(), s.n); };
  once();  // warm the caches and the library
  const double flops = 2.0 * s.m * s.n * s.k;
  const int repeats = std::max(1, static_cast<int>(2e8 / flops));
  std::vector<double> times;
  for (int round = 0; round < 7; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < repeats; ++r) once();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / repeats);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main() {
  infer::cpu::set_gemm_threads(1);
  const Shape shapes[] = {
      {"conv1 (32x1x3x3 on 28x28)", Transpose::No, 32, 784, 9},
      {"conv2 (64x32x3x3 on 14x14)", Transpose::No, 64, 196, 288},
      {"fc1 (batch 8, 3136 -> 128)", Transpose::Yes, 8, 128, 3136},
      {"fc2 (batch 64, 128 -> 10)", Transpose::Yes, 64, 10, 128},
      {"square 256", Transpose::No, 256, 256, 256},
      {"square 512", Transpose::No, 512, 512, 512},
  };
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::printf("sgemm: %s, 1 thread\n", infer::cpu::gemm_library().c_str());
  std::printf("%-30s %10s %10s\n", "shape", "us/call", "GFLOP/s");
  for (const Shape& s : shapes) {
    std::vector<float> a(static_cast<std::size_t>(s.m) * s.k), b(static_cast<std::size_t>(s.k) * s.n),
        c(static_cast<std::size_t>(s.m) * s.n);
    for (float& x : a) x = dist(rng);
    for (float& x : b) x = dist(rng);
    const double t = seconds_per_call(s, a, b, c);
    std::printf("%-30s %10.1f %10.2f\n", s.what, t * 1e6, 2.0 * s.m * s.n * s.k / t / 1e9);
  }
  return 0;
}
