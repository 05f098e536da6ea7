// infer-bench: throughput and latency of a backend on real Fashion-MNIST test images.
//
//   infer-bench [--model PATH] [--device cpu|gpu] [--precision fp32|tf32|fp16] [--autotune]
//               [--batch 1,64,1024] [--threads N] [--cpu-kernels onednn|plain] [--top-k K] [--data DIR] [--json]
//
// The model defaults to the shipped one (<exe_dir>/../share/infer, platform/install_layout.h); the test
// images are read from --data DIR, else $FASHION_MNIST_DIR, else Debian's
// /usr/share/datasets/fashion-mnist (dataset-fashion-mnist).
//
// For each batch size: warm-up, then timed passes (Backend::top_k with --top-k, default 3, as infer
// does: host images in, k classes per image out; or Backend::forward) over rotating slices of the 10k test
// images (already decoded and normalised: this measures the network, not PNG decoding), reported
// as images/second and per-batch latency percentiles: end to end on the host's steady clock around
// the call, which returns when the results are in host memory ("host"; p50_ms, p90_ms,
// p99_ms in JSON, what tools/bench/bench_peers.py compares), and on the GPU also the device's own time
// from CUDA events (Backend::last_timing: "device" p50/p90/p99, and the p50 of the host-to-device
// copy, the compute between the copies and the device-to-host copy). Also: start-up (model load +
// backend build + first batch, from main) and its breakdown (startup_breakdown: on the GPU, the
// module load, CUDA context, cuDNN handle, plan, buffers and each convolution's algorithm choice;
// JSON startup_phases), top-1 accuracy of the backend at its precision on the
// 10k images (--no-accuracy skips it: at batch 1 on the CPU stand-in it takes minutes), and the process's peak resident
// memory. A program that prints numbers, not a test: compare with a peer measured in the same run
// (tools/bench/bench_peers.py).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/threads.h"
#include "infer/errors.h"
#include "backends/gpu_backend.h"
#include "image/image.h"
#include "platform/install_layout.h"
#include "formats/model_file.h"
#include "image/preprocess.h"
#include "tests/support/fashion_mnist.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Start-up from the process's start to the first result, in order: what came before the backend
// (the model and the test images: this program's, not the engine's), the backend's own phases
// (Backend::startup_phases; none on the CPU), what its build took beyond them, and the first batch
// of one image. The rows add up to the whole.
std::vector<infer::StartupPhase> startup_breakdown(const std::vector<infer::StartupPhase>& backend_phases,
                                                   double before_ms, double build_ms, double first_batch_ms) {
  std::vector<infer::StartupPhase> out{{"before the backend: model load, test images", before_ms}};
  double timed = 0.0;
  for (const infer::StartupPhase& phase : backend_phases) {
    out.push_back(phase);
    timed += phase.ms;
  }
  out.push_back(
      {backend_phases.empty() ? "backend build" : "backend build, the rest", std::max(0.0, build_ms - timed)});
  out.push_back({"first batch (n = 1)", first_batch_ms});
  return out;
}

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

// Percentiles of the device's time per batch (Backend::last_timing), in ms.
struct DeviceLatency {
  double p50 = 0, p90 = 0, p99 = 0;                  // device_ms: input copy start to result copy end
  double h2d_p50 = 0, compute_p50 = 0, d2h_p50 = 0;  // each part's own median
};

struct Result {
  int batch = 0;
  int iterations = 0;
  double images_per_s = 0, p50 = 0, p90 = 0, p99 = 0;  // host, end to end
  std::optional<DeviceLatency> device;                 // GPU only
};

}  // namespace

