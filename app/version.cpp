#include "app/version.h"

#include <filesystem>
#include <ostream>

#include "app/options.h"
#include "infer/classifier.h"
#include "infer/environment.h"
#include "infer/errors.h"
#include "infer/version.h"

namespace infer::app {
namespace {

// RuntimeInfo leaves a version empty where the library reported none.
std::string or_none(const std::string& version) { return version.empty() ? "none" : version; }

}  // namespace

void print_version(std::ostream& out, const std::string& model) {
  const BuildInfo built = build_info();
  out << "infer " << version_string() << '\n';
  out << "  built with:   " << built.compiler << ", C++" << __cplusplus / 100 % 100 << ", " << INFER_BUILD_TYPE << '\n';
  // One line per GPU backend of this build (one module per CUDA major, docs/gpu.md).
  if (built.backends.empty()) {
#ifdef _WIN32
    out << "  GPU backend:  built apart from infer.exe (infer_cudnn.dll: MSVC and the CUDA toolkit, docs/windows.md)\n";
#else
    out << "  GPU backend:  not built (CUDA toolkit or cuDNN not found at configure time)\n";
#endif
  }
  for (const BuildInfo::Backend& b : built.backends) {
    out << "  GPU backend:  " << b.name << ": built for CUDA " << b.cuda << ", cuDNN " << b.cudnn << '\n';
  }
  const RuntimeInfo run = runtime_info();
  out << "  CPU backend:  " << run.cpu_libraries << '\n';
  if (run.gpu_loaded) {
    out << "  run time:     " << run.gpu_backend << ": " << run.gpu_module.u8string() << '\n'
        << "                CUDA runtime " << or_none(run.cuda_runtime) << " (built against "
        << or_none(run.cuda_runtime_built) << ")\n"
        << "                CUDA driver: "
        << (run.cuda_driver.empty() ? std::string("none (cudaDriverGetVersion found no NVIDIA driver)")
                                    : "supports up to CUDA " + run.cuda_driver)
        << '\n'
        << "                cuDNN " << or_none(run.cudnn) << " (built against " << or_none(run.cudnn_built)
        << "; this cuDNN was built for CUDA " << or_none(run.cudnn_cuda) << ")\n";
    for (const std::string& why : run.gpu_choice) out << "  chosen:       " << why << '\n';
  } else {
    out << "  run time:     GPU backend not loadable: " << run.gpu_problem << '\n';
  }
  // The project's CPU stand-in for NVIDIA's libraries (tests only) says so wherever it is loaded.
  for (const std::string& standin : run.standins) out << "  STAND-IN:     " << standin << " -- not a GPU\n";
  try {
    const ModelInfo m = model_info(arg_path(model));
    out << "  model:        " << m.name << " (" << m.path.u8string() << "), input " << m.input.channels << 'x'
        << m.input.height << 'x' << m.input.width << ", " << m.classes << " classes, " << m.layers << " layers\n";
  } catch (const InputError& e) {
    out << "  model:        not loadable: " << e.what() << '\n';
  }
}

}  // namespace infer::app
