#include "api/setup.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <system_error>

#include "manifest/check.h"
#include "manifest/report.h"
#include "manifest/sha256.h"
#include "backends/cpu/cpu_backend.h"
#include "infer/errors.h"
#include "backends/gpu_backend.h"
#include "platform/install_layout.h"
#include "backends/cpu/memory_plan.h"
#include "platform/byte_size.h"

namespace infer {

std::string cpu_fallback_message(Precision precision, const std::string& reason, const std::string& setting) {
  std::string message = "running on the CPU";
  if (precision != Precision::Fp32) {
    message += " in fp32 (" + setting + " " + precision_name(precision) + " needs the GPU)";
  }
  return message + ": " + reason;
}

}  // namespace infer

namespace infer::api {
namespace {

namespace fs = std::filesystem;

void per_channel(const char* option, const std::vector<float>& values, int channels) {
  if (values.size() != static_cast<std::size_t>(channels)) {
    throw OptionError(option, "the model has " + std::to_string(channels) + " channel(s), so give " +
                                  std::to_string(channels) + " value(s), found " + std::to_string(values.size()));
  }
  if (!std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); })) {
    throw OptionError(option, "values must be finite numbers");
  }
}

GpuOptions gpu_options(const ClassifierOptions& o, int cuda_major, const std::string& why) {
  GpuOptions g;
  g.cuda_major = cuda_major;
  g.cuda_major_reason = why;
  g.precision = o.precision;
  g.autotune = o.autotune;
  g.autotune_cache = o.autotune_cache.u8string();
  g.log = o.gpu_log;
  return g;
}

std::unique_ptr<Backend> cpu_fallback(const ClassifierOptions& o, const Network& net, int batch,
                                      const std::string& why) {
  Notice n;
  n.kind = Notice::Kind::CpuFallback;
  n.reason = why;
  n.message = cpu_fallback_message(o.precision, why);
  notify(o, n);
  return make_cpu_backend(net, batch);
}

}  // namespace

manifest::BuildInfo build_info(int cuda_major) {
  if (cuda_major == 0) {  // the newest backend this build has
    const bool only_cu12 = std::string(INFER_CUDA_VERSION).empty() && !std::string(INFER_CUDA12_VERSION).empty();
    cuda_major = only_cu12 ? 12 : 13;
  }
  if (cuda_major == 12) {
    manifest::BuildInfo b{INFER_CUDA12_VERSION, INFER_CUDNN12_VERSION, INFER_COMPILER};
    b.cuda_major = 12;
    return b;
  }
  manifest::BuildInfo b{INFER_CUDA_VERSION, INFER_CUDNN_VERSION, INFER_COMPILER};
  b.cuda_major = cuda_major;
  return b;
}

manifest::Report check_manifest(const manifest::Manifest& m, int forced_major, bool model_files) {
  if (m.schema == 1) {
    // One backend, of the CUDA major its cuda.* items name (Manifest::as_schema2): another asked for
    // is not in it.
    const int major = m.as_schema2().backends.front().cuda_major;
    if (forced_major != 0 && forced_major != major) {
      throw GpuUnavailableError(m.path.u8string() + " (schema 1) describes the CUDA " + std::to_string(major) +
                                " backend only: this deployment was not validated on the CUDA " +
                                std::to_string(forced_major) + " backend");
    }
    return manifest::check(m, manifest::probe_machine(build_info(m)), model_files);
  }
  manifest::Manifest checked = m;
  if (forced_major != 0) {
    checked.backends.clear();
    for (const manifest::BackendSection& b : m.backends) {
      if (b.cuda_major == forced_major) checked.backends.push_back(b);
    }
    if (checked.backends.empty()) {
      throw GpuUnavailableError(m.path.u8string() + " lists no [[backend]] cu" + std::to_string(forced_major) +
                                ": this deployment was not validated on the CUDA " + std::to_string(forced_major) +
                                " backend");
    }
  }
  const int cudnn_major = manifest::wanted_cudnn_major(m);
  return manifest::check_backends(
      checked,
      [cudnn_major](int major) -> const manifest::MachineProbe& {
        manifest::BuildInfo b = build_info(major);
        b.cudnn_major = cudnn_major;
        return manifest::probe_machine(b);
      },
      model_files);
}

manifest::BuildInfo build_info(const manifest::Manifest& m) {
  manifest::BuildInfo b = build_info(m.schema == 1 ? m.as_schema2().backends.front().cuda_major : 0);
  b.cudnn_major = manifest::wanted_cudnn_major(m);
  return b;
}

std::mutex& setup_mutex() {
  static std::mutex m;
  return m;
}

void notify(const ClassifierOptions& options, const Notice& notice) {
  if (options.notice) options.notice(notice);
}

std::optional<manifest::Manifest> manifest_to_verify(const ClassifierOptions& o) {
  if (!o.verify) return std::nullopt;
  const fs::path path = o.manifest.empty() ? default_manifest_path() : o.manifest;
  std::error_code ec;
  if (o.manifest.empty() && !fs::exists(path, ec)) {
    Notice n;
    n.kind = Notice::Kind::NoManifest;
    n.message = "no manifest at " + path.u8string() + "; the environment is not checked";
    n.path = path;
    notify(o, n);
    return std::nullopt;
  }
  return manifest::read_manifest(path);
}

