// infer: classify images with a small CNN. The only place that prints to the user and picks the
// exit code (see exit_codes.h); everything below app/ throws typed errors.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "classify.h"
#include "environment.h"
#include "exit_codes.h"
#include "input_spec.h"
#include "memory_limit.h"
#include "model/cpu/cpu_backend.h"
#include "model/cpu/threads.h"
#include "model/errors.h"
#include "model/gpu_backend.h"
#include "model/model_file.h"
#include "model/printable.h"
#include "options.h"
#include "version.h"

namespace infer::app {
namespace {

namespace fs = std::filesystem;

GpuOptions gpu_options(const Options& o) {
  GpuOptions g;
  g.precision = o.precision;
  g.autotune = o.autotune;
  g.autotune_cache = o.autotune_cache;
  if (o.verbose) g.log = [](const std::string& line) { std::cerr << "infer: " << line << '\n'; };
  return g;
}

// "running on the CPU" plus, when another precision was asked for, that the CPU runs fp32.
std::string cpu_notice(const Options& o) {
  std::string notice = "infer: notice: running on the CPU";
  if (o.precision != Precision::Fp32) {
    notice += std::string(" in fp32 (--precision ") + precision_name(o.precision) + " needs the GPU)";
  }
  return notice + ": ";
}

// Picks the backend for --device. Throws GpuUnavailableError / GpuError for --device gpu.
// report: the start-up check (nullptr when skipped); a required item that is not ok means the CPU
// under --device auto and an error with the whole report under --device gpu.
std::unique_ptr<Backend> choose_backend(const Options& o, const Network& net, const manifest::Report* report) {
  if (o.device == DeviceChoice::Cpu) return make_cpu_backend(net, o.batch);
  if (const manifest::ReportRow* failed = report ? report->first_failure() : nullptr) {
    if (o.device == DeviceChoice::Gpu) {
      throw GpuUnavailableError("the environment does not match " + report->manifest + " (first: " +
                                manifest::one_line(*failed) + ")\n" + manifest::format_table(*report));
    }
    std::cerr << cpu_notice(o) << manifest::one_line(*failed) << '\n';
    return make_cpu_backend(net, o.batch);
  }
  if (o.device == DeviceChoice::Gpu) return make_gpu_backend(net, o.batch, gpu_options(o));
  try {
    return make_gpu_backend(net, o.batch, gpu_options(o));
  } catch (const Error& e) {  // unusable, or failing to set up: the CPU gives the same answers
    std::cerr << cpu_notice(o) << e.what() << '\n';
    return make_cpu_backend(net, o.batch);
  }
}

int run(int argc, char** argv) {
  ParseResult parsed = parse_options(argc, argv);
  if (parsed.exit_code) return *parsed.exit_code;
  const Options& o = parsed.options;
  const fs::path model_path = o.model.empty() ? shipped_file("weights/fashion.toml") : fs::path(o.model);

  if (o.threads > 0) {
    cpu::set_threads(o.threads);
  } else if (o.inputs.size() == 1 && fs::is_regular_file(o.inputs[0])) {
    // One image: one thread. Starting and waking the OpenMP team costs more than it saves on one
    // image (measured: 20-30 ms for the shipped model on one thread; 30-130 ms on two, bimodal).
    cpu::set_threads(1);
  }
  if (o.version) {
    print_version(std::cout, model_path);
    return kExitOk;
  }
  if (o.check) return run_check(o, std::cout, std::cerr);
  if (!o.write_manifest.empty()) return run_write_manifest(o, model_path, std::cout, std::cerr);

  // The start-up check: the manifest (and the digests of the model files it lists), then the
  // environment unless the CPU was asked for.
  std::optional<manifest::Manifest> manifest;
  std::optional<manifest::Report> report;
  std::unique_ptr<LoadedModel> model;
  try {
    if (o.no_verify) {
      std::cerr << "infer: notice: --no-verify: the environment and the model digests are not checked\n";
    } else {
      manifest = manifest_for_run(o, std::cerr);
    }
    model = std::make_unique<LoadedModel>(manifest ? load_model(model_path, digest_check(*manifest)) : load_model(model_path));
    parsed.options.batch = batch_within_memory_limit(o, *model, std::cerr);
  } catch (const InputError& e) {
    std::cerr << "infer: " << printable_utf8(e.what()) << '\n';
    return kExitInvalidInput;
  }
  InputSpec input;
  try {
    input = effective_input(o, model->network.input());
  } catch (const std::invalid_argument& e) {
    std::cerr << "infer: " << e.what() << "\nRun 'infer --help' for usage.\n";
    return kExitUsage;
  }
  if (manifest && o.device != DeviceChoice::Cpu) report = startup_report(*manifest);

  std::unique_ptr<Backend> backend;
  try {
    backend = choose_backend(o, model->network, report ? &*report : nullptr);
  } catch (const GpuUnavailableError& e) {
    std::cerr << "infer: the GPU is unusable (--device gpu): " << e.what() << '\n';
    return kExitGpuUnusable;
  } catch (const GpuError& e) {
    std::cerr << "infer: GPU error: " << e.what() << '\n';
    return kExitGpuUnusable;
  }

  try {
    const RunCounts counts = classify_all(o, *model, input, *backend, std::cout, std::cerr);
    if (counts.failed > 0) {
      std::cerr << "infer: " << counts.failed << " of " << counts.failed + counts.classified << " inputs failed"
                << (counts.classified > 0 ? "; the others were classified\n" : "; none was classified\n");
      return kExitInvalidInput;
    }
  } catch (const GpuError& e) {
    // A failure mid-run never switches devices silently: the results so far were printed.
    std::cout.flush();
    std::cerr << "infer: GPU error during the run: " << e.what() << '\n';
    return kExitGpuUnusable;
  }
  return kExitOk;
}

// Every mode's output reaches stdout or the run fails: the last buffered bytes are written here,
// and a write that failed on the way (a full disk, a closed pipe with SIGPIPE ignored) is reported.
int finish_output(int code) {
  errno = 0;
  std::cout.flush();
  if (std::cout) return code;
  const char* why = errno ? std::strerror(errno) : "write failed";
  std::cerr << "infer: cannot write to standard output: " << why << '\n';
  return kExitOutput;
}

}  // namespace
}  // namespace infer::app

int main(int argc, char** argv) {
  try {
    return infer::app::finish_output(infer::app::run(argc, argv));
  } catch (const infer::app::OutputError& e) {
    std::cerr << "infer: cannot write to standard output: " << e.what() << '\n';
    return infer::app::kExitOutput;
  } catch (const std::exception& e) {
    std::cerr << "infer: internal error: " << e.what() << '\n';
    return infer::app::kExitInternal;
  }
}
