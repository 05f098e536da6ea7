// The torchvision conformance data (tools/train/torchvision_conformance.py): per model an ONNX file, its
// inputs and ONNX Runtime's outputs, and the comparison both backends' tests make with them.
//
// Bound: ONNX Runtime and infer both compute in float32 from the same weights. These networks are
// too deep for reference.h's worst case (it passes 1e20), so the bound is its probabilistic one:
// each side's error has variance at most V (computed in double for the first `referenced`
// inputs), the two are independent, so |infer - ort| <= lambda sqrt(2 V) + u |ort| (the stored
// output rounded once more), lambda = 6.
// PyTorch's own outputs (the module before export) are held to the same bound: an export that
// changed the network cannot pass.
// Top-1: on every input, infer's best class must be ONNX Runtime's, or one whose ONNX Runtime
// score is within the largest tolerance of the referenced inputs of ONNX Runtime's best (a tie the
// arithmetic cannot order).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "formats/model_file.h"
#include "tests/support/reference.h"
#include "tests/support/test_util.h"

namespace infer::test {

struct ConformanceModel {
  std::string name;
  std::string onnx;  // path
  int classes = 0;
  int size = 0;              // input height and width
  int count = 0;             // inputs
  std::vector<float> input;  // count x 3 x size x size
  std::vector<float> ort;    // count x classes
  std::vector<float> torch;  // count x classes: PyTorch's outputs, the exporter's ground truth
};

// The data under $INFER_CONFORMANCE_DIR, else INFER_DEFAULT_CONFORMANCE_DIR where the target
// compiles one in (CTest's fixture makes it, tests/CMakeLists.txt); an empty list and a test
// failure when it is missing.
inline std::vector<ConformanceModel> conformance_models() {
  const char* dir = std::getenv("INFER_CONFORMANCE_DIR");
#ifdef INFER_DEFAULT_CONFORMANCE_DIR
  if (dir == nullptr || *dir == '\0') dir = INFER_DEFAULT_CONFORMANCE_DIR;
#endif
  if (dir == nullptr || *dir == '\0') {
    ADD_FAILURE() << "INFER_CONFORMANCE_DIR is not set: run through ctest (its fixture runs "
                     "tools/train/torchvision_conformance.py), or set it to that script's output folder";
    return {};
  }
  const std::string root = dir;
  std::ifstream f(root + "/conformance.json");
  if (!f) {
    ADD_FAILURE() << root << "/conformance.json is missing: run tools/train/torchvision_conformance.py " << root;
    return {};
  }
  const nlohmann::json j = nlohmann::json::parse(f);
  std::vector<ConformanceModel> out;
  for (const auto& m : j["models"]) {
    ConformanceModel c;
    c.name = m["name"];
    c.onnx = root + "/" + c.name + ".onnx";
    c.classes = m["classes"];
    c.size = j["size"];
    c.count = j["count"];
    auto read = [&](const std::string& path, std::size_t n) {
      std::vector<float> v(n);
      std::ifstream in(path, std::ios::binary);
      in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(float)));
      if (!in) ADD_FAILURE() << path << " is shorter than " << n << " floats";
      return v;
    };
    c.input = read(root + "/" + c.name + ".input.bin", static_cast<std::size_t>(c.count) * 3 * c.size * c.size);
    c.ort = read(root + "/" + c.name + ".ort.bin", static_cast<std::size_t>(c.count) * c.classes);
    c.torch = read(root + "/" + c.name + ".torch.bin", static_cast<std::size_t>(c.count) * c.classes);
    out.push_back(std::move(c));
  }
  return out;
}

struct ConformanceResult {
  double max_diff = 0.0;       // over the referenced inputs
  double max_tolerance = 0.0;  // the largest 2 E + u |y| there
  double worst_ratio = 0.0;    // max over elements of |diff| / tolerance
  int top1_agree = 0;          // inputs whose best class is ONNX Runtime's
  int top1_ties = 0;           // inputs whose best class differs within the tolerance
  int inputs = 0;
};

