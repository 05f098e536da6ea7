#include "serve/http_server.h"

#include <chrono>
#include <optional>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "infer/version.h"
#include "serve/http_json.h"
#include "serve/serve_error.h"

namespace infer::serve {
namespace {

using nlohmann::json;

// Paths longer than this are refused before any pattern is matched (a model name is short).
constexpr std::size_t kMaxPath = 1024;

int http_status(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument: return 400;
    case ErrorKind::NotFound: return 404;
    case ErrorKind::TooLarge: return 413;
    case ErrorKind::Unavailable: return 503;
    case ErrorKind::Internal: return 500;
  }
  return 500;
}

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(error_json(message), "application/json");
}

json tensors_json(const std::vector<TensorDescription>& tensors) {
  json list = json::array();
  for (const auto& t : tensors) list.push_back({{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}});
  return list;
}

json model_metadata(const ServedModel& m) {
  return {{"name", m.name()},
          {"versions", {kModelVersion}},
          {"platform", "infer"},
          {"inputs", tensors_json(m.inputs())},
          {"outputs", tensors_json(m.outputs())}};
}

// Triton's model configuration (model_config.proto in its JSON form): what perf_analyzer and
// clients read to learn the batch limit and the tensors.
json model_config(const ServedModel& m) {
  auto dims = [](const TensorDescription& t) { return std::vector<std::int64_t>(t.shape.begin() + 1, t.shape.end()); };
  auto type = [](const TensorDescription& t) { return t.datatype == "BYTES" ? "TYPE_STRING" : "TYPE_FP32"; };
  json inputs = json::array();
  for (const auto& t : m.inputs()) {
    // Each input is optional: a request sends one of them.
    inputs.push_back({{"name", t.name}, {"data_type", type(t)}, {"dims", dims(t)}, {"optional", true}});
  }
  json outputs = json::array();
  for (const auto& t : m.outputs()) outputs.push_back({{"name", t.name}, {"data_type", type(t)}, {"dims", dims(t)}});
  const bool gpu = std::string(m.classifier().device()) == "gpu";
  return {{"name", m.name()},
          {"platform", "infer"},
          {"backend", "infer"},
          {"max_batch_size", m.max_batch()},
          {"input", inputs},
          {"output", outputs},
          {"dynamic_batching", {{"max_queue_delay_microseconds", m.batching().max_delay.count()}}},
          {"instance_group", {{{"kind", gpu ? "KIND_GPU" : "KIND_CPU"}, {"count", 1}}}}};
}

json ready_body(const Repository& repo) {
  json models = json::array();
  for (const auto& m : repo.models()) {
    models.push_back(
        {{"name", m->name()}, {"device", m->classifier().device()}, {"backend", m->classifier().backend()}});
  }
  return {{"ready", repo.ready()}, {"models", models}};
}

