// Compares a manifest with what probe_machine() found: the Report (report.h).
#pragma once

#include <string>
#include <vector>

#include "manifest/manifest.h"
#include "manifest/probe.h"
#include "manifest/report.h"

namespace infer::manifest {

// model_files = false leaves out the [[model.files]] rows (the start-up check: the loader checks the
// digest of the model actually loaded).
Report check(const Manifest& manifest, const MachineProbe& machine, bool model_files = true);

}  // namespace infer::manifest
