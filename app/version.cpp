#include "app/version.h"

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <string>

#include "app/options.h"
#include "infer/classifier.h"
#include "infer/environment.h"
#include "infer/errors.h"
#include "infer/version.h"
#include "manifest/report.h"

namespace infer::app {
namespace {

// RuntimeInfo leaves a version empty where the library reported none.
std::string or_none(const std::string& version) { return version.empty() ? "none" : version; }

// The labels' column: "  run time:     " and the lines continuing an entry start their text here.
constexpr std::size_t kTextColumn = 16;

// One entry: "  <label>: " padded to the text column, then the text, wrapped to `width` at spaces
// (manifest::wrap_labelled: a path or version is never cut); an empty label continues the entry above.
std::string entry(const std::string& label, const std::string& text, std::size_t width) {
  std::string prefix = label.empty() ? "" : "  " + label + ":";
  prefix.resize(std::max(kTextColumn, prefix.size() + 1), ' ');
  return manifest::wrap_labelled(prefix, text, width);
}

}  // namespace

void print_version(std::ostream& out, const std::string& model, std::size_t width) {
  const BuildInfo built = build_info();
  out << manifest::wrap_labelled("infer ", version_string(), width);
  out << entry("built with",
               built.compiler + ", C++" + std::to_string(__cplusplus / 100 % 100) + ", " + INFER_BUILD_TYPE, width);
  // One line per GPU backend of this build (one module per CUDA major, docs/gpu.md).
  if (built.backends.empty()) {
#ifdef _WIN32
    out << entry("GPU backend",
                 "built apart from infer.exe (infer_cudnn.dll: MSVC and the CUDA toolkit, docs/windows.md)", width);
#else
    out << entry("GPU backend", "not built (CUDA toolkit or cuDNN not found at configure time)", width);
#endif
  }
  for (const BuildInfo::Backend& b : built.backends) {
    out << entry("GPU backend", b.name + ": built for CUDA " + b.cuda + ", cuDNN " + b.cudnn, width);
  }
  const RuntimeInfo run = runtime_info();
  out << entry("CPU backend", run.cpu_libraries, width);
  if (run.gpu_loaded) {
    out << entry("run time", run.gpu_backend + ": " + run.gpu_module.u8string(), width)
        << entry(
               "",
               "CUDA runtime " + or_none(run.cuda_runtime) + " (built against " + or_none(run.cuda_runtime_built) + ")",
               width)
        << entry("",
                 "CUDA driver: " + (run.cuda_driver.empty()
                                        ? std::string("none (cudaDriverGetVersion found no NVIDIA driver)")
                                        : "supports up to CUDA " + run.cuda_driver),
                 width)
        << entry("",
                 "cuDNN " + or_none(run.cudnn) + " (built against " + or_none(run.cudnn_built) +
                     "; this cuDNN was built for CUDA " + or_none(run.cudnn_cuda) + ")",
                 width);
    for (const std::string& why : run.gpu_choice) out << entry("chosen", why, width);
  } else {
    out << entry("run time", "GPU backend not loadable: " + run.gpu_problem, width);
  }
  // The project's CPU stand-in for NVIDIA's libraries (tests only) says so wherever it is loaded.
  for (const std::string& standin : run.standins) out << entry("STAND-IN", standin + " -- not a GPU", width);
  try {
    const ModelInfo m = model_info(arg_path(model));
    out << entry("model",
                 m.name + " (" + m.path.u8string() + "), input " + std::to_string(m.input.channels) + 'x' +
                     std::to_string(m.input.height) + 'x' + std::to_string(m.input.width) + ", " +
                     std::to_string(m.classes) + " classes, " + std::to_string(m.layers) + " layers",
                 width);
  } catch (const InputError& e) {
    out << entry("model", std::string("not loadable: ") + e.what(), width);
  }
}

}  // namespace infer::app
