// infer-bench: throughput and latency of a backend on real Fashion-MNIST test images.
//
//   infer-bench [--model PATH] [--device cpu|gpu] [--precision fp32|tf32|fp16] [--autotune]
//               [--batch 1,64,1024] [--threads N] [--json]
//
// For each batch size: warm-up, then timed forward passes over rotating slices of the 10k test
// images (already decoded and normalised: this measures the network, not PNG decoding), reported
// as images/second and per-batch latency percentiles (steady clock around Backend::forward, which
// returns when the results are in host memory). Also: start-up (model load + backend build +
// first batch, from main), top-1 accuracy of the backend at its precision on the 10k images, and
// the process's peak resident memory. A program that prints numbers, not a test: compare with a
// peer measured in the same run (tools/bench_peers.py).
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "model/cpu/cpu_backend.h"
#include "model/errors.h"
#include "model/gpu_backend.h"
#include "model/image.h"
#include "model/model_file.h"
#include "tests/fashion_mnist.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const std::size_t i = std::min(v.size() - 1, static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size())));
  return v[i];
}

// Peak resident memory of this program: VmHWM, which starts afresh at exec (getrusage's
// ru_maxrss does not: run from Python, it would report the parent's peak at fork).
double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // "VmHWM:   56764 kB"
  }
  return 0.0;
}

struct Result {
  int batch = 0;
  int iterations = 0;
  double images_per_s = 0, p50 = 0, p90 = 0, p99 = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const Clock::time_point start = Clock::now();
  std::string model_path = std::string(INFER_SOURCE_DIR) + "/weights/fashion.toml";
  std::string device = "cpu";
  std::vector<int> batches{1, 64, 1024};
  int threads = 0;
  double seconds = 2.0;
  bool json = false;
  infer::Precision precision = infer::Precision::Fp32;
  bool autotune = false;
  CLI::App cli{"infer-bench: images/second and latency of the infer engine on Fashion-MNIST test images"};
  cli.add_option("--model", model_path, "Model TOML");
  cli.add_option("--device", device, "cpu or gpu")->check(CLI::IsMember({"cpu", "gpu"}));
  cli.add_option("--batch", batches, "Batch sizes")->delimiter(',')->check(CLI::Range(1, 65536));
  cli.add_option("--threads", threads, "CPU threads for OpenBLAS (default: OpenBLAS's own, all cores)");
  cli.add_option("--seconds", seconds, "Timed seconds per batch size (after warm-up)")->check(CLI::Range(0.1, 600.0));
  const std::map<std::string, infer::Precision> precisions{
      {"fp32", infer::Precision::Fp32}, {"tf32", infer::Precision::Tf32}, {"fp16", infer::Precision::Fp16}};
  cli.add_option("--precision", precision, "GPU arithmetic: fp32, tf32 or fp16 (the CPU runs fp32 only)")
      ->transform(CLI::CheckedTransformer(precisions).description(""))
      ->type_name("fp32|tf32|fp16");
  cli.add_flag("--autotune", autotune, "GPU: measure the convolution algorithms (cached; see infer --autotune)");
  cli.add_flag("--json", json, "One JSON object on stdout");
  CLI11_PARSE(cli, argc, argv);
  if (device == "cpu" && precision != infer::Precision::Fp32) {
    std::cerr << "infer-bench: --precision " << infer::precision_name(precision) << " needs --device gpu\n";
    return 2;
  }
  if (threads > 0) openblas_set_num_threads(threads);