// A path under /v2/models/: the model, its version (empty when not given) and what follows
// ("", "ready", "config", "infer"); nullopt when it has another form.
struct ModelPath {
  std::string model;
  std::string version;
  std::string action;
};
std::optional<ModelPath> parse_model_path(const std::string& path) {
  const std::string prefix = "/v2/models/";
  if (path.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  std::vector<std::string> parts;
  std::size_t at = prefix.size();
  while (at <= path.size()) {
    const std::size_t slash = std::min(path.find('/', at), path.size());
    parts.push_back(path.substr(at, slash - at));
    at = slash + 1;
  }
  for (const auto& p : parts) {
    if (p.empty()) return std::nullopt;
  }
  ModelPath r;
  r.model = parts[0];
  std::size_t next = 1;
  if (parts.size() >= 3 && parts[1] == "versions") {
    r.version = parts[2];
    next = 3;
  }
  if (parts.size() == next) return r;
  if (parts.size() == next + 1 && (parts[next] == "ready" || parts[next] == "config" || parts[next] == "infer")) {
    r.action = parts[next];
    return r;
  }
  return std::nullopt;
}

// The model a path names, or a 404 sent: unknown model, or a version other than its one.
ServedModel* find_model(const Repository& repo, const ModelPath& p, httplib::Response& res) {
  ServedModel* m = repo.find(p.model);
  if (!m) {
    send_error(res, 404, "unknown model \"" + p.model + "\"");
    return nullptr;
  }
  if (!p.version.empty() && p.version != kModelVersion) {
    send_error(res, 404, "model \"" + p.model + "\" has no version \"" + p.version + "\" (its one version is 1)");
    return nullptr;
  }
  return m;
}

class Routes {
 public:
  Routes(Repository& repo, Metrics& metrics, std::size_t max_body, Log log)
      : repo_(repo), metrics_(metrics), max_body_(max_body), log_(std::move(log)) {}

  httplib::Server::HandlerResponse route(const httplib::Request& req, httplib::Response& res) {
    using H = httplib::Server::HandlerResponse;
    const H handled = route_unread(req, res);
    // Answered here, the body (if any) was never read: its bytes must not be taken for the next
    // request on the connection, so the connection ends with this answer.
    if (handled == H::Handled && has_body(req)) res.set_header("Connection", "close");
    return handled;
  }

  static bool has_body(const httplib::Request& req) {
    return req.has_header("Transfer-Encoding") ||
           (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
  }

  httplib::Server::HandlerResponse route_unread(const httplib::Request& req, httplib::Response& res) {
    using H = httplib::Server::HandlerResponse;
    // Draining: each connection is closed after its current request, and says so, so that the
    // client sends its next request elsewhere instead of into a closing connection.
    if (!repo_.ready()) res.set_header("Connection", "close");
    if (req.path.size() > kMaxPath) {
      send_error(res, 404, "path too long (" + std::to_string(req.path.size()) + " bytes)");
      return H::Handled;
    }
    const std::string encoding = req.get_header_value("Content-Encoding");
    if (!encoding.empty() && encoding != "gzip" && encoding != "deflate" && encoding != "identity") {
      send_error(res, 415, "Content-Encoding \"" + encoding + "\" is not taken: gzip, deflate or none");
      return H::Handled;
    }
    const std::optional<ModelPath> mp = parse_model_path(req.path);
    if (mp && mp->action == "infer") {
      if (req.method == "POST") {
        // A declared length over the limit is refused before a byte of it is read (httplib would read
        // and discard all of it first, however long that took).
        const std::string length = req.get_header_value("Content-Length");
        if (!length.empty() && (length.size() > 18 || length.find_first_not_of("0123456789") != std::string::npos ||
                                std::stoull(length) > max_body_)) {
          send_error(
              res, 413,
              "the request body is over the limit of " + std::to_string(max_body_) + " bytes (--max-request-bytes)");
          return H::Handled;
        }
        return H::Unhandled;  // the infer handler reads the body
      }
      send_error(res, 405, "infer takes POST");
      return H::Handled;
    }
    const bool known = mp || req.path == "/v2/health/live" || req.path == "/v2/health/ready" || req.path == "/v2";
    if (!known) {
      send_error(res, 404, "no such endpoint: " + req.path);
      return H::Handled;
    }
    if (req.method != "GET") {
      send_error(res, 405, req.path + " takes GET");
      return H::Handled;
    }
    if (req.path == "/v2/health/live") {
      send_json(res, 200, {{"live", true}});
    } else if (req.path == "/v2/health/ready") {
      send_json(res, repo_.ready() ? 200 : 503, ready_body(repo_));
    } else if (req.path == "/v2") {
      send_json(res, 200,
                {{"name", "infer"},
                 {"version", version_string()},
                 {"extensions", {"classification", "model_configuration", "binary_tensor_data"}}});
    } else if (ServedModel* m = find_model(repo_, *mp, res)) {
      if (mp->action.empty()) {
        send_json(res, 200, model_metadata(*m));
      } else if (mp->action == "ready") {
        send_json(res, repo_.ready() ? 200 : 503, {{"name", m->name()}, {"ready", repo_.ready()}});
      } else {
        send_json(res, 200, model_config(*m));
      }
    }
    return H::Handled;
  }

  void infer(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader,
             std::size_t max_body) {
    const auto start = std::chrono::steady_clock::now();
    const Metrics::InFlight in_flight(metrics_);
    const ModelPath mp = *parse_model_path(req.path);
    ServedModel* m = find_model(repo_, mp, res);
    // The body is read in full, within the limit, even for an unknown model: the connection stays in step.
    std::string body;
    bool too_large = false;
    const bool read = reader([&](const char* data, std::size_t n) {
      if (n > max_body - body.size()) {
        too_large = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
    if (!m) {
      if (too_large || !read) res.set_header("Connection", "close");
      return;
    }
    try {
      if (too_large || res.status == 413)
        throw ServeError(ErrorKind::TooLarge, "the request body is over the limit of " + std::to_string(max_body) +
                                                  " bytes (--max-request-bytes)");
      if (!read) throw invalid("the request body could not be read");
      std::optional<std::size_t> header_length;
      if (req.has_header("Inference-Header-Content-Length")) header_length = header_length_of(req);
      const InferResponse response =
          m->infer(parse_infer_request(body, header_length, mp.model, mp.version, m->limits()));
      const HttpBody out = encode_infer_response(response);
      res.status = 200;
      if (out.header_length) {
        res.set_header("Inference-Header-Content-Length", std::to_string(out.header_length));
        res.set_content(out.body, "application/octet-stream");
      } else {
        res.set_content(out.body, "application/json");
      }
      m->metrics().requests.fetch_add(1, std::memory_order_relaxed);
      m->metrics().request_ns.observe(static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count()));
    } catch (const ServeError& e) {
      m->metrics().fail(e.kind());
      if (too_large || !read) res.set_header("Connection", "close");  // what is left of the body is unread
      send_error(res, http_status(e.kind()), e.what());
      log_("HTTP " + std::to_string(res.status) + " " + req.path + ": " + e.what());
    }
  }

 private:
  static std::size_t header_length_of(const httplib::Request& req) {
    const std::string v = req.get_header_value("Inference-Header-Content-Length");
    if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos)
      throw invalid("Inference-Header-Content-Length must be a byte count, found \"" + v.substr(0, 32) + "\"");
    return static_cast<std::size_t>(std::stoull(v));
  }

  Repository& repo_;
  Metrics& metrics_;
  std::size_t max_body_;
  Log log_;
};

}  // namespace

HttpServer::HttpServer(Repository& models, Metrics& metrics, const ListenOptions& options, Log log)
    : listener_(options) {
  auto routes = std::make_shared<Routes>(models, metrics, options.max_body, log);
  httplib::Server& s = listener_.server();
  s.set_pre_routing_handler(
      [routes](const httplib::Request& req, httplib::Response& res) { return routes->route(req, res); });
  const std::size_t max_body = options.max_body;
  s.Post(R"(/v2/models/.+/infer)",
         [routes, max_body](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
           routes->infer(req, res, reader, max_body);
         });
  // httplib's own refusals (a malformed request line, a body over the limit) in the protocol's form.
  s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      res.set_content(error_json(res.status == 413 ? "the request body is over the limit (--max-request-bytes)"
                                                   : "HTTP " + std::to_string(res.status)),
                      "application/json");
    }
  });
  s.set_exception_handler([log](const httplib::Request& req, httplib::Response& res, std::exception_ptr e) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = x.what();
    } catch (...) {
    }
    send_error(res, 500, "internal error: " + what);
    res.set_header("Connection", "close");  // the body may be partly unread
    log("HTTP 500 " + req.path + ": " + what);
  });
}

}  // namespace infer::serve
