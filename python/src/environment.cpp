// infer.check_environment, infer.write_manifest, infer.version and infer.build_info, over
// <infer/environment.h> and <infer/version.h>: what `infer --check`, `infer --write-manifest` and
// `infer --version` report, as objects.
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>

#include "bindings.h"
#include "infer/environment.h"
#include "infer/version.h"
#include "library_lock.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace infer::python {

void bind_environment(nb::module_& m) {
  nb::class_<EnvironmentItem>(m, "Item", "One row of an environment report.")
      .def_ro("item", &EnvironmentItem::item, "'cudnn.version', 'driver.release', 'model:weights/fashion.toml', ...")
      .def_ro("expected", &EnvironmentItem::expected, "The manifest's constraint, as written.")
      .def_ro("found", &EnvironmentItem::found, "The value found, or why there is none.")
      .def_ro("source", &EnvironmentItem::source, "Where it came from: the library file and call, the file.")
      .def_ro("status", &EnvironmentItem::status, "'ok', 'warn', 'FAIL' or 'unknown'.")
      .def_ro("required", &EnvironmentItem::required, "False: advisory, never makes the report fail.")
      .def_ro("fix", &EnvironmentItem::fix, "One line; empty when ok.")
      .def_ro("because", &EnvironmentItem::because,
              "The item whose failure this one follows from; empty for a root cause.")
      .def_ro("notes", &EnvironmentItem::notes)
      .def("__repr__", [](const EnvironmentItem& i) {
        return "Item(" + i.item + ": " + i.status + ", found " + nb::repr(nb::str(i.found.c_str())).c_str() + ")";
      });

  nb::class_<EnvironmentReport::Backend>(m, "BackendOutcome", "One GPU backend of a schema 2 manifest.")
      .def_ro("name", &EnvironmentReport::Backend::name, "'cu13', 'cu12'")
      .def_ro("runs", &EnvironmentReport::Backend::runs)
      .def_ro("first_failure", &EnvironmentReport::Backend::first_failure)
      .def_ro("fix", &EnvironmentReport::Backend::fix);

  nb::class_<EnvironmentReport>(m, "Report", "This machine against a VERSIONS.toml manifest.")
      .def_ro("manifest", &EnvironmentReport::manifest)
      .def_ro("ok", &EnvironmentReport::ok, "Every required item is ok.")
      .def_ro("items", &EnvironmentReport::items)
      .def_ro("first_failure", &EnvironmentReport::first_failure, "The root cause in one line; empty when ok.")
      .def_ro("table", &EnvironmentReport::table, "The report as `infer --check` prints it.")
      .def_ro("backend", &EnvironmentReport::backend, "The GPU backend a Classifier would run ('cu13'); empty: none.")
      .def_ro("backends", &EnvironmentReport::backends)
      .def_ro("standins", &EnvironmentReport::standins,
              "Probed libraries that are infer's CPU stand-in for NVIDIA's (test infrastructure).")
      .def_ro("manifest_sha256", &EnvironmentReport::manifest_sha256)
      .def_ro("labels", &EnvironmentReport::labels, "The report as Kubernetes node labels (name, value).")
      .def(
          "to_json", [](const EnvironmentReport& r) { return r.json; },
          "The report as `infer --check --json` prints it (a JSON text).")
      .def("__bool__", [](const EnvironmentReport& r) { return r.ok; })
      .def("__repr__", [](const EnvironmentReport& r) {
        return "<infer.Report " + std::string(r.ok ? "ok" : "FAIL: " + r.first_failure) + ">";
      });

  m.def(
      "check_environment",
      [](std::optional<std::filesystem::path> manifest, int cuda) {
        const std::unique_lock<std::shared_mutex> alone(library_lock());  // it forks: library_lock.h
        return check_environment(manifest.value_or(std::filesystem::path()), cuda);
      },
      "manifest"_a = nb::none(), "cuda"_a = 0,
      "This machine's NVIDIA driver, GPUs, CUDA runtime and cuDNN, and the model files, against `manifest` "
      "(None: the VERSIONS.toml installed with infer): what `infer --check` reports. Probing runs in a child "
      "process with a time limit, so a broken install gives a report, never a crash. cuda: check that GPU "
      "backend only (12 or 13; 0: every one). Raises infer.InputError when the manifest is unreadable.");

  nb::class_<WrittenManifest>(m, "WrittenManifest", "What write_manifest wrote.")
      .def_ro("model_files", &WrittenManifest::model_files, "Listed with their SHA-256.")
      .def_ro("model_problem", &WrittenManifest::model_problem, "Why the model's files are not listed; else ''.");

  m.def(
      "write_manifest",
      [](const std::filesystem::path& path, std::optional<std::filesystem::path> model) {
        const std::unique_lock<std::shared_mutex> alone(library_lock());  // it probes, forking: library_lock.h
        return write_environment_manifest(path, model.value_or(std::filesystem::path()));
      },
      "path"_a, "model"_a = nb::none(),
      "Writes a manifest describing this machine to `path`, listing `model` (None: the shipped one) and its "
      "files with their SHA-256; never half a file. Raises infer.InputError when `path` cannot be written.");

  m.def(
      "version",
      [] {
        const Version v = infer::version();
        return std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
      },
      "The version of the infer library loaded, 'MAJOR.MINOR.PATCH'.");

  nb::class_<BuildInfo::Backend>(m, "BuildBackend")
      .def_ro("name", &BuildInfo::Backend::name)
      .def_ro("cuda", &BuildInfo::Backend::cuda)
      .def_ro("cudnn", &BuildInfo::Backend::cudnn);
  nb::class_<BuildInfo>(m, "BuildInfo", "What the library was compiled with.")
      .def_ro("compiler", &BuildInfo::compiler)
      .def_ro("backends", &BuildInfo::backends, "Every GPU backend of this build, newest first.");
  m.def("build_info", &build_info);
}

}  // namespace infer::python