  try {
    const infer::test::FashionMnist data = infer::test::load_fashion_mnist_test();
    const infer::LoadedModel model = infer::load_model(model_path);
    const infer::Network& net = model.network;
    const std::size_t sample = net.input().dims.size();
    const std::size_t classes = net.output_dims().size();
    std::vector<float> inputs(static_cast<std::size_t>(data.count) * sample);
    for (int i = 0; i < data.count; ++i) {
      infer::Image img{28, 28, 1, std::vector<float>(784)};
      for (int j = 0; j < 784; ++j) img.pixels[j] = data.images[static_cast<std::size_t>(i) * 784 + j] / 255.0f;
      infer::preprocess(img, net.input(), infer::InvertMode::No, inputs.data() + static_cast<std::size_t>(i) * sample);
    }
    const int max_batch = std::min(*std::max_element(batches.begin(), batches.end()), data.count);

    const Clock::time_point build = Clock::now();
    infer::GpuOptions options;
    options.precision = precision;
    options.autotune = autotune;
    auto backend =
        device == "gpu" ? infer::make_gpu_backend(net, max_batch, options) : infer::make_cpu_backend(net, max_batch);
    std::vector<float> out(static_cast<std::size_t>(max_batch) * classes);
    backend->forward(inputs.data(), 1, out.data());
    const double startup_ms = ms_since(start), first_result_ms = ms_since(build);

    // Accuracy of this backend on all test images, at the largest batch size.
    int correct = 0;
    for (int i = 0; i < data.count; i += max_batch) {
      const int n = std::min(max_batch, data.count - i);
      backend->forward(inputs.data() + static_cast<std::size_t>(i) * sample, n, out.data());
      for (int k = 0; k < n; ++k) {
        const float* p = out.data() + static_cast<std::size_t>(k) * classes;
        correct += std::max_element(p, p + classes) - p == data.labels[static_cast<std::size_t>(i + k)];
      }
    }

    std::vector<Result> results;
    for (int batch : batches) {
      batch = std::min(batch, data.count);
      Result r;
      r.batch = batch;
      int offset = 0;
      auto next_slice = [&] {
        if (offset + batch > data.count) offset = 0;
        const float* p = inputs.data() + static_cast<std::size_t>(offset) * sample;
        offset += batch;
        return p;
      };
      const Clock::time_point warm = Clock::now();
      while (ms_since(warm) < 200.0) backend->forward(next_slice(), batch, out.data());
      std::vector<double> lat;
      const Clock::time_point timed = Clock::now();
      while (ms_since(timed) < seconds * 1000.0 || lat.size() < 5) {
        const float* in = next_slice();
        const Clock::time_point t = Clock::now();
        backend->forward(in, batch, out.data());
        lat.push_back(ms_since(t));
      }
      double total = 0;
      for (double l : lat) total += l;
      r.iterations = static_cast<int>(lat.size());
      r.images_per_s = batch * static_cast<double>(lat.size()) / (total / 1000.0);
      r.p50 = percentile(lat, 50), r.p90 = percentile(lat, 90), r.p99 = percentile(lat, 99);
      results.push_back(r);
    }

    const double accuracy = static_cast<double>(correct) / data.count;
    if (json) {
      nlohmann::json j{{"engine", "infer"},
                       {"device", device},
                       {"backend", backend->description()},
                       {"precision", infer::precision_name(precision)},
                       {"startup_ms", startup_ms},
                       {"first_result_ms", first_result_ms},
                       {"accuracy", accuracy},
                       {"peak_rss_mib", peak_rss_mib()},
                       {"results", nlohmann::json::array()}};
      for (const Result& r : results) {
        j["results"].push_back({{"batch", r.batch}, {"iterations", r.iterations}, {"images_per_s", r.images_per_s},
                                {"p50_ms", r.p50}, {"p90_ms", r.p90}, {"p99_ms", r.p99}});
      }
      std::cout << j.dump() << '\n';
      return 0;
    }
    std::printf("infer-bench: %s, model %s, %s\n", backend->description().c_str(), net.name().c_str(),
                infer::precision_name(precision));
    std::printf("start-up %.1f ms (model load + backend build + first batch; backend build + first batch %.1f ms), "
                "top-1 accuracy %.4f on %d images, peak RSS %.1f MiB\n",
                startup_ms, first_result_ms, accuracy, data.count, peak_rss_mib());
    std::printf("%6s %10s %12s %10s %10s %10s\n", "batch", "iters", "images/s", "p50 ms", "p90 ms", "p99 ms");
    for (const Result& r : results) {
      std::printf("%6d %10d %12.1f %10.3f %10.3f %10.3f\n", r.batch, r.iterations, r.images_per_s, r.p50, r.p90, r.p99);
    }
    std::printf("(host-to-device and device-to-host times apply to --device gpu and are not split out yet)\n");
  } catch (const infer::Error& e) {
    std::cerr << "infer-bench: " << e.what() << '\n';
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "infer-bench: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
