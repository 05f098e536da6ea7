#include "app/environment.h"

#include <ostream>

#include "app/exit_codes.h"
#include "app/interrupt.h"
#include "infer/environment.h"
#include "infer/errors.h"
#include "platform/printable.h"

namespace infer::app {

namespace fs = std::filesystem;

int run_check(const Options& o, std::ostream& out, std::ostream& err, std::size_t width) {
  EnvironmentReport report;
  try {
    report = check_environment(arg_path(o.manifest), o.cuda_major, width);
  } catch (const InputError& e) {
    err << "infer: " << printable_utf8(e.what()) << '\n';
    return kExitInvalidInput;
  } catch (const GpuUnavailableError& e) {  // the backend asked for is not in the manifest
    err << "infer: " << printable_utf8(e.what()) << '\n';
    return kExitEnvironment;
  }
  {
    const WholeOutput whole;  // a signal waits for the whole report
    out << (o.json ? report.json : report.table) << std::flush;
  }
  if (!o.nfd.empty()) {
    try {
      const WholeOutput whole;  // a signal waits until the file is renamed into place (or removed)
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
    // A signal waits (2 s at most) until the manifest is renamed into place: no temporary file is left.
    const WholeOutput whole;
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
