// Compares a manifest with what probe_machine() found, and renders the report (table or JSON).
#pragma once

#include <string>
#include <vector>

#include "manifest.h"
#include "probe.h"

namespace infer::manifest {

enum class Status { Ok, Warn, Fail, Unknown };
const char* to_string(Status s);  // "ok", "warn", "FAIL", "unknown"

struct ReportRow {
  std::string item;      // schema key ("cudnn.version") or "model:<path>"
  std::string expected;  // the constraint as written
  std::string found;     // the value found, or why there is none
  std::string source;    // the library path, API or file it came from
  Status status = Status::Unknown;
  Severity severity = Severity::Required;
  std::string fix;  // one line; empty when ok
  // The item whose failure this row's failure follows from ("cudnn.sublibraries"), or empty when the
  // row is a cause of its own. Such a row is never the first failure while its cause is not ok.
  std::string because;
  // Lines under the row: the consequences folded into this root cause, and what the libraries
  // printed while they were probed (cuDNN's own messages), each one line.
  std::vector<std::string> notes;
};

struct Report {
  std::string manifest;
  bool ok = true;  // every required row is ok (unknown counts as not ok)
  std::vector<ReportRow> rows;
  // "<path>: <identity>" of each probed library that is the project's CPU stand-in (tests only).
  // Both renderings lead with them: with a stand-in loaded, nothing in the report describes a GPU.
  std::vector<std::string> standins;
  // The root cause: the first required row that is not ok and does not follow from another such
  // row; nullptr when every required row is ok.
  const ReportRow* first_failure() const;
};

// model_files = false leaves out the [[model.files]] rows (the start-up check: the loader checks the
// digest of the model actually loaded).
Report check(const Manifest& manifest, const MachineProbe& machine, bool model_files = true);

}  // namespace infer::manifest
