// cpu::sgemm (backends/cpu/gemm/gemm.h) against a double-precision reference, on fresh random matrices of
// shapes that cross every blocking boundary of the portable kernel (4 rows, 256 columns, a depth of
// 128, 8 partial sums) and with row strides wider than the rows. Built against each implementation
// the build has: OpenBLAS (infer_gemm_tests on Linux) and the portable kernel (infer_gemm_portable_tests
// on Linux, infer_gemm_tests on Windows).
//
// Bound: each element of C is a k-term float sum of float products plus beta * C. Any order of
// summation, with or without FMA, errs by at most gamma(k + 2) * (sum |a_ip b_pj| + |beta c_ij|),
// gamma(n) = n u / (1 - n u), u = 2^-24 (Higham, "Accuracy and Stability of Numerical Algorithms",
// 2nd ed., 3.1 and 3.5): k - 1 additions, one product, the beta term's multiplication and addition.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/gemm/gemm.h"

namespace infer::cpu {
namespace {

constexpr double kU = 1.0 / (1 << 24);

double gamma(int n) { return n * kU / (1.0 - n * kU); }

struct Case {
  Transpose b_op;
  int m, n, k;
  float beta;
};

std::string name(const Case& c) {
  return std::string(c.b_op == Transpose::Yes ? "A*B^T" : "A*B") + " m=" + std::to_string(c.m) +
         " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) + " beta=" + std::to_string(c.beta);
}

void check(const Case& c, std::mt19937& rng) {
  SCOPED_TRACE(name(c));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  // Row strides wider than the rows: the padding must be neither read into C nor written.
  const int lda = c.k + 3;
  const int ldb = (c.b_op == Transpose::Yes ? c.k : c.n) + 5;
  const int ldc = c.n + 7;
  const int b_rows = c.b_op == Transpose::Yes ? c.n : c.k;
  std::vector<float> a(static_cast<std::size_t>(c.m) * lda), b(static_cast<std::size_t>(b_rows) * ldb);
  for (float& x : a) x = dist(rng);
  for (float& x : b) x = dist(rng);
  std::vector<float> c0(static_cast<std::size_t>(c.m) * ldc);
  for (float& x : c0) x = dist(rng);
  constexpr float kPad = -1234.5f;
  for (int i = 0; i < c.m; ++i) {
    for (int j = c.n; j < ldc; ++j) c0[static_cast<std::size_t>(i) * ldc + j] = kPad;
  }
  std::vector<float> out = c0;
  // beta 0: C is write-only; NaN there must not reach the result.
  if (c.beta == 0.0f) {
    for (int i = 0; i < c.m; ++i) {
      for (int j = 0; j < c.n; ++j) out[static_cast<std::size_t>(i) * ldc + j] = std::numeric_limits<float>::quiet_NaN();
    }
  }
  sgemm(c.b_op, c.m, c.n, c.k, a.data(), lda, b.data(), ldb, c.beta, out.data(), ldc);

  int bad = 0;
  for (int i = 0; i < c.m; ++i) {
    for (int j = 0; j < ldc; ++j) {
      const std::size_t at = static_cast<std::size_t>(i) * ldc + j;
      if (j >= c.n) {
        ASSERT_EQ(out[at], kPad) << "padding of row " << i << " written at column " << j;
        continue;
      }
      double exact = 0.0, magnitude = 0.0;
      for (int p = 0; p < c.k; ++p) {
        const double x = a[static_cast<std::size_t>(i) * lda + p];
        const double y = c.b_op == Transpose::Yes ? b[static_cast<std::size_t>(j) * ldb + p]
                                                  : b[static_cast<std::size_t>(p) * ldb + j];
        exact += x * y;
        magnitude += std::fabs(x * y);
      }
      if (c.beta != 0.0f) {
        exact += static_cast<double>(c.beta) * c0[at];
        magnitude += std::fabs(static_cast<double>(c.beta) * c0[at]);
      }
      const double bound = gamma(c.k + 2) * magnitude;
      const double error = std::fabs(out[at] - exact);
      if (!(error <= bound) && ++bad <= 5) {  // !(<=): NaN fails too
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << out[at] << ", exact " << exact << ", error " << error
                      << " > bound " << bound;
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(Gemm, MatchesDoubleReferenceAcrossBlockBoundaries) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int ms[] = {1, 3, 4, 5, 9, 17};
  const int ns[] = {1, 7, 255, 256, 257, 600};
  const int ks[] = {1, 8, 9, 127, 128, 129, 300};
  for (Transpose op : {Transpose::No, Transpose::Yes}) {
    for (int m : ms) {
      for (int n : ns) {
        for (int k : ks) {
          // beta cycles through 0, 1 and 0.5 over the shapes.
          const float beta = ((m + n + k) % 3 == 0) ? 0.0f : ((m + n + k) % 3 == 1 ? 1.0f : 0.5f);
          check({op, m, n, k, beta}, rng);
        }
      }
    }
  }
}

// The shipped model's shapes: its convolutions (im2col: weights [K x C*R*S] times columns) and its
// classifier (a batch times weights transposed), each with beta 0 and 1.
TEST(Gemm, MatchesDoubleReferenceOnTheShippedModelsShapes) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (float beta : {0.0f, 1.0f}) {
    check({Transpose::No, 32, 784, 9, beta}, rng);
    check({Transpose::No, 64, 196, 288, beta}, rng);
    check({Transpose::Yes, 8, 128, 3136, beta}, rng);
    check({Transpose::Yes, 64, 10, 128, beta}, rng);
  }
}

TEST(Gemm, ThreadCountIsKept) {
  const int before = gemm_threads();
  ASSERT_GE(before, 1);
  set_gemm_threads(1);
  EXPECT_EQ(gemm_threads(), 1);
  set_gemm_threads(before);
  EXPECT_EQ(gemm_threads(), before);
  EXPECT_FALSE(gemm_library().empty());
}

}  // namespace
}  // namespace infer::cpu
