#include "backends/gpu_backend.h"

#include <array>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "infer/errors.h"
#include "platform/install_layout.h"
#include "platform/isolated.h"
#include "graph/network.h"

namespace infer {
namespace {

// The C side of GpuOptions::log: no exception may cross into the library.
void log_trampoline(void* ctx, const char* line) {
  try {
    (*static_cast<const std::function<void(const std::string&)>*>(ctx))(line);
  } catch (...) {
    // A failing log sink must not fail inference.
  }
}

class GpuBackend final : public Backend {
 public:
  // module_ms: how long opening `library` took (choice, trial load, load), when the caller timed it.
  GpuBackend(std::shared_ptr<GpuLibrary> library, const Network& network, int max_batch, const GpuOptions& options,
             std::optional<double> module_ms)
      : library_(std::move(library)),
        options_(options),
        module_ms_(module_ms),
        layer_count_(network.layers().size()),
        output_size_(network.output_dims().size()),
        max_batch_(max_batch) {
    InferGpuOptions c{};
    c.precision = static_cast<int>(options_.precision);
    c.fold_batchnorm = options_.fold_batchnorm ? 1 : 0;
    c.cuda_graphs = options_.cuda_graphs ? 1 : 0;
    c.autotune = options_.autotune ? 1 : 0;
    c.autotune_cache = options_.autotune_cache.c_str();
    c.deterministic = options_.deterministic ? 1 : 0;
    if (options_.log) {
      c.log = log_trampoline;
      c.log_ctx = &options_.log;  // options_ lives as long as the executor
    }
    if (options_.log)
      options_.log("GPU backend " + gpu_backend_name(library_->choice().chosen) + ": " + library_->choice().summary() +
                   " (" + library_->path().u8string() + ")");
    std::array<char, 1024> message{};
    const int status = library_->api().create(&network, max_batch, &c, &executor_, message.data(), message.size());
    if (status == INFER_GPU_UNAVAILABLE) throw GpuUnavailableError(message.data());
    // Everything else, BAD_ARGUMENT included, is GpuError: the caller's own arguments were checked
    // in make_gpu_backend, so a refusal here is the library's (a network or option it cannot set
    // up), and the app's --device auto falls back to the CPU on any infer::Error.
    if (status != INFER_GPU_OK) throw GpuError(message.data());
  }
  ~GpuBackend() override { library_->api().destroy(executor_); }

  std::string description() const override {
    return "gpu (" + gpu_backend_name(library_->choice().chosen) + "): " + library_->api().describe(executor_);
  }
  const char* device() const override { return "gpu"; }
  int max_batch() const override { return max_batch_; }
  std::size_t layer_count() const override { return layer_count_; }
  std::size_t output_size() const override { return output_size_; }

  void forward(const float* input, int n, float* output, std::size_t layer_count) override {
    std::array<char, 1024> message{};
    const int status =
        library_->api().forward(executor_, input, n, output, layer_count, message.data(), message.size());
    if (status == INFER_GPU_BAD_ARGUMENT) throw std::invalid_argument(message.data());
    if (status != INFER_GPU_OK) throw GpuError(message.data());
  }

  void top_k(const float* input, int n, int k, int* classes, float* scores) override {
    if (!gpu_top_k_on_device(output_size_, n)) {
      Backend::top_k(input, n, k, classes, scores);  // beyond the kernel's limits: forward() + host selection
      return;
    }
    std::array<char, 1024> message{};
    const int status = library_->api().top_k(executor_, input, n, k, classes, scores, message.data(), message.size());
    if (status == INFER_GPU_BAD_ARGUMENT) throw std::invalid_argument(message.data());
    if (status != INFER_GPU_OK) throw GpuError(message.data());
  }

  std::optional<BatchTiming> last_timing() const override {
    InferGpuTiming t{};
    if (library_->api().last_timing(executor_, &t) != INFER_GPU_OK || !t.available) return std::nullopt;
    return BatchTiming{t.h2d_ms, t.compute_ms, t.d2h_ms, t.device_ms};
  }

  std::vector<StartupPhase> startup_phases() const override {
    std::vector<StartupPhase> phases;
    if (module_ms_) phases.push_back(StartupPhase{"GPU module: choice, trial load in a child, load", *module_ms_});
    const char* name = nullptr;
    double ms = 0.0;
    if (library_->api().startup_phase == nullptr) return phases;
    for (std::size_t i = 0; library_->api().startup_phase(executor_, i, &name, &ms) == INFER_GPU_OK; ++i) {
      phases.push_back(StartupPhase{name, ms});
    }
    return phases;
  }

