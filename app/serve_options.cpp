#include "app/serve_options.h"

#include <iostream>
#include <map>

#include <CLI/CLI.hpp>

#include "app/exit_codes.h"

namespace infer::app {
namespace {

bool valid_model_name(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  }
  return true;
}

}  // namespace

ServeParseResult parse_serve_options(int argc, char** argv) {
  ServeParseResult result;
  ServeOptions& o = result.options;
  CLI::App cli{
      "infer serve: the model as a network service on the open inference protocol (KServe v2, as Triton "
      "serves it): HTTP/REST, dynamic batching, Prometheus metrics. See docs/serving.md.",
      "infer serve"};
  cli.allow_windows_style_options(false);
  cli.footer(
      "Exit codes: 0 drained and stopped after SIGTERM or SIGINT, 1 internal error, 2 usage, 3 a model cannot be\n"
      "            loaded, 4 --device gpu and the GPU is unusable, 7 a port cannot be listened on or the drain\n"
      "            did not finish within --drain-timeout; 128+N: a second signal N stopped it at once.");
  std::vector<std::string> models;
  cli.add_option("--model", models,
                 "A model to serve, as NAME=PATH (infer's TOML, an ONNX file, or a TOML naming one); repeat for more. "
                 "Default: the shipped model, under its own name")
      ->type_name("NAME=PATH");
  cli.add_option("--host", o.host, "Address to listen on (0.0.0.0: every interface)")->capture_default_str();
  cli.add_option("--http-port", o.http_port, "HTTP/REST port (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cli.add_option("--grpc-port", o.grpc_port, "gRPC port (0: any free port; -1: none)")
      ->check(CLI::Range(-1, 65535))
      ->capture_default_str();
  cli.add_option("--metrics-port", o.metrics_port, "Prometheus metrics port (0: any free port; -1: none)")
      ->check(CLI::Range(-1, 65535))
      ->capture_default_str();
  const std::map<std::string, Device> devices{{"auto", Device::Auto}, {"gpu", Device::Gpu}, {"cpu", Device::Cpu}};
  cli.add_option("--device", o.device, "auto: the GPU if usable, else the CPU with a notice; gpu: fail if unusable")
      ->transform(CLI::CheckedTransformer(devices).description(""))
      ->type_name("auto|gpu|cpu")
      ->default_str("auto");
  const std::map<std::string, Precision> precisions{
      {"fp32", Precision::Fp32}, {"tf32", Precision::Tf32}, {"fp16", Precision::Fp16}};
  cli.add_option("--precision", o.precision, "GPU arithmetic: fp32, tf32 or fp16 (the CPU runs fp32)")
      ->transform(CLI::CheckedTransformer(precisions).description(""))
      ->type_name("fp32|tf32|fp16")
      ->default_str("fp32");
  const std::map<std::string, int> cuda_majors{{"auto", 0}, {"12", 12}, {"13", 13}};
  cli.add_option("--cuda", o.cuda_major, "GPU backend: CUDA 12 or 13 (auto: the newest that runs)")
      ->transform(CLI::CheckedTransformer(cuda_majors).description(""))
      ->type_name("auto|12|13")
      ->default_str("auto");
  cli.add_option("--max-batch", o.max_batch, "Most samples in one forward pass, and in one request")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cli.add_option("--max-queue-delay-us", o.max_queue_delay_us,
                 "Longest a queued request waits for others to fill its batch (0: none)")
      ->check(CLI::Range(0, 10'000'000))
      ->capture_default_str();
  cli.add_option("--max-queue", o.max_queue, "Most samples waiting per model; a request over it gets 503 at once")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  cli.add_option("--max-request-bytes", o.max_request_bytes, "Largest request body (413 over it)")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 32))
      ->capture_default_str();
  cli.add_option("--http-threads", o.http_threads, "HTTP connections, and gRPC requests, served at once")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cli.add_option("--decode-threads", o.decode_threads, "Threads decoding images (0: one per core)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  cli.add_option("--threads", o.threads, "CPU backend threads (0: every core or one, per batch size by recent speed)")
      ->check(CLI::Range(0, 1024));
  cli.add_option("--drain-timeout", o.drain_timeout_s,
                 "Seconds SIGTERM waits for requests in flight before exiting anyway")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  cli.add_option("--read-timeout", o.read_timeout_s, "Seconds a client may send nothing mid-request")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  cli.add_option("--idle-timeout", o.idle_timeout_s, "Seconds an idle kept-alive connection stays open")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  cli.add_option("--manifest", o.manifest, "Environment manifest to verify (default: the shipped VERSIONS.toml)")
      ->type_name("PATH");
  cli.add_flag("--no-verify", o.no_verify, "Skip the start-up check of the environment and the model digests");
  cli.add_flag("-v,--verbose", o.verbose, "Log the GPU backend's choices");
  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << cli.help();
    result.exit_code = kExitOk;
    return result;
  } catch (const CLI::ParseError& e) {
    std::cerr << "infer serve: " << e.what() << "\nRun 'infer serve --help' for usage.\n";
    result.exit_code = kExitUsage;
    return result;
  }
  auto usage = [&](const std::string& message) {
    std::cerr << "infer serve: " << message << "\nRun 'infer serve --help' for usage.\n";
    result.exit_code = kExitUsage;
    return result;
  };
  for (const std::string& m : models) {
    const std::size_t eq = m.find('=');
    ServedModelArg arg{eq == std::string::npos ? m : m.substr(0, eq), eq == std::string::npos ? "" : m.substr(eq + 1)};
    if (!valid_model_name(arg.name))
      return usage("--model " + m + ": the name must be 1 to 128 letters, digits, '_', '-' or '.'");
    if (eq != std::string::npos && arg.path.empty()) return usage("--model " + m + ": no path after '='");
    for (const ServedModelArg& other : o.models) {
      if (other.name == arg.name) return usage("--model: the name " + arg.name + " is given twice");
    }
    o.models.push_back(arg);
  }
  if (o.device == Device::Cpu && o.cuda_major != 0) return usage("--cuda picks a GPU backend; --device cpu uses none");
  if (o.device == Device::Cpu && o.precision != Precision::Fp32)
    return usage("--precision needs the GPU; --device cpu runs fp32 only");
  const std::pair<const char*, int> ports[] = {
      {"--http-port", o.http_port}, {"--grpc-port", o.grpc_port}, {"--metrics-port", o.metrics_port}};
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = i + 1; j < 3; ++j) {
      if (ports[i].second > 0 && ports[i].second == ports[j].second)
        return usage(std::string(ports[i].first) + " and " + ports[j].first + " are both " +
                     std::to_string(ports[i].second));
    }
  }
  return result;
}

}  // namespace infer::app
