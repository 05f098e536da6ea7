#include "serve/server.h"

#include <thread>

#include <httplib.h>

namespace infer::serve {

Server::Server(Repository& models, Metrics& metrics, const ServerOptions& options, Log log)
    : models_(models), options_(options), log_(std::move(log)) {
  http_ = std::make_unique<HttpServer>(models_, metrics, options_.http, log_);
  if (options_.grpc.port >= 0) grpc_ = std::make_unique<GrpcServer>(models_, metrics, options_.grpc, log_);
  if (options_.metrics.port >= 0) {
    metrics_ = std::make_unique<HttpListener>(options_.metrics);
    metrics_->server().Get("/metrics", [&metrics](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics.render(), "text/plain; version=0.0.4; charset=utf-8");
    });
  }
}

Server::~Server() { drain(); }

BoundPorts Server::start() {
  BoundPorts ports;
  try {
    ports.http = http_->start();
    if (grpc_) ports.grpc = grpc_->start();
    if (metrics_) ports.metrics = metrics_->start();
  } catch (...) {
    drain();
    throw;
  }
  return ports;
}

void Server::drain() {
  models_.set_draining();
  // Both protocols stop taking work at once, then each waits for its own requests in flight.
  std::thread grpc([this] {
    if (grpc_) grpc_->stop();
  });
  http_->stop();
  grpc.join();
  if (metrics_) metrics_->stop();  // last: the drain can be watched until the end
}

}  // namespace infer::serve
