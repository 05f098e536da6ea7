#include "serve/grpc_server.h"

#include <thread>

#include <grpcpp/grpcpp.h>

#include "infer/version.h"
#include "inference.grpc.pb.h"
#include "serve/grpc_convert.h"
#include "serve/serve_error.h"

namespace infer::serve {
namespace {

grpc::StatusCode grpc_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument: return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorKind::NotFound: return grpc::StatusCode::NOT_FOUND;
    case ErrorKind::TooLarge: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case ErrorKind::Unavailable: return grpc::StatusCode::UNAVAILABLE;
    case ErrorKind::Internal: return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::INTERNAL;
}

inference::DataType config_type(const std::string& datatype) {
  return datatype == "BYTES" ? inference::TYPE_STRING : inference::TYPE_FP32;
}

class Service final : public inference::GRPCInferenceService::Service {
 public:
  Service(Repository& repo, Metrics& metrics, Log log) : repo_(repo), metrics_(metrics), log_(std::move(log)) {}

  grpc::Status ServerLive(grpc::ServerContext*, const inference::ServerLiveRequest*,
                          inference::ServerLiveResponse* out) override {
    out->set_live(true);
    return grpc::Status::OK;
  }

  grpc::Status ServerReady(grpc::ServerContext*, const inference::ServerReadyRequest*,
                           inference::ServerReadyResponse* out) override {
    out->set_ready(repo_.ready());
    return grpc::Status::OK;
  }

  // An unknown model or version is not ready, as Triton answers it: not an error.
  grpc::Status ModelReady(grpc::ServerContext*, const inference::ModelReadyRequest* in,
                          inference::ModelReadyResponse* out) override {
    const ServedModel* m = nullptr;
    out->set_ready(find(in->name(), in->version(), m).ok() && repo_.ready());
    return grpc::Status::OK;
  }

  grpc::Status ServerMetadata(grpc::ServerContext*, const inference::ServerMetadataRequest*,
                              inference::ServerMetadataResponse* out) override {
    out->set_name("infer");
    out->set_version(version_string());
    for (const char* e : {"classification", "model_configuration", "binary_tensor_data"}) out->add_extensions(e);
    return grpc::Status::OK;
  }

  grpc::Status ModelMetadata(grpc::ServerContext*, const inference::ModelMetadataRequest* in,
                             inference::ModelMetadataResponse* out) override {
    const ServedModel* m = nullptr;
    if (grpc::Status s = find(in->name(), in->version(), m); !s.ok()) return s;
    out->set_name(m->name());
    out->add_versions(kModelVersion);
    out->set_platform("infer");
    auto add = [](const TensorDescription& t, inference::ModelMetadataResponse::TensorMetadata* d) {
      d->set_name(t.name);
      d->set_datatype(t.datatype);
      for (std::int64_t v : t.shape) d->add_shape(v);
    };
    for (const auto& t : m->inputs()) add(t, out->add_inputs());
    for (const auto& t : m->outputs()) add(t, out->add_outputs());
    return grpc::Status::OK;
  }

  grpc::Status ModelConfig(grpc::ServerContext*, const inference::ModelConfigRequest* in,
                           inference::ModelConfigResponse* out) override {
    const ServedModel* m = nullptr;
    if (grpc::Status s = find(in->name(), in->version(), m); !s.ok()) return s;
    inference::ModelConfig& c = *out->mutable_config();
    c.set_name(m->name());
    c.set_platform("infer");
    c.set_backend("infer");
    c.set_max_batch_size(m->max_batch());
    for (const auto& t : m->inputs()) {
      inference::ModelInput& i = *c.add_input();
      i.set_name(t.name);
      i.set_data_type(config_type(t.datatype));
      for (std::size_t d = 1; d < t.shape.size(); ++d) i.add_dims(t.shape[d]);
      i.set_optional(true);  // a request sends one of the inputs
    }
    for (const auto& t : m->outputs()) {
      inference::ModelOutput& o = *c.add_output();
      o.set_name(t.name);
      o.set_data_type(config_type(t.datatype));
      for (std::size_t d = 1; d < t.shape.size(); ++d) o.add_dims(t.shape[d]);
    }
    c.mutable_dynamic_batching()->set_max_queue_delay_microseconds(
        static_cast<std::uint64_t>(m->batching().max_delay.count()));
    inference::ModelInstanceGroup& g = *c.add_instance_group();
    g.set_count(1);
    g.set_kind(std::string(m->classifier().device()) == "gpu" ? inference::ModelInstanceGroup::KIND_GPU
                                                              : inference::ModelInstanceGroup::KIND_CPU);
    return grpc::Status::OK;
  }

