#include "gpu_backend.h"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <stdexcept>

#include "errors.h"
#include "network.h"

namespace infer {
namespace {

constexpr const char* kLibraryName = "libinfer_cudnn.so";

std::filesystem::path executable_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

class GpuBackend final : public Backend {
 public:
  GpuBackend(std::shared_ptr<GpuLibrary> library, const Network& network, int max_batch)
      : library_(std::move(library)), layer_count_(network.layers().size()), max_batch_(max_batch) {
    std::array<char, 1024> message{};
    const int status = library_->api().create(&network, max_batch, &executor_, message.data(), message.size());
    if (status == INFER_GPU_UNAVAILABLE) throw GpuUnavailableError(message.data());
    if (status != INFER_GPU_OK) throw GpuError(message.data());
  }
  ~GpuBackend() override { library_->api().destroy(executor_); }

  std::string description() const override { return std::string("gpu: ") + library_->api().describe(executor_); }
  const char* device() const override { return "gpu"; }
  int max_batch() const override { return max_batch_; }
  std::size_t layer_count() const override { return layer_count_; }

  void forward(const float* input, int n, float* output, std::size_t layer_count) override {
    std::array<char, 1024> message{};
    const int status =
        library_->api().forward(executor_, input, n, output, layer_count, message.data(), message.size());
    if (status == INFER_GPU_BAD_ARGUMENT) throw std::invalid_argument(message.data());
    if (status != INFER_GPU_OK) throw GpuError(message.data());
  }

 private:
  std::shared_ptr<GpuLibrary> library_;  // keeps the code of executor_ loaded
  void* executor_ = nullptr;
  std::size_t layer_count_;
  int max_batch_;
};

}  // namespace

std::vector<std::filesystem::path> gpu_library_candidates() {
  std::vector<std::filesystem::path> out;
  if (const char* env = std::getenv("INFER_GPU_LIBRARY"); env && *env) {
    out.emplace_back(env);
    return out;
  }
  const std::filesystem::path dir = executable_dir();
  out.push_back(dir / kLibraryName);
  out.push_back(dir / ".." / "lib" / kLibraryName);
  out.push_back(dir / ".." / "lib" / "infer" / kLibraryName);
  return out;
}

GpuLibrary::GpuLibrary(void* handle, const InferGpuPlugin* api, std::filesystem::path path)
    : handle_(handle), api_(api), path_(std::move(path)) {}

GpuLibrary::~GpuLibrary() { dlclose(handle_); }

std::shared_ptr<GpuLibrary> GpuLibrary::open() {
  const std::vector<std::filesystem::path> candidates = gpu_library_candidates();
  for (const std::filesystem::path& p : candidates) {
    std::error_code ec;
    if (std::filesystem::exists(p, ec)) return open(p);
  }
  if (const char* env = std::getenv("INFER_GPU_LIBRARY"); env && *env) {
    throw GpuUnavailableError("INFER_GPU_LIBRARY=" + std::string(env) + ": no such file");
  }
  throw GpuUnavailableError(std::string(kLibraryName) +
                            " (the GPU backend) was not found next to the executable; this build has no GPU "
                            "backend (configure with CUDA and cuDNN installed) or it was not installed");
}

std::shared_ptr<GpuLibrary> GpuLibrary::open(const std::filesystem::path& path) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw GpuUnavailableError("cannot load the GPU backend: " + std::string(why ? why : path.string()));
  }
  auto entry = reinterpret_cast<InferGpuPluginEntry>(dlsym(handle, "infer_gpu_plugin"));
  const InferGpuPlugin* api = entry ? entry() : nullptr;
  if (!api || api->abi_version != INFER_GPU_PLUGIN_ABI || api->network_size != sizeof(Network)) {
    dlclose(handle);
    throw GpuUnavailableError(path.string() + " is not a GPU backend of this build of infer (ABI mismatch); "
                              "use the library built with this executable");
  }
  return std::shared_ptr<GpuLibrary>(new GpuLibrary(handle, api, path));
}

InferGpuVersions GpuLibrary::versions() const {
  InferGpuVersions v{};
  api_->versions(&v);
  return v;
}

std::unique_ptr<Backend> make_gpu_backend(const Network& network, int max_batch) {
  return make_gpu_backend(GpuLibrary::open(), network, max_batch);
}

std::unique_ptr<Backend> make_gpu_backend(std::shared_ptr<GpuLibrary> library, const Network& network, int max_batch) {
  if (max_batch < 1) throw std::invalid_argument("max_batch must be at least 1");
  return std::make_unique<GpuBackend>(std::move(library), network, max_batch);
}

}  // namespace infer
