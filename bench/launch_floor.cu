// infer-launch-floor: the floor under a batch-1 pass on this GPU, measured (issue 34's batch-1
// target is a multiple of it). A program that prints numbers, not a test; tools/release/gpu-check.sh
// runs it beside infer-bench.
//
//   infer-launch-floor [--nodes N] [--iterations I] [--json]      (--help: the usage, no GPU needed)
//
// Three loops, each timed host to host on the steady clock (launch, then cudaStreamSynchronize),
// I iterations after 100 of warm-up, reported as p50 and p99 in microseconds:
//   graph      a CUDA graph of N empty kernels (one block of 32 threads each), replayed: what the
//              launch of a captured pass costs before any arithmetic (N defaults to 12, about the
//              shipped model's node count);
//   copies     a pinned round trip of one input and one output: 784 floats to the device, 10 back
//              (one 28x28 image, ten scores), as a pass's staging copies;
//   pass       both in one graph: the copy in, the N kernels, the copy out.
// Exit 0 after printing; 3 with one line naming the CUDA call when the device refuses one (no GPU,
// no driver).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

__global__ void empty_kernel() {}

struct CudaFailure {
  std::string what;
};

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw CudaFailure{std::string(call) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")"};
  }
}

struct Percentiles {
  double p50_us = 0.0;
  double p99_us = 0.0;
};

// `body` enqueues one iteration on `stream`; each is timed to the end of its synchronisation.
Percentiles time_loop(cudaStream_t stream, int iterations, const std::function<void()>& body) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < 100; ++i) {
    body();
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
  std::vector<double> us(static_cast<std::size_t>(iterations));
  for (double& sample : us) {
    const Clock::time_point start = Clock::now();
    body();
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    sample = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  }
  std::sort(us.begin(), us.end());
  const auto at = [&](double q) { return us[static_cast<std::size_t>(q * static_cast<double>(us.size() - 1))]; };
  return {at(0.50), at(0.99)};
}

// The stream, graphs and pinned buffers of the measurement, released in reverse order.
struct Resources {
  cudaStream_t stream = nullptr;
  float* host_in = nullptr;
  float* host_out = nullptr;
  float* device_in = nullptr;
  float* device_out = nullptr;
  cudaGraphExec_t kernels = nullptr;
  cudaGraphExec_t pass = nullptr;
  ~Resources() {
    if (pass) cudaGraphExecDestroy(pass);
    if (kernels) cudaGraphExecDestroy(kernels);
    if (device_out) cudaFree(device_out);
    if (device_in) cudaFree(device_in);
    if (host_out) cudaFreeHost(host_out);
    if (host_in) cudaFreeHost(host_in);
    if (stream) cudaStreamDestroy(stream);
  }
};

constexpr std::size_t kInputFloats = 784;
constexpr std::size_t kOutputFloats = 10;

// Captures `enqueue` on the stream into an instantiated graph.
cudaGraphExec_t capture(cudaStream_t stream, const std::function<void()>& enqueue) {
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  enqueue();
  cudaGraph_t graph = nullptr;
  check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  check(status, "cudaGraphInstantiate");
  return exec;
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 12, iterations = 2000;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::printf("usage: infer-launch-floor [--nodes N] [--iterations I] [--json]\n");
      return 0;
    }
    if (arg == "--json") {
      json = true;
    } else if ((arg == "--nodes" || arg == "--iterations") && i + 1 < argc) {
      const long value = std::strtol(argv[++i], nullptr, 10);
      if (value < 1 || value > 100000) {
        std::fprintf(stderr, "infer-launch-floor: %s must be 1 to 100000\n", arg.c_str());
        return 2;
      }
      (arg == "--nodes" ? nodes : iterations) = static_cast<int>(value);
    } else {
      std::fprintf(stderr, "usage: infer-launch-floor [--nodes N] [--iterations I] [--json]\n");
      return 2;
    }
  }
  try {
    Resources r;
    check(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check(cudaMallocHost(reinterpret_cast<void**>(&r.host_in), kInputFloats * sizeof(float)), "cudaMallocHost");
    check(cudaMallocHost(reinterpret_cast<void**>(&r.host_out), kOutputFloats * sizeof(float)), "cudaMallocHost");
    check(cudaMalloc(&r.device_in, kInputFloats * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&r.device_out, kOutputFloats * sizeof(float)), "cudaMalloc");
    std::memset(r.host_in, 0, kInputFloats * sizeof(float));
    const auto launch_kernels = [&] {
      for (int k = 0; k < nodes; ++k) {
        empty_kernel<<<1, 32, 0, r.stream>>>();
        check(cudaGetLastError(), "empty_kernel<<<1, 32>>>");
      }
    };
    const auto copy_in = [&] {
      check(cudaMemcpyAsync(r.device_in, r.host_in, kInputFloats * sizeof(float), cudaMemcpyHostToDevice, r.stream),
            "cudaMemcpyAsync (to the device)");
    };
    const auto copy_out = [&] {
      check(cudaMemcpyAsync(r.host_out, r.device_out, kOutputFloats * sizeof(float), cudaMemcpyDeviceToHost, r.stream),
            "cudaMemcpyAsync (to the host)");
    };
    r.kernels = capture(r.stream, launch_kernels);
    r.pass = capture(r.stream, [&] {
      copy_in();
      launch_kernels();
      copy_out();
    });
    const Percentiles graph =
        time_loop(r.stream, iterations, [&] { check(cudaGraphLaunch(r.kernels, r.stream), "cudaGraphLaunch"); });
    const Percentiles copies = time_loop(r.stream, iterations, [&] {
      copy_in();
      copy_out();
    });
    const Percentiles pass =
        time_loop(r.stream, iterations, [&] { check(cudaGraphLaunch(r.pass, r.stream), "cudaGraphLaunch"); });
    cudaDeviceProp prop{};
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    if (json) {
      std::printf(
          "{\"device\":\"%s\",\"nodes\":%d,\"iterations\":%d,\"graph_p50_us\":%.2f,\"graph_p99_us\":%.2f,"
          "\"copies_p50_us\":%.2f,\"copies_p99_us\":%.2f,\"pass_p50_us\":%.2f,\"pass_p99_us\":%.2f}\n",
          prop.name, nodes, iterations, graph.p50_us, graph.p99_us, copies.p50_us, copies.p99_us, pass.p50_us,
          pass.p99_us);
    } else {
      std::printf("infer-launch-floor: %s, %d empty kernels, %d iterations (us, host to host)\n", prop.name, nodes,
                  iterations);
      std::printf("%-44s %10s %10s\n", "", "p50", "p99");
      std::printf("%-44s %10.2f %10.2f\n", "graph of the empty kernels", graph.p50_us, graph.p99_us);
      std::printf("%-44s %10.2f %10.2f\n", "pinned copies, 784 floats in and 10 out", copies.p50_us, copies.p99_us);
      std::printf("%-44s %10.2f %10.2f\n", "one graph: copy in, the kernels, copy out", pass.p50_us, pass.p99_us);
    }
  } catch (const CudaFailure& e) {
    std::fprintf(stderr, "infer-launch-floor: %s\n", e.what.c_str());
    return 3;
  }
  return 0;
}