LoadedModel load_verified_model(const fs::path& model, const manifest::Manifest* m) {
  const fs::path path = model.empty() ? default_model_path() : model;
  if (!m) return load_model(path);
  return load_model(path, [m](const fs::path& file) {
    const manifest::ModelFile* listed = m->model_file(file);
    std::error_code ec;
    if (!listed || !fs::exists(file, ec)) return;  // not listed: fine; missing: the loader says so
    const std::string digest = manifest::sha256_file(file);
    if (digest != listed->sha256) {
      throw InputError(file.u8string(),
                       "SHA-256 is " + digest + " but " + m->path.u8string() + " (line " + std::to_string(listed->line) +
                           ") lists " + listed->sha256 +
                           ": refusing this file (restore it, or update the manifest if the change is intended)");
    }
  });
}

InputSpec effective_input(const PreprocessingOverrides& o, const InputSpec& model) {
  InputSpec spec = model;
  Preprocessing& p = spec.preprocessing;
  if (o.invert) p.invert = *o.invert;
  if (o.resize) p.resize = *o.resize;
  if (o.channel_order) p.channel_order = *o.channel_order;
  if (o.alpha) p.alpha = *o.alpha;
  if (o.resize) p.resize_size = 0;  // another mode: the model's crop size no longer applies
  if (o.resize_size) {
    if (p.resize != ResizeMode::Crop)
      throw OptionError("preprocessing.resize_size", "applies to the crop resize mode only");
    if (*o.resize_size < std::max(spec.dims.h, spec.dims.w)) {
      throw OptionError("preprocessing.resize_size", std::to_string(*o.resize_size) +
                                                         " is smaller than the model's input (" +
                                                         std::to_string(spec.dims.h) + "x" +
                                                         std::to_string(spec.dims.w) + "), which is cropped from it");
    }
    p.resize_size = *o.resize_size;
  }
  if (!o.mean.empty()) {
    per_channel("preprocessing.mean", o.mean, spec.dims.c);
    spec.mean = o.mean;
  }
  if (!o.std.empty()) {
    per_channel("preprocessing.std", o.std, spec.dims.c);
    if (std::any_of(o.std.begin(), o.std.end(), [](float s) { return !(s > 0.0f); })) {
      throw OptionError("preprocessing.std", "values must be positive");
    }
    spec.std = o.std;
  }
  return spec;
}

int batch_within_memory_limit(const ClassifierOptions& o, const LoadedModel& model) {
  if (o.max_batch < 1) throw OptionError("max_batch", "must be at least 1, found " + std::to_string(o.max_batch));
  if (o.max_memory == 0) return o.max_batch;
  const MemoryPlan plan = plan_memory(model.network);
  const int batch = largest_batch_within(plan, o.max_batch, o.max_memory);
  if (batch == 0) {
    const std::uint64_t one = plan.bytes(1);
    const std::string breakdown =
        "parameters " + bytes_string(plan.parameter_bytes) + ", activations " + bytes_string(plan.sample_bytes) +
        ", workspace " + bytes_string(plan.workspace_bytes) +
        (plan.onednn_bytes.empty()
             ? std::string()
             : ", oneDNN's scratchpad and Winograd weights " + bytes_string(plan.onednn_bytes[0]));
    throw MemoryLimitError(model.toml_path.u8string(),
                           "the model needs " + bytes_string(one) + " of memory for one sample (" + breakdown +
                               "), more than the memory limit of " + bytes_string(o.max_memory),
                           one, o.max_memory, breakdown);
  }
  if (batch < o.max_batch) {
    Notice n;
    n.kind = Notice::Kind::BatchReduced;
    n.requested_batch = o.max_batch;
    n.batch = batch;
    n.needed = plan.bytes(o.max_batch);
    n.limit = o.max_memory;
    n.message = "a batch of " + std::to_string(o.max_batch) + " would need " + bytes_string(n.needed) +
                " of memory, more than the limit of " + bytes_string(n.limit) + "; running batches of " +
                std::to_string(batch);
    notify(o, n);
  }
  return batch;
}

std::unique_ptr<Backend> choose_backend(const ClassifierOptions& o, const Network& net, int batch,
                                        const manifest::Manifest* m) {
  if (o.device == Device::Cpu) return make_cpu_backend(net, batch);
  // The backend asked for, else the one the manifest's check found running (schema 2), else the
  // newest that runs (GpuLibrary::open).
  int cuda_major = o.cuda_major != 0 ? o.cuda_major : cuda_major_from_environment();
  std::string why = cuda_major != 0 ? (o.cuda_major != 0 ? "asked for" : "asked for by INFER_CUDA") : "";
  if (m) {
    manifest::Report report;
    try {
      report = check_manifest(*m, cuda_major, /*model_files=*/false);
    } catch (const GpuUnavailableError& e) {
      if (o.device == Device::Gpu) throw;
      return cpu_fallback(o, net, batch, e.what());
    }
    if (cuda_major == 0 && !report.backend.empty()) {
      cuda_major = std::stoi(report.backend.substr(2));
      why = "the one " + m->path.filename().u8string() + " finds running here";
    }
    if (const manifest::ReportRow* failed = report.first_failure()) {
      if (o.device == Device::Gpu) {
        throw GpuUnavailableError("the environment does not match " + report.manifest +
                                  " (first: " + manifest::one_line(*failed) + ")\n" + manifest::format_table(report));
      }
      return cpu_fallback(o, net, batch, manifest::one_line(*failed));
    }
  }
  if (o.device == Device::Gpu) return make_gpu_backend(net, batch, gpu_options(o, cuda_major, why));
  try {
    return make_gpu_backend(net, batch, gpu_options(o, cuda_major, why));
  } catch (const Error& e) {  // unusable, or failing to set up: the CPU gives the same answers
    return cpu_fallback(o, net, batch, e.what());
  }
}

}  // namespace infer::api
