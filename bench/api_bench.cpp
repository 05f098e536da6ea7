// infer-api-bench: the public API's Classifier::run timed per call, the C++ side of the Python
// package's per-call overhead (tools/bench/bench_python.py runs both in one run; bench/RESULTS.md).
//
//   infer-api-bench [--device cpu|gpu|auto] [--threads N] [--batch 1,64] [--seconds S]
//
// Random samples of the shipped model's input (fresh each run), one call per batch size at a time,
// after 0.2 s of warm-up; prints one JSON object: per batch size the calls timed and the p50 and p90
// of one call, in microseconds, on the host's steady clock. A program that prints numbers, not a test.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "infer/infer.h"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<int> parse_batches(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) out.push_back(std::stoi(part));
  return out;
}

// `text` as a JSON string's contents (the backend's description: quotes and backslashes escaped).
std::string json_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = "cpu", batches_text = "1,64";
  int threads = 0;
  double seconds = 2.0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--device" && has_value) {
      device = argv[++i];
    } else if (arg == "--threads" && has_value) {
      threads = std::stoi(argv[++i]);
    } else if (arg == "--batch" && has_value) {
      batches_text = argv[++i];
    } else if (arg == "--seconds" && has_value) {
      seconds = std::stod(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: infer-api-bench [--device cpu|gpu|auto] [--threads N] [--batch 1,64] [--seconds S]\n");
      return 2;
    }
  }
  try {
    const std::vector<int> batches = parse_batches(batches_text);
    infer::ClassifierOptions options;
    options.device = device == "gpu" ? infer::Device::Gpu : device == "auto" ? infer::Device::Auto : infer::Device::Cpu;
    options.threads = threads;
    options.max_batch = *std::max_element(batches.begin(), batches.end());
    infer::Classifier classifier({}, options);
    std::mt19937 rng(std::random_device{}());
    std::normal_distribution<float> normal;
    std::printf("{\"backend\":\"%s\",\"results\":[", json_escaped(classifier.backend()).c_str());
    for (std::size_t b = 0; b < batches.size(); ++b) {
      const int n = batches[b];
      std::vector<float> x(static_cast<std::size_t>(n) * classifier.input_size());
      for (float& v : x) v = normal(rng);
      std::vector<float> y(static_cast<std::size_t>(n) * classifier.output_size());
      const auto run = [&] { classifier.run(x.data(), n, y.data()); };
      for (const Clock::time_point warm = Clock::now(); Clock::now() - warm < std::chrono::milliseconds(200);) run();
      std::vector<double> us;
      for (const Clock::time_point start = Clock::now();
           Clock::now() - start < std::chrono::duration<double>(seconds) || us.size() < 5;) {
        const Clock::time_point t = Clock::now();
        run();
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count());
      }
      std::printf("%s{\"batch\":%d,\"calls\":%zu,\"p50_us\":%.3f,\"p90_us\":%.3f}", b ? "," : "", n, us.size(),
                  percentile(us, 50), percentile(us, 90));
    }
    std::printf("]}\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "infer-api-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