// Runs `backend` on the first `inputs` inputs of `m` (batches of up to backend.max_batch()) and
// compares with ONNX Runtime: every output of the first `referenced` inputs within the bound, the
// best class of every input.
inline ConformanceResult compare_with_ort(const ConformanceModel& m, const Network& net, Backend& backend, int inputs,
                                          int referenced) {
  ConformanceResult r;
  r.inputs = inputs;
  const std::size_t in_size = static_cast<std::size_t>(3) * m.size * m.size;
  const std::size_t k = static_cast<std::size_t>(m.classes);
  std::vector<float> got(static_cast<std::size_t>(inputs) * k);
  for (int first = 0; first < inputs; first += backend.max_batch()) {
    const int n = std::min(backend.max_batch(), inputs - first);
    backend.forward(m.input.data() + static_cast<std::size_t>(first) * in_size, n,
                    got.data() + static_cast<std::size_t>(first) * k, net.layers().size());
  }
  for (int s = 0; s < referenced; ++s) {
    const std::vector<float> one(m.input.begin() + static_cast<std::ptrdiff_t>(s * in_size),
                                 m.input.begin() + static_cast<std::ptrdiff_t>((s + 1) * in_size));
    // The CPU backend: Winograd where it has it (cpu_winograd()).
    const bool winograd = std::string(backend.device()) == "cpu" && cpu_winograd();
    const ReferenceTensor ref = reference_forward(net, one, 1, net.layers().size(), winograd).back();
    std::vector<double> want(k), tolerance(k), from_torch(k);
    std::vector<float> mine(got.begin() + static_cast<std::ptrdiff_t>(s * k),
                            got.begin() + static_cast<std::ptrdiff_t>((s + 1) * k));
    for (std::size_t i = 0; i < k; ++i) {
      const double ort = m.ort[s * k + i];
      want[i] = ort;
      from_torch[i] = m.torch[s * k + i];
      tolerance[i] = kLambda * std::sqrt(2.0 * ref.variance[i]) + kFloatEps * std::fabs(ort);
      const double diff = std::fabs(static_cast<double>(mine[i]) - ort);
      r.max_diff = std::max(r.max_diff, diff);
      r.max_tolerance = std::max(r.max_tolerance, tolerance[i]);
      r.worst_ratio = std::max(r.worst_ratio, diff / tolerance[i]);
    }
    expect_close(mine, want, tolerance, m.name + " input " + std::to_string(s) + " against ONNX Runtime");
    expect_close(mine, from_torch, tolerance, m.name + " input " + std::to_string(s) + " against PyTorch");
  }
  for (int s = 0; s < inputs; ++s) {
    const float* mine = got.data() + static_cast<std::size_t>(s) * k;
    const float* ort = m.ort.data() + static_cast<std::size_t>(s) * k;
    const std::size_t a = static_cast<std::size_t>(std::max_element(mine, mine + k) - mine);
    const std::size_t b = static_cast<std::size_t>(std::max_element(ort, ort + k) - ort);
    if (a == b) {
      ++r.top1_agree;
    } else if (std::fabs(static_cast<double>(ort[b]) - ort[a]) <= r.max_tolerance) {
      ++r.top1_ties;
    } else {
      ADD_FAILURE() << m.name << " input " << s << ": best class " << a << " (" << mine[a] << "), ONNX Runtime's " << b
                    << " (" << ort[b] << "; it scores " << a << " at " << ort[a] << ")";
    }
  }
  std::cout << "[ conformance ] " << m.name << " " << backend.device() << ": max |infer - ort| " << r.max_diff
            << " (bound " << r.max_tolerance << ", worst element at " << r.worst_ratio << " of its bound) over "
            << referenced << " input(s); top-1 " << r.top1_agree << "/" << r.inputs << " agree, " << r.top1_ties
            << " within the bound\n";
  return r;
}

}  // namespace infer::test
