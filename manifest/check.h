// Compares a manifest with what probe_machine() found: the Report (report.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "manifest/manifest.h"
#include "manifest/probe.h"
#include "manifest/report.h"

namespace infer::manifest {

// model_files = false leaves out the [[model.files]] rows (the start-up check: the loader checks the
// digest of the model actually loaded).
Report check(const Manifest& manifest, const MachineProbe& machine, bool model_files = true);

// Schema 2 (docs/manifest.md): the machine's items, then each [[backend]]'s items as
// "<name>.<key>" rows ("cu12.driver.cuda"), each backend checked against the probe of its own
// build (probe(cuda_major): its CUDA runtime libcudart.so.N, its cuDNN). ok when the machine's
// required items hold and one backend's do; Report::backend is the first such in the manifest's
// order. When one runs, the rows of the others are shown but do not count (ReportRow::counts);
// when none runs, every row counts. A schema 1 manifest is checked by check() as it always was.
using BackendProbe = std::function<const MachineProbe&(int cuda_major)>;
Report check_backends(const Manifest& manifest, const BackendProbe& probe, bool model_files = true);

}  // namespace infer::manifest
