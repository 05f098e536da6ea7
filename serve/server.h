// `infer serve`'s server: the models (Repository), the open inference protocol's endpoints over
// HTTP/REST (http_server.h) and gRPC (grpc_server.h), and the Prometheus endpoint (GET /metrics),
// started and drained together.
//
// Lifetime: build the models into the Repository, start(), and later drain() (what SIGTERM does in
// the infer command): readiness fails at once, no new connection or RPC is accepted, every request
// already received is answered, and then drain() returns. The destructor drains too.
#pragma once

#include <memory>
#include <string>

#include "serve/grpc_server.h"
#include "serve/http_server.h"
#include "serve/metrics.h"
#include "serve/repository.h"

namespace infer::serve {

struct ServerOptions {
  ListenOptions http;     // HTTP/REST; its port 0: any free one
  GrpcOptions grpc;       // gRPC; its port 0: any free one; -1: none
  ListenOptions metrics;  // GET /metrics; its port 0: any free one; -1: none
};

struct BoundPorts {
  int http = 0;
  int grpc = 0;     // 0 when there is no gRPC endpoint
  int metrics = 0;  // 0 when there is no metrics endpoint
};

class Server {
 public:
  Server(Repository& models, Metrics& metrics, const ServerOptions& options, Log log);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  BoundPorts start();  // throws ListenError, with nothing left listening
  void drain();

 private:
  Repository& models_;
  ServerOptions options_;
  Log log_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<GrpcServer> grpc_;
  std::unique_ptr<HttpListener> metrics_;
};

}  // namespace infer::serve
