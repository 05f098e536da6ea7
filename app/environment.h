// The environment manifest in the command: `infer --check` and `infer --write-manifest`, through
// the API's <infer/environment.h>. (The start-up check of an inference run is the Classifier's:
// ClassifierOptions::verify.) Prints nothing itself except where a function says so.
#pragma once

#include <cstddef>
#include <iosfwd>

#include "app/options.h"

namespace infer::app {

// `infer --check`: prints the report (table, or JSON with --json) to out, the table wrapped to
// `width` columns (0: not at all; stdout_terminal_width() in app/terminal.h). Returns the exit code:
// 0 every required item holds, 5 not, 3 the manifest is invalid (message on err). With --nfd PATH,
// also writes the result as NFD's feature file there (exit 3 when it cannot be written).
int run_check(const Options& o, std::ostream& out, std::ostream& err, std::size_t width);
// `infer --write-manifest PATH`: returns 0, or 3 when PATH cannot be written (message on err).
int run_write_manifest(const Options& o, std::ostream& out, std::ostream& err);

}  // namespace infer::app
