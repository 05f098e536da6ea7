#include "app/environment.h"

#include <ostream>

#include "app/exit_codes.h"
#include "infer/environment.h"
#include "infer/errors.h"
#include "platform/printable.h"

namespace infer::app {

namespace fs = std::filesystem;

int run_check(const Options& o, std::ostream& out, std::ostream& err) {
  EnvironmentReport report;
  try {
    report = check_environment(arg_path(o.manifest), o.cuda_major);
  } catch (const InputError& e) {
    err << "infer: " << printable_utf8(e.what()) << '\n';
    return kExitInvalidInput;
  } catch (const GpuUnavailableError& e) {  // the backend asked for is not in the manifest
    err << "infer: " << printable_utf8(e.what()) << '\n';
    return kExitEnvironment;
  }
  out << (o.json ? report.json : report.table);
  if (!o.nfd.empty()) {
    try {
      write_node_features(arg_path(o.nfd), report, std::chrono::seconds(o.nfd_expiry));
    } catch (const InputError& e) {
      err << "infer: --nfd: " << printable_utf8(e.what()) << '\n';
      return kExitInvalidInput;
    }
  }
  return report.ok ? kExitOk : kExitEnvironment;
}

int run_write_manifest(const Options& o, std::ostream& out, std::ostream& err) {
  const fs::path path = arg_path(o.write_manifest);
  try {
    const WrittenManifest written = write_environment_manifest(path, arg_path(o.model));
    if (!written.model_problem.empty()) {
      err << "infer: notice: the model cannot be loaded, so its weights are not listed: "
          << printable_utf8(written.model_problem) << '\n';
    }
  } catch (const InputError& e) {
    err << "infer: " << printable_utf8(e.what()) << '\n';
    return kExitInvalidInput;
  }
  out << "infer: wrote " << printable_utf8(o.write_manifest) << " (check it with: infer --check --manifest "
      << printable_utf8(o.write_manifest) << ")\n";
  return kExitOk;
}

}  // namespace infer::app
