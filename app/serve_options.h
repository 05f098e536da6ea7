// The command line of `infer serve` (docs/serving.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "infer/device.h"

namespace infer::app {

struct ServedModelArg {
  std::string name;
  std::string path;  // empty: the shipped model
};

struct ServeOptions {
  std::vector<ServedModelArg> models;  // --model NAME=PATH; none: the shipped model under its own name
  std::string host = "127.0.0.1";
  int http_port = 8000;
  int grpc_port = 8001;     // -1: no gRPC endpoint
  int metrics_port = 8002;  // -1: no metrics endpoint
  Device device = Device::Auto;
  Precision precision = Precision::Fp32;
  int cuda_major = 0;
  int max_batch = 64;
  int max_queue_delay_us = 0;  // Triton's default: run what is queued at once
  int max_queue = 1024;        // samples per model
  std::size_t max_request_bytes = std::size_t{64} << 20;
  int http_threads = 128;  // also the gRPC endpoint's
  int decode_threads = 0;  // 0: one per core
  int threads = 0;         // CPU backend threads; 0: every core
  int drain_timeout_s = 30;
  int read_timeout_s = 10;
  int idle_timeout_s = 5;
  std::string manifest;
  bool no_verify = false;
  bool verbose = false;
};

struct ServeParseResult {
  ServeOptions options;
  std::optional<int> exit_code;  // --help printed (0) or a usage error printed (kExitUsage)
};
// argv[0] is "serve".
ServeParseResult parse_serve_options(int argc, char** argv);

}  // namespace infer::app
