// The environment manifest in the command: `infer --check`, `infer --write-manifest`, and the
// start-up check of every inference run. Prints nothing itself except where a function says so.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>

#include "manifest/report.h"
#include "manifest/manifest.h"
#include "model/model_file.h"
#include "options.h"
#include "shipped_file.h"

namespace infer::app {

// shipped_file("VERSIONS.toml").
std::filesystem::path default_manifest_path();
// What this binary was compiled with (CUDA, cuDNN, compiler).
manifest::BuildInfo build_info();

// `infer --check`: prints the report (table, or JSON with --json) to out. Returns the exit code:
// 0 every required item holds, 5 not, 3 the manifest is invalid (message on err).
int run_check(const Options& o, std::ostream& out, std::ostream& err);
// `infer --write-manifest PATH`: returns 0, or 3 when PATH cannot be written (message on err).
int run_write_manifest(const Options& o, const std::filesystem::path& model_path, std::ostream& out, std::ostream& err);

// The manifest an inference run checks against, or nothing when the default one is not there (a
// notice on err). Throws InputError when it is invalid or when --manifest names a missing file.
std::optional<manifest::Manifest> manifest_for_run(const Options& o, std::ostream& err);
// A FileCheck refusing a model file listed in the manifest whose SHA-256 differs (InputError
// naming both digests). Files the manifest does not list pass.
FileCheck digest_check(const manifest::Manifest& m);
// The environment rows of the start-up check (cached within the process by the probe).
manifest::Report startup_report(const manifest::Manifest& m);

}  // namespace infer::app
