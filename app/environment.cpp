#include "environment.h"

#include <ostream>

#include "exit_codes.h"
#include "manifest/probe.h"
#include "manifest/report.h"
#include "manifest/writer.h"
#include "model/errors.h"
#include "model/install_layout.h"
#include "model/printable.h"

namespace infer::app {

namespace fs = std::filesystem;

fs::path default_manifest_path() { return shipped_file("VERSIONS.toml"); }

manifest::BuildInfo build_info() { return {INFER_CUDA_VERSION, INFER_CUDNN_VERSION, INFER_COMPILER}; }

int run_check(const Options& o, std::ostream& out, std::ostream& err) {
  const fs::path path = o.manifest.empty() ? default_manifest_path() : fs::path(o.manifest);
  manifest::Manifest m;
  try {
    m = manifest::read_manifest(path);
  } catch (const InputError& e) {
    err << "infer: " << printable_utf8(e.what()) << '\n';
    return kExitInvalidInput;
  }
  const manifest::Report report = manifest::check(m, manifest::probe_machine(build_info()));
  out << (o.json ? manifest::to_json(report) : manifest::format_table(report));
  return report.ok ? kExitOk : kExitEnvironment;
}

int run_write_manifest(const Options& o, const fs::path& model_path, std::ostream& out, std::ostream& err) {
  const fs::path path = o.write_manifest;
  std::vector<fs::path> files{fs::absolute(model_path)};
  try {
    const fs::path weights = fs::absolute(load_model(model_path).weights_path);
    if (weights != files.front()) files.push_back(weights);  // an ONNX model is one file
  } catch (const InputError& e) {
    err << "infer: notice: the model cannot be loaded, so its weights are not listed: " << printable_utf8(e.what())
        << '\n';
  }
  try {
    const std::string text = manifest::manifest_text(manifest::probe_machine(build_info()), path, files);
    manifest::write_manifest(path, text);
  } catch (const InputError& e) {
    err << "infer: " << printable_utf8(e.what()) << '\n';
    return kExitInvalidInput;
  }
  out << "infer: wrote " << path.string() << " (check it with: infer --check --manifest " << path.string() << ")\n";
  return kExitOk;
}

}  // namespace infer::app
