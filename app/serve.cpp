// `infer serve`: loads the models, starts the server, and on SIGTERM or SIGINT drains it: readiness
// fails at once, no new connection or RPC is taken, the requests in flight are answered, and the process
// exits 0, or 7 when that takes longer than --drain-timeout. A second signal exits at once.
//
// Signals are blocked in every thread (the mask is set before any is started) and taken by the main
// thread with sigwait: no handler runs inside a request.
#include "app/serve.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include "app/exit_codes.h"
#include "app/options.h"
#include "app/serve_options.h"
#include "infer/classifier.h"
#include "platform/printable.h"
#include "serve/repository.h"
#include "serve/serve_error.h"
#include "serve/server.h"

namespace infer::app {
namespace {

// One line on stderr per event, whole even when threads log at once.
void log_line(const std::string& line) {
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  std::cerr << "infer serve: " << printable_utf8(line) << std::endl;
}

ClassifierOptions classifier_options(const ServeOptions& o) {
  ClassifierOptions c;
  c.device = o.cuda_major != 0 && o.device == Device::Auto ? Device::Gpu : o.device;
  c.cuda_major = o.cuda_major;
  c.precision = o.precision;
  c.max_batch = o.max_batch;
  c.threads = o.threads;
  c.verify = !o.no_verify;
  c.manifest = arg_path(o.manifest);
  c.notice = [](const Notice& n) { log_line("notice: " + n.message); };
  if (o.verbose) c.gpu_log = [](const std::string& line) { log_line(line); };
  return c;
}

std::string signal_name(int sig) { return sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : std::to_string(sig); }

// Loads every model into `repo`. Returns an exit code on failure, after logging why.
int load_models(const ServeOptions& o, serve::Repository& repo, serve::WorkerPool& decoders, serve::Metrics& metrics) {
  std::vector<ServedModelArg> models = o.models;
  if (models.empty()) models.push_back({model_info().name, ""});
  serve::BatcherOptions batching;
  batching.max_batch = o.max_batch;
  batching.max_delay = std::chrono::microseconds(o.max_queue_delay_us);
  batching.max_queue = o.max_queue;
  for (const ServedModelArg& m : models) {
    const std::string what = "model " + m.name + (m.path.empty() ? "" : " (" + m.path + ")");
    try {
      Classifier c(arg_path(m.path), classifier_options(o));
      log_line(what + ": " + c.model_path().u8string() + " on " + c.backend() + ", max batch " +
               std::to_string(std::min(c.max_batch(), o.max_batch)));
      repo.add(
          std::make_unique<serve::ServedModel>(m.name, std::move(c), batching, decoders, metrics.add_model(m.name)));
    } catch (const InputError& e) {
      log_line(what + ": " + e.what());
      return kExitInvalidInput;
    } catch (const OptionError& e) {
      log_line(what + ": " + e.what());
      return kExitUsage;
    } catch (const GpuUnavailableError& e) {
      log_line(what + ": the GPU is unusable (--device gpu): " + e.what());
      return kExitGpuUnusable;
    } catch (const GpuError& e) {
      log_line(what + ": GPU error: " + e.what());
      return kExitGpuUnusable;
    }
  }
  return kExitOk;
}

}  // namespace

int run_serve(int argc, char** argv) {
  const ServeParseResult parsed = parse_serve_options(argc, argv);
  if (parsed.exit_code) return *parsed.exit_code;
  const ServeOptions& o = parsed.options;

  // Before any thread exists, so that every thread inherits the mask. A client that goes away
  // mid-response is an error of that write, not a signal.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  serve::Metrics metrics;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  serve::WorkerPool decoders(o.decode_threads > 0 ? o.decode_threads : static_cast<int>(cores));
  serve::Repository repo;
  if (const int code = load_models(o, repo, decoders, metrics); code != kExitOk) return code;

  serve::ServerOptions so;
  auto listen = [&](int port) {
    serve::ListenOptions l;
    l.host = o.host;
    l.port = port;
    l.threads = o.http_threads;
    l.max_body = o.max_request_bytes;
    l.read_timeout = std::chrono::seconds(o.read_timeout_s);
    l.write_timeout = std::chrono::seconds(o.read_timeout_s);
    l.idle_timeout = std::chrono::seconds(o.idle_timeout_s);
    return l;
  };
  so.http = listen(o.http_port);
  so.grpc.host = o.host;
  so.grpc.port = o.grpc_port;
  so.grpc.threads = o.http_threads;
  so.grpc.max_message = o.max_request_bytes;
  so.grpc.idle_timeout = std::chrono::seconds(o.idle_timeout_s);
  so.metrics = listen(o.metrics_port);
  so.metrics.threads = 4;
  auto server = std::make_unique<serve::Server>(repo, metrics, so, log_line);
  serve::BoundPorts ports;
  try {
    ports = server->start();
  } catch (const serve::ListenError& e) {
    log_line(e.what());
    return kExitServe;
  }
  log_line("HTTP/REST on " + o.host + ":" + std::to_string(ports.http) +
           (ports.grpc ? ", gRPC on " + o.host + ":" + std::to_string(ports.grpc) : "") +
           (ports.metrics ? ", metrics on " + o.host + ":" + std::to_string(ports.metrics) + "/metrics" : "") +
           "; ready");
  // The bound ports on stdout, one JSON line, for a program that started us on port 0 (0: none).
  std::cout << "{\"http_port\": " << ports.http << ", \"grpc_port\": " << ports.grpc
            << ", \"metrics_port\": " << ports.metrics << "}" << std::endl;

  int sig = 0;
  sigwait(&stop_signals, &sig);
  log_line(signal_name(sig) + ": draining (at most " + std::to_string(o.drain_timeout_s) +
           " s; a second signal stops at once)");
  std::atomic<bool> drained{false};
  std::thread drainer([&] {
    server->drain();
    drained = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.drain_timeout_s);
  while (!drained) {
    const timespec tick{0, 50'000'000};
    const int second = sigtimedwait(&stop_signals, nullptr, &tick);
    if (second > 0) {
      log_line(signal_name(second) + " again: stopping now, requests in flight are dropped");
      std::_Exit(128 + second);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      log_line("the drain did not finish within " + std::to_string(o.drain_timeout_s) + " s: stopping now");
      std::_Exit(kExitServe);
    }
  }
  drainer.join();
  server.reset();
  log_line("stopped: " + std::to_string(metrics.answered.load()) + " of " + std::to_string(metrics.received.load()) +
           " inference requests received were answered");
  return kExitOk;
}

}  // namespace infer::app
