#include "app/version.h"

#include <ostream>

#include "infer/environment.h"
#include "infer/version.h"
#include "manifest/probe.h"
#include "backends/cpu/cpu_backend.h"
#include "infer/errors.h"
#include "backends/gpu_backend.h"
#include "platform/install_layout.h"
#include "formats/model_file.h"
#include "platform/nvidia_versions.h"

namespace infer::app {
namespace {

// The libraries report 0 for a version they could not read.
std::string cuda_or_none(int v) { return v > 0 ? cuda_version_string(v) : "none"; }
std::string cudnn_or_none(int v) { return v > 0 ? cudnn_version_string(v) : "none"; }

}  // namespace

void print_version(std::ostream& out, const std::string& model) {
  const BuildInfo built = build_info();
  out << "infer " << version_string() << '\n';
  out << "  built with:   " << built.compiler << ", C++" << __cplusplus / 100 % 100 << ", " << INFER_BUILD_TYPE << '\n';
  out << "  GPU backend:  ";
  if (built.cuda.empty()) {
#ifdef _WIN32
    out << "built apart from infer.exe (infer_cudnn.dll: MSVC and the CUDA toolkit, docs/windows.md)\n";
#else
    out << "not built (CUDA toolkit or cuDNN not found at configure time)\n";
#endif
  } else {
    out << "built for CUDA " << built.cuda << ", cuDNN " << built.cudnn << '\n';
  }
  out << "  CPU backend:  " << cpu_libraries() << '\n';
  try {
    const auto library = GpuLibrary::open();
    const InferGpuVersions v = library->versions();
    out << "  run time:     " << library->path().u8string() << '\n'
        << "                CUDA runtime " << cuda_or_none(v.cuda_runtime_loaded) << " (built against "
        << cuda_or_none(v.cuda_runtime_built) << ")\n"
        << "                CUDA driver: "
        << (v.cuda_driver == 0 ? std::string("none (cudaDriverGetVersion found no NVIDIA driver)")
                               : "supports up to CUDA " + cuda_version_string(v.cuda_driver))
        << '\n'
        << "                cuDNN " << cudnn_or_none(v.cudnn_loaded) << " (built against "
        << cudnn_or_none(v.cudnn_built) << "; this cuDNN was built for CUDA " << cuda_or_none(v.cudnn_loaded_cudart)
        << ")\n";
  } catch (const GpuUnavailableError& e) {
    out << "  run time:     GPU backend not loadable: " << e.what() << '\n';
  }
  // The project's CPU stand-in for NVIDIA's libraries (tests only) says so wherever it is loaded.
  const manifest::MachineProbe& machine = manifest::probe_machine({built.cuda, built.cudnn, built.compiler});
  for (const manifest::LibraryProbe* lib : {&machine.libcuda, &machine.libnvml, &machine.cudart, &machine.cudnn}) {
    if (lib->standin.empty()) continue;
    out << "  STAND-IN:     " << lib->path << ": " << lib->standin << " -- not a GPU\n";
  }
  try {
    const std::filesystem::path model_path = model.empty() ? default_model_path() : std::filesystem::u8path(model);
    const LoadedModel loaded = load_model(model_path);
    const Network& net = loaded.network;
    out << "  model:        " << net.name() << " (" << model_path.u8string() << "), input " << to_string(net.input().dims)
        << ", " << net.output_dims().size() << " classes, " << net.layers().size() << " layers\n";
  } catch (const InputError& e) {
    out << "  model:        not loadable: " << e.what() << '\n';
  }
}

}  // namespace infer::app
