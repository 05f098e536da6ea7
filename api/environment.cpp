// The environment check and manifest writer of <infer/environment.h>: the manifest module's
// check, report and writer, behind the public types.
#include "infer/environment.h"

#include "api/setup.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/gpu_backend.h"
#include "formats/model_file.h"
#include "infer/errors.h"
#include "infer/version.h"
#include "manifest/check.h"
#include "manifest/node_labels.h"
#include "manifest/report.h"
#include "manifest/sha256.h"
#include "manifest/writer.h"
#include "platform/install_layout.h"
#include "platform/nvidia_versions.h"

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

// The probe the node labels describe: that of the backend that runs, else of the first checked.
const manifest::MachineProbe& labelled_probe(const manifest::Manifest& m, const manifest::Report& report) {
  if (m.schema == 1) return manifest::probe_machine(api::build_info(m));
  int major = report.backends.empty() ? 0 : report.backends.front().cuda_major;
  for (const manifest::BackendOutcome& b : report.backends) {
    if (b.name == report.backend) major = b.cuda_major;
  }
  manifest::BuildInfo build = api::build_info(major);
  build.cudnn_major = manifest::wanted_cudnn_major(m);
  return manifest::probe_machine(build);
}

// The libraries report 0 for a version they could not read.
std::string cuda_or_empty(int v) { return v > 0 ? cuda_version_string(v) : ""; }
std::string cudnn_or_empty(int v) { return v > 0 ? cudnn_version_string(v) : ""; }

}  // namespace

BuildInfo build_info() {
  const manifest::BuildInfo b = api::build_info();
  BuildInfo out{b.cuda, b.cudnn, b.compiler, {}};
  for (const GpuBackendRequirements& r : kGpuBackends) {
    const manifest::BuildInfo built = api::build_info(r.cuda_major);
    if (!built.cuda.empty()) out.backends.push_back({gpu_backend_name(r.cuda_major), built.cuda, built.cudnn});
  }
  return out;
}

RuntimeInfo runtime_info() {
  const std::lock_guard<std::mutex> lock(api::setup_mutex());
  RuntimeInfo info;
  info.cpu_libraries = cpu_libraries();
  try {
    const auto library = GpuLibrary::open();
    const InferGpuVersions v = library->versions();
    info.gpu_module = library->path();
    info.gpu_backend = gpu_backend_name(library->choice().chosen);
    for (const GpuBackendVerdict& b : library->choice().backends) {
      info.gpu_choice.push_back(gpu_backend_name(b.cuda_major) + ": " + b.reason);
    }
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

EnvironmentReport check_environment(const fs::path& manifest_path, int cuda_major) {
  return check_environment(manifest_path, cuda_major, 0);
}

EnvironmentReport check_environment(const fs::path& manifest_path, int cuda_major, std::size_t table_width) {
  const std::lock_guard<std::mutex> lock(api::setup_mutex());
  const fs::path path = manifest_path.empty() ? default_manifest_path() : manifest_path;
  const manifest::Manifest m = manifest::read_manifest(path);
  const manifest::Report report =
      api::check_manifest(m, cuda_major != 0 ? cuda_major : cuda_major_from_environment(), /*model_files=*/true);
  EnvironmentReport out;
  out.manifest = path;
  out.ok = report.ok;
  for (const manifest::ReportRow& row : report.rows) out.items.push_back(public_item(row));
  out.standins = report.standins;
  if (const manifest::ReportRow* failed = report.first_failure()) out.first_failure = manifest::one_line(*failed);
  out.table = manifest::format_table(report, table_width);
  out.json = manifest::to_json(report);
  out.backend = report.backend;
  for (const manifest::BackendOutcome& b : report.backends) {
    out.backends.push_back({b.name, b.runs, b.first_failure, b.fix});
  }
  out.manifest_sha256 = manifest::sha256_file(path);
  for (manifest::NodeLabel& l :
       manifest::node_labels(report, labelled_probe(m, report), out.manifest_sha256, INFER_VERSION_STRING)) {
    out.labels.emplace_back(std::move(l.name), std::move(l.value));
  }
  return out;
}

void write_node_features(const fs::path& path, const EnvironmentReport& report, std::chrono::seconds valid_for) {
  std::vector<manifest::NodeLabel> labels;
  for (const auto& [name, value] : report.labels) labels.push_back({name, value});
  manifest::write_file_atomically(
      path, manifest::nfd_feature_file(labels, std::chrono::system_clock::now() + valid_for, report.manifest_sha256));
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
  // The backend this machine runs (or, with none, the newest this build has) is the one recorded.
  int major = 0;
  std::string note;
  try {
    const auto library = GpuLibrary::open();
    major = library->choice().chosen;
    note = "the backend this machine runs: " + library->choice().summary();
  } catch (const GpuUnavailableError& e) {
    note = std::string("no GPU backend runs here when written: ") + e.what();
  }
  const std::string text =
      manifest::manifest_text(manifest::probe_machine(api::build_info(major)), path, written.model_files, note);
  manifest::write_manifest(path, text);
  return written;
}

}  // namespace infer
