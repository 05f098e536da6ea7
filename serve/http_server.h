// The open inference protocol v2 over HTTP/REST (KServe v2, as Triton serves it), on an HttpListener:
//   GET  /v2/health/live                          200 while the process answers
//   GET  /v2/health/ready                         200 when every model is loaded, 503 while draining;
//                                                 the body names each model's device and backend
//   GET  /v2                                      server metadata
//   GET  /v2/models/{m}[/versions/{v}]            model metadata
//   GET  /v2/models/{m}[/versions/{v}]/ready      model readiness
//   GET  /v2/models/{m}[/versions/{v}]/config     Triton's model configuration (JSON form)
//   POST /v2/models/{m}[/versions/{v}]/infer      inference: JSON, or JSON and binary tensor data
// Errors are the protocol's {"error": "..."} with 400 (bad request), 404 (unknown model, version or
// path), 405 (wrong method), 413 (body over the limit), 415 (a content encoding other than gzip or
// deflate), 503 (queue full, draining) or 500 (the backend failed).
#pragma once

#include "serve/http_listener.h"
#include "serve/log.h"
#include "serve/metrics.h"
#include "serve/repository.h"

namespace infer::serve {

class HttpServer {
 public:
  HttpServer(Repository& models, Metrics& metrics, const ListenOptions& options, Log log);
  int start() { return listener_.start(); }  // the bound port; throws ListenError
  void stop() { listener_.stop(); }

 private:
  HttpListener listener_;
};

}  // namespace infer::serve
