// The environment manifest in the command: `infer --check` and `infer --write-manifest`. (The
// start-up check of an inference run is the Classifier's: ClassifierOptions::verify.) Prints
// nothing itself except where a function says so.
#pragma once

#include <filesystem>
#include <iosfwd>

#include "manifest/manifest.h"
#include "manifest/report.h"
#include "model/model_file.h"
#include "options.h"

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

}  // namespace infer::app
