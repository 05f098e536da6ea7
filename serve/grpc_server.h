// The open inference protocol v2 over gRPC (inference.proto: service inference.GRPCInferenceService,
// as Triton serves it): ServerLive, ServerReady, ModelReady, ServerMetadata, ModelMetadata,
// ModelInfer and Triton's ModelConfig. Errors map to gRPC's codes: INVALID_ARGUMENT (a bad request),
// NOT_FOUND (unknown model or version), UNAVAILABLE (queue full, draining), RESOURCE_EXHAUSTED (a
// message over the limit, from gRPC itself), INTERNAL (the backend failed).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "serve/log.h"
#include "serve/metrics.h"
#include "serve/repository.h"

namespace infer::serve {

struct GrpcOptions {
  std::string host = "127.0.0.1";
  int port = 0;      // 0: any free port (start() returns it)
  int threads = 64;  // RPCs served at once
  std::size_t max_message = std::size_t{64} << 20;
  std::chrono::seconds idle_timeout{300};  // a connection without RPCs this long gets GOAWAY
};

class GrpcServer {
 public:
  GrpcServer(Repository& models, Metrics& metrics, const GrpcOptions& options, Log log);
  ~GrpcServer();
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  int start();  // binds and serves; returns the bound port. Throws ListenError.
  // Refuses new RPCs and returns once those in flight are answered. Idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace infer::serve
