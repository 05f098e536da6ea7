// The environment check and manifest writer of <infer/environment.h>: the manifest module's
// check, report and writer, behind the public types.
#include "infer/environment.h"

#include "infer/errors.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/gpu_backend.h"
#include "manifest/check.h"
#include "manifest/report.h"
#include "manifest/writer.h"
#include "platform/install_layout.h"
#include "platform/nvidia_versions.h"
#include "formats/model_file.h"
#include "api/setup.h"

namespace infer {
namespace {

namespace fs = std::filesystem;

EnvironmentItem public_item(const manifest::ReportRow& row) {
  EnvironmentItem item;
  item.item = row.item;
  item.expected = row.expected;
  item.found = row.found;
  item.source = row.source;
  item.status = manifest::to_string(row.status);
  item.required = row.severity == manifest::Severity::Required;
  item.fix = row.fix;
  item.because = row.because;
  item.notes = row.notes;
  return item;
}

// The libraries report 0 for a version they could not read.
std::string cuda_or_empty(int v) { return v > 0 ? cuda_version_string(v) : ""; }
std::string cudnn_or_empty(int v) { return v > 0 ? cudnn_version_string(v) : ""; }

}  // namespace

BuildInfo build_info() {
  const manifest::BuildInfo b = api::build_info();
  return {b.cuda, b.cudnn, b.compiler};
}

RuntimeInfo runtime_info() {
  const std::lock_guard<std::mutex> lock(api::setup_mutex());
  RuntimeInfo info;
  info.cpu_libraries = cpu_libraries();
  try {
    const auto library = GpuLibrary::open();
    const InferGpuVersions v = library->versions();
    info.gpu_module = library->path();
    info.cuda_runtime = cuda_or_empty(v.cuda_runtime_loaded);
    info.cuda_runtime_built = cuda_or_empty(v.cuda_runtime_built);
    info.cuda_driver = v.cuda_driver == 0 ? "" : cuda_version_string(v.cuda_driver);
    info.cudnn = cudnn_or_empty(v.cudnn_loaded);
    info.cudnn_built = cudnn_or_empty(v.cudnn_built);
    info.cudnn_cuda = cuda_or_empty(v.cudnn_loaded_cudart);
    info.gpu_loaded = true;
  } catch (const GpuUnavailableError& e) {
    info.gpu_problem = e.what();
  }
  info.standins = manifest::probe_machine(api::build_info()).standins();
  return info;
}

EnvironmentReport check_environment(const fs::path& manifest_path) {
  const std::lock_guard<std::mutex> lock(api::setup_mutex());
  const fs::path path = manifest_path.empty() ? default_manifest_path() : manifest_path;
  const manifest::Manifest m = manifest::read_manifest(path);
  const manifest::Report report = manifest::check(m, manifest::probe_machine(api::build_info(m)));
  EnvironmentReport out;
  out.manifest = path;
  out.ok = report.ok;
  for (const manifest::ReportRow& row : report.rows) out.items.push_back(public_item(row));
  out.standins = report.standins;
  if (const manifest::ReportRow* failed = report.first_failure()) out.first_failure = manifest::one_line(*failed);
  out.table = manifest::format_table(report);
  out.json = manifest::to_json(report);
  return out;
}

WrittenManifest write_environment_manifest(const fs::path& path, const fs::path& model) {
  const std::lock_guard<std::mutex> lock(api::setup_mutex());
  const fs::path model_path = model.empty() ? default_model_path() : model;
  WrittenManifest written;
  written.model_files.push_back(fs::absolute(model_path));
  try {
    const fs::path weights = fs::absolute(load_model(model_path).weights_path);
    if (weights != written.model_files.front()) written.model_files.push_back(weights);  // ONNX: one file
  } catch (const InputError& e) {
    written.model_problem = e.what();
  }
  const std::string text =
      manifest::manifest_text(manifest::probe_machine(api::build_info()), path, written.model_files);
  manifest::write_manifest(path, text);
  return written;
}

}  // namespace infer