 private:
  std::shared_ptr<GpuLibrary> library_;  // keeps the code of executor_ loaded
  GpuOptions options_;                   // its log function is called by the library
  std::optional<double> module_ms_;
  void* executor_ = nullptr;
  std::size_t layer_count_;
  std::size_t output_size_;
  int max_batch_;
};

}  // namespace

bool gpu_top_k_on_device(std::size_t classes, int n) {
  return classes <= static_cast<std::size_t>(INFER_GPU_TOP_K_MAX_CLASSES) && n <= INFER_GPU_TOP_K_MAX_SAMPLES;
}

std::vector<std::filesystem::path> gpu_library_candidates(int cuda_major) {
  std::vector<std::filesystem::path> out;
  const char* name = gpu_library_name(cuda_major);
  if (!name) return out;
  for (const std::filesystem::path& dir : gpu_module_folders()) out.push_back(dir / name);
  return out;
}

void report_plugin(const ChildChannel& ch, const InferGpuPlugin& api) {
  ch.step("asking the CUDA runtime and cuDNN their versions");
  InferGpuVersions v{};
  api.versions(&v);
  ch.put("built", std::to_string(v.cuda_runtime_built));
  ch.put("runtime", std::to_string(v.cuda_runtime_loaded));
  ch.put("driver", std::to_string(v.cuda_driver));
  ch.put("cudnn", std::to_string(v.cudnn_loaded));
  ch.put("cudnn_cudart", std::to_string(v.cudnn_loaded_cudart));
  ch.step("asking the CUDA runtime for the devices (cudaGetDeviceCount)");
  InferGpuDevice d{};
  api.device(&d);
  ch.put("device_count", std::to_string(d.count));
  ch.put("device_cc", std::to_string(d.cc_major * 10 + d.cc_minor));
  if (d.error != 0) ch.put("device_error", d.error_name);
  ch.put("loaded", "1");
}

void read_probe(const IsolatedResult& r, GpuBackendProbe& probe) {
  const auto number = [&r](const char* key) { return static_cast<int>(r.number(key).value_or(0)); };
  if (!r.finished()) {
    probe.load_failure = "loading " + probe.module.filename().u8string() + " " + r.failure();
    return;
  }
  if (r.has("load_error")) {
    probe.load_failure = r.value("load_error");
    return;
  }
  if (!r.has("loaded")) {
    probe.load_failure = probe.module.u8string() + " is not a GPU backend of this build of infer (ABI mismatch)";
    return;
  }
  probe.runtime = number("runtime");
  probe.driver_cuda = number("driver");
  probe.cudnn = number("cudnn");
  probe.cudnn_cudart = number("cudnn_cudart");
  probe.device_count = number("device_count");
  probe.device_cc = number("device_cc");
  probe.device_error = r.value("device_error");
}

namespace {

const char* cxx_library_name(std::uint32_t id) {
  switch (id) {
    case 1: return "libstdc++ (GCC, mingw-w64)";
    case 2: return "Microsoft's STL (MSVC)";
    case 3: return "libc++ (clang)";
    default: return "an unknown C++ standard library";
  }
}

}  // namespace

const InferGpuPlugin& checked_plugin(InferGpuPluginEntry entry, const std::filesystem::path& path) {
  const InferGpuPlugin* api = entry ? entry() : nullptr;
  const std::string file = path.u8string();
  if (!api || api->abi_version != INFER_GPU_PLUGIN_ABI || api->network_size != sizeof(Network) ||
      api->ops_hash != ops_hash()) {
    throw GpuUnavailableError(file + " is not a GPU backend of this build of infer (ABI mismatch); "
                              "use the library built with this executable");
  }
  if (api->cxx_library != INFER_GPU_CXX_LIBRARY) {
    throw GpuUnavailableError(file + " was built with " + cxx_library_name(api->cxx_library) + ", this program with " +
                              cxx_library_name(INFER_GPU_CXX_LIBRARY) +
                              ": they cannot share the network's C++ types; build both with one compiler "
                              "(docs/windows.md)");
  }
  return *api;
}

GpuLibrary::GpuLibrary(void* handle, const InferGpuPlugin* api, std::filesystem::path path)
    : handle_(handle), api_(api), path_(std::move(path)) {
  // A module opened by path: its own major, by the runtime it was built with.
  InferGpuVersions v{};
  api_->versions(&v);
  choice_.chosen = choice_.forced = v.cuda_runtime_built / 1000;
}

std::shared_ptr<GpuLibrary> GpuLibrary::open(int forced_major, const std::string& why) {
  if (const std::filesystem::path env = path_from_environment("INFER_GPU_LIBRARY"); !env.empty()) {
    std::error_code ec;
    if (!std::filesystem::exists(env, ec))
      throw GpuUnavailableError("INFER_GPU_LIBRARY=" + env.u8string() + ": no such file");
    return open(env);
  }
  const int forced = forced_major != 0 ? forced_major : cuda_major_from_environment();
  const std::string reason = forced_major != 0 ? (why.empty() ? "asked for" : why) : "asked for by INFER_CUDA";
  std::vector<GpuBackendProbe> probes;
  std::string looked, names;
  for (const GpuBackendRequirements& r : kGpuBackends) {
    const char* name = gpu_library_name(r.cuda_major);
    if (!name) {  // not built for this system (Windows: CUDA 13 only)
      if (forced == r.cuda_major) {
        throw GpuUnavailableError("the CUDA " + std::to_string(forced) + " backend is not built for this system");
      }
      continue;
    }
    names += (names.empty() ? "" : " or ") + std::string(name);
    GpuBackendProbe p;
    p.cuda_major = r.cuda_major;
    for (const std::filesystem::path& candidate : gpu_library_candidates(r.cuda_major)) {
      std::error_code ec;
      if (p.module.empty() && std::filesystem::exists(candidate, ec)) p.module = candidate;
      if (looked.find(candidate.parent_path().u8string()) == std::string::npos) {
        looked += (looked.empty() ? "" : ", ") + candidate.parent_path().u8string();
      }
    }
    if (forced == 0 || forced == r.cuda_major) probes.push_back(std::move(p));
  }
  bool any = false;
  for (const GpuBackendProbe& p : probes) any = any || !p.module.empty();
  if (!any) {
    throw GpuUnavailableError(names + " (the GPU backend) was not found (looked in " + looked + "); " + kGpuBuildHint);
  }
  // One backend for this system (Windows): nothing to choose from. Its trial load and its own
  // create() say why it cannot run, as the one module always did.
  if (probes.size() == 1 && forced == 0) {
    std::shared_ptr<GpuLibrary> library = open(probes.front().module);
    library->choice_.chosen = probes.front().cuda_major;
    library->choice_.forced = 0;
    library->choice_.backends.push_back({library->choice_.chosen, true, "the only GPU backend of this system"});
    return library;
  }
  probe(probes);
  GpuChoice choice = choose_gpu_backend(probes, forced, reason);
  if (choice.chosen == 0) throw GpuUnavailableError(choice.summary() + "; infer --check names the cause");
  for (const GpuBackendProbe& p : probes) {
    if (p.cuda_major != choice.chosen) continue;
    std::shared_ptr<GpuLibrary> library = load(p.module);
    library->choice_ = std::move(choice);
    return library;
  }
  throw std::logic_error("GpuLibrary::open: the chosen backend has no probe");
}

InferGpuVersions GpuLibrary::versions() const {
  InferGpuVersions v{};
  api_->versions(&v);
  return v;
}

std::unique_ptr<Backend> make_gpu_backend(const Network& network, int max_batch, const GpuOptions& options) {
  if (max_batch < 1) throw std::invalid_argument("max_batch must be at least 1");
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<GpuLibrary> library = GpuLibrary::open(options.cuda_major, options.cuda_major_reason);
  const double module_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return std::make_unique<GpuBackend>(std::move(library), network, max_batch, options, module_ms);
}

std::unique_ptr<Backend> make_gpu_backend(std::shared_ptr<GpuLibrary> library, const Network& network, int max_batch,
                                          const GpuOptions& options) {
  if (max_batch < 1) throw std::invalid_argument("max_batch must be at least 1");
  return std::make_unique<GpuBackend>(std::move(library), network, max_batch, options, std::nullopt);
}

}  // namespace infer