int main(int argc, char** argv) {
  const Clock::time_point start = Clock::now();
  std::string model_path = infer::default_model_path().string();
  std::string data_dir = infer::test::fashion_mnist_dir();
  std::string device = "cpu";
  std::vector<int> batches{1, 64, 1024};
  int threads = 0;
  double seconds = 2.0;
  bool json = false;
  infer::Precision precision = infer::Precision::Fp32;
  bool autotune = false;
  CLI::App cli{"infer-bench: images/second and latency of the infer engine on Fashion-MNIST test images"};
  cli.add_option("--model", model_path, "Model TOML (default: the shipped model)");
  cli.add_option("--data", data_dir,
                 "Folder with the Fashion-MNIST t10k-*-ubyte.gz files (default: $FASHION_MNIST_DIR, else "
                 "/usr/share/datasets/fashion-mnist)");
  cli.add_option("--device", device, "cpu or gpu")->check(CLI::IsMember({"cpu", "gpu"}));
  cli.add_option("--batch", batches, "Batch sizes")->delimiter(',')->check(CLI::Range(1, 65536));
  cli.add_option("--threads", threads, "CPU threads for OpenBLAS and oneDNN's OpenMP (default: their own, all cores)");
  std::string cpu_kernels = "onednn";
  cli.add_option("--cpu-kernels", cpu_kernels,
                 "CPU backend kernels: onednn (the default; ONEDNN_MAX_CPU_ISA caps its ISA), onednn-direct "
                 "(no Winograd) or plain (im2col + OpenBLAS)")
      ->check(CLI::IsMember({"onednn", "onednn-direct", "plain"}));
  cli.add_option("--seconds", seconds, "Timed seconds per batch size (after warm-up)")->check(CLI::Range(0.1, 600.0));
  const std::map<std::string, infer::Precision> precisions{
      {"fp32", infer::Precision::Fp32}, {"tf32", infer::Precision::Tf32}, {"fp16", infer::Precision::Fp16}};
  cli.add_option("--precision", precision, "GPU arithmetic: fp32, tf32 or fp16 (the CPU runs fp32 only)")
      ->transform(CLI::CheckedTransformer(precisions).description(""))
      ->type_name("fp32|tf32|fp16");
  cli.add_flag("--autotune", autotune, "GPU: measure the convolution algorithms (cached; see infer --autotune)");
  int top_k = 3;
  cli.add_option("--top-k", top_k,
                 "Time Backend::top_k with this k, as infer does (host images in, k classes per image out); "
                 "0: Backend::forward, every output back")
      ->check(CLI::Range(0, 1000))
      ->default_val(3);
  cli.add_flag("--json", json, "One JSON object on stdout");
  bool no_accuracy = false;
  cli.add_flag("--no-accuracy", no_accuracy, "Skip the top-1 accuracy pass over the test images");
  CLI11_PARSE(cli, argc, argv);
  if (device == "cpu" && precision != infer::Precision::Fp32) {
    std::cerr << "infer-bench: --precision " << infer::precision_name(precision) << " needs --device gpu\n";
    return 2;
  }
  if (threads > 0) infer::cpu::set_threads(threads);

  try {
    const infer::test::FashionMnist data = infer::test::load_fashion_mnist_test(data_dir);
    const infer::LoadedModel model = infer::load_model(model_path);
    const infer::Network& net = model.network;
    const std::size_t sample = net.input().dims.size();
    const std::size_t classes = net.output_dims().size();
    // Every test image for the shipped model; for large inputs (a 224x224 RGB model: 600 KB per
    // image) the first 256, so that the prepared inputs stay within a few hundred MB.
    const int count = sample > 4096 ? std::min(data.count, 256) : data.count;
    std::vector<float> inputs(static_cast<std::size_t>(count) * sample);
    infer::InputSpec spec = net.input();
    spec.preprocessing.invert = infer::InvertMode::No;  // the test set is as the model was trained on
    // A model of three input channels (an ImageNet architecture) gets each grey image as RGB: the
    // speed is the point there, not the accuracy.
    const int channels = net.input().dims.c == 3 ? 3 : 1;
    for (int i = 0; i < count; ++i) {
      infer::Image img{28, 28, channels, std::vector<float>(static_cast<std::size_t>(784 * channels))};
      for (int j = 0; j < 784 * channels; ++j) {
        img.pixels[static_cast<std::size_t>(j)] =
            data.images[static_cast<std::size_t>(i) * 784 + j / channels] / 255.0f;
      }
      infer::preprocess(img, spec, inputs.data() + static_cast<std::size_t>(i) * sample);
    }
    const int max_batch = std::min(*std::max_element(batches.begin(), batches.end()), count);

    const Clock::time_point build = Clock::now();
    infer::GpuOptions options;
    options.precision = precision;
    options.autotune = autotune;
    auto backend = device == "gpu"
                       ? infer::make_gpu_backend(net, max_batch, options)
                       : infer::make_cpu_backend(net, max_batch,
                                                 infer::CpuOptions{cpu_kernels == "plain" ? infer::CpuKernels::Plain
                                                                                          : infer::CpuKernels::Onednn,
                                                                   cpu_kernels == "onednn"});
    std::vector<float> out(static_cast<std::size_t>(max_batch) * classes);
    const double built_ms = ms_since(build);
    const Clock::time_point first = Clock::now();
    backend->forward(inputs.data(), 1, out.data());
    const double first_batch_ms = ms_since(first);
    const double startup_ms = ms_since(start), first_result_ms = ms_since(build);
    const std::vector<infer::StartupPhase> phases =
        startup_breakdown(backend->startup_phases(), std::chrono::duration<double, std::milli>(build - start).count(),
                          built_ms, first_batch_ms);

    // Accuracy of this backend on all test images, at the largest batch size.
    int correct = 0;
    for (int i = 0; i < count && !no_accuracy; i += max_batch) {
      const int n = std::min(max_batch, count - i);
      backend->forward(inputs.data() + static_cast<std::size_t>(i) * sample, n, out.data());
      for (int k = 0; k < n; ++k) {
        const float* p = out.data() + static_cast<std::size_t>(k) * classes;
        correct += std::max_element(p, p + classes) - p == data.labels[static_cast<std::size_t>(i + k)];
      }
    }

    // The timed call: top-k (what infer asks for) or the whole output.
    const int k = std::min<int>(top_k, static_cast<int>(classes));
    std::vector<int> top_classes(static_cast<std::size_t>(max_batch) * std::max(k, 1));
    std::vector<float> top_scores(top_classes.size());
    auto run = [&](const float* in, int n) {
      if (k > 0) {
        backend->top_k(in, n, k, top_classes.data(), top_scores.data());
      } else {
        backend->forward(in, n, out.data());
      }
    };

    std::vector<Result> results;
    for (int batch : batches) {
      batch = std::min(batch, count);
      Result r;
      r.batch = batch;
      int offset = 0;
      auto next_slice = [&] {
        if (offset + batch > count) offset = 0;
        const float* p = inputs.data() + static_cast<std::size_t>(offset) * sample;
        offset += batch;
        return p;
      };
      const Clock::time_point warm = Clock::now();
      while (ms_since(warm) < 200.0) run(next_slice(), batch);
      std::vector<double> lat, device_ms, h2d_ms, compute_ms, d2h_ms;
      bool timed_on_device = true;  // every batch reported its device time
      const Clock::time_point timed = Clock::now();
      while (ms_since(timed) < seconds * 1000.0 || lat.size() < 5) {
        const float* in = next_slice();
        const Clock::time_point t = Clock::now();
        run(in, batch);
        lat.push_back(ms_since(t));
        if (const std::optional<infer::BatchTiming> d = backend->last_timing()) {
          device_ms.push_back(d->device_ms), h2d_ms.push_back(d->h2d_ms);
          compute_ms.push_back(d->compute_ms), d2h_ms.push_back(d->d2h_ms);
        } else {
          timed_on_device = false;
        }
      }
      if (timed_on_device) {
        r.device = DeviceLatency{percentile(device_ms, 50), percentile(device_ms, 90),  percentile(device_ms, 99),
                                 percentile(h2d_ms, 50),    percentile(compute_ms, 50), percentile(d2h_ms, 50)};
      }
      double total = 0;
      for (double l : lat) total += l;
      r.iterations = static_cast<int>(lat.size());
      r.images_per_s = batch * static_cast<double>(lat.size()) / (total / 1000.0);
      r.p50 = percentile(lat, 50), r.p90 = percentile(lat, 90), r.p99 = percentile(lat, 99);
      results.push_back(r);
    }

    const double accuracy = static_cast<double>(correct) / count;
    if (json) {
      nlohmann::json j{{"engine", "infer"},
                       {"device", device},
                       {"backend", backend->description()},
                       {"precision", infer::precision_name(precision)},
                       {"timed_call", k > 0 ? "top_k(k=" + std::to_string(k) + ")" : std::string("forward")},
                       {"startup_ms", startup_ms},
                       {"first_result_ms", first_result_ms},
                       {"startup_phases", nlohmann::json::array()},
                       {"accuracy", no_accuracy ? nlohmann::json() : nlohmann::json(accuracy)},
                       {"peak_rss_mib", peak_rss_mib()},
                       {"results", nlohmann::json::array()}};
      for (const infer::StartupPhase& phase : phases) {
        j["startup_phases"].push_back({{"phase", phase.name}, {"ms", phase.ms}});
      }
      for (const Result& r : results) {
        nlohmann::json row{{"batch", r.batch},
                           {"iterations", r.iterations},
                           {"images_per_s", r.images_per_s},
                           {"p50_ms", r.p50},
                           {"p90_ms", r.p90},
                           {"p99_ms", r.p99}};
        if (r.device) {
          row["device_p50_ms"] = r.device->p50;
          row["device_p90_ms"] = r.device->p90;
          row["device_p99_ms"] = r.device->p99;
          row["h2d_p50_ms"] = r.device->h2d_p50;
          row["compute_p50_ms"] = r.device->compute_p50;
          row["d2h_p50_ms"] = r.device->d2h_p50;
        }
        j["results"].push_back(row);
      }
      std::cout << j.dump() << '\n';
      return 0;
    }
    std::printf("infer-bench: %s, model %s, %s, timed call %s\n", backend->description().c_str(), net.name().c_str(),
                infer::precision_name(precision), k > 0 ? ("top_k(k=" + std::to_string(k) + ")").c_str() : "forward");
    char accuracy_text[96];
    if (no_accuracy) {
      std::snprintf(accuracy_text, sizeof accuracy_text, "top-1 accuracy not measured (--no-accuracy)");
    } else {
      std::snprintf(accuracy_text, sizeof accuracy_text, "top-1 accuracy %.4f on %d images", accuracy, count);
    }
    std::printf(
        "start-up %.1f ms (model load + backend build + first batch; backend build + first batch %.1f ms), "
        "%s, peak RSS %.1f MiB\n",
        startup_ms, first_result_ms, accuracy_text, peak_rss_mib());
    std::printf("start-up breakdown (ms, host wall clock):\n");
    for (const infer::StartupPhase& phase : phases) std::printf("%10.1f  %s\n", phase.ms, phase.name.c_str());
    const bool any_device = std::any_of(results.begin(), results.end(), [](const Result& r) { return r.device; });
    std::printf("%6s %10s %12s %10s %10s %10s", "batch", "iters", "images/s", "host p50", "host p90", "host p99");
    if (any_device) {
      std::printf(" %10s %10s %10s %10s %11s %10s", "dev p50", "dev p90", "dev p99", "h2d p50", "compute p50",
                  "d2h p50");
    }
    std::printf("\n");
    for (const Result& r : results) {
      std::printf("%6d %10d %12.1f %10.3f %10.3f %10.3f", r.batch, r.iterations, r.images_per_s, r.p50, r.p90, r.p99);
      if (r.device) {
        std::printf(" %10.3f %10.3f %10.3f %10.3f %11.3f %10.3f", r.device->p50, r.device->p90, r.device->p99,
                    r.device->h2d_p50, r.device->compute_p50, r.device->d2h_p50);
      } else if (any_device) {
        std::printf(" %10s %10s %10s %10s %11s %10s", "-", "-", "-", "-", "-", "-");
      }
      std::printf("\n");
    }
    if (any_device) {
      std::printf(
          "(ms per batch; host: end to end on the steady clock around the timed call, staging and "
          "synchronisation included; dev: CUDA events from the start of the host-to-device copy to the end "
          "of the device-to-host copy, split into h2d, compute and d2h, each its own median)\n");
    } else {
      std::printf("(ms per batch, end to end on the steady clock around the timed call)\n");
    }
  } catch (const infer::Error& e) {
    std::cerr << "infer-bench: " << e.what() << '\n';
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "infer-bench: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