  grpc::Status ModelInfer(grpc::ServerContext*, const inference::ModelInferRequest* in,
                          inference::ModelInferResponse* out) override {
    const auto start = std::chrono::steady_clock::now();
    const Metrics::InFlight in_flight(metrics_);
    const ServedModel* found = nullptr;
    if (grpc::Status s = find(in->model_name(), in->model_version(), found); !s.ok()) return s;
    ServedModel& m = *repo_.find(found->name());
    try {
      to_proto(m.infer(from_proto(*in, m.limits())), *out);
      m.metrics().requests.fetch_add(1, std::memory_order_relaxed);
      m.metrics().request_ns.observe(static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count()));
      return grpc::Status::OK;
    } catch (const ServeError& e) {
      m.metrics().fail(e.kind());
      log_(std::string("gRPC ModelInfer ") + m.name() + ": " + e.what());
      return {grpc_code(e.kind()), e.what()};
    }
  }

 private:
  grpc::Status find(const std::string& name, const std::string& version, const ServedModel*& m) const {
    m = repo_.find(name);
    if (!m) return {grpc::StatusCode::NOT_FOUND, "unknown model \"" + name + "\""};
    if (!version.empty() && version != kModelVersion)
      return {grpc::StatusCode::NOT_FOUND,
              "model \"" + name + "\" has no version \"" + version + "\" (its one version is 1)"};
    return grpc::Status::OK;
  }

  Repository& repo_;
  Metrics& metrics_;
  Log log_;
};

}  // namespace

struct GrpcServer::Impl {
  Impl(Repository& repo, Metrics& metrics, const GrpcOptions& o, Log log)
      : options(o), service(repo, metrics, std::move(log)) {}
  GrpcOptions options;
  Service service;
  std::unique_ptr<grpc::Server> server;
  bool stopped = false;
};

GrpcServer::GrpcServer(Repository& models, Metrics& metrics, const GrpcOptions& options, Log log)
    : impl_(std::make_unique<Impl>(models, metrics, options, std::move(log))) {}

GrpcServer::~GrpcServer() { stop(); }

int GrpcServer::start() {
  const GrpcOptions& o = impl_->options;
  const std::string address = o.host + ":" + std::to_string(o.port);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&impl_->service);
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<std::size_t>(o.max_message, INT32_MAX)));
  // The sync server's threads: one per RPC being handled, and its pollers besides (a few per
  // completion queue, one queue per core), which the quota counts too: with no more than o.threads
  // in all, o.threads concurrent calls found it exhausted (RESOURCE_EXHAUSTED) in the benchmark.
  grpc::ResourceQuota quota("infer-serve");
  quota.SetMaxThreads(o.threads + 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) + 4);
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, static_cast<int>(o.idle_timeout.count() * 1000));
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || port == 0) {
    impl_->server.reset();
    throw ListenError("cannot listen on " + address +
                      " for gRPC (is the port in use, or the address not this machine's?)");
  }
  return port;
}

void GrpcServer::stop() {
  if (!impl_->server || impl_->stopped) return;
  impl_->stopped = true;
  impl_->server->Shutdown();  // no new RPCs; waits for those in flight
  impl_->server->Wait();
}

}  // namespace infer::serve
