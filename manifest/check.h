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
  std::string fix;       // one line; empty when ok
};

struct Report {
  std::string manifest;
  bool ok = true;  // every required row is ok (unknown counts as not ok)
  std::vector<ReportRow> rows;
  // "<path>: <identity>" of each probed library that is the project's CPU stand-in (tests only).
  // Both renderings lead with them: with a stand-in loaded, nothing in the report describes a GPU.
  std::vector<std::string> standins;
  // The first required row that is not ok, or nullptr.
  const ReportRow* first_failure() const;
};

// model_files = false leaves out the [[model.files]] rows (the start-up check: the loader checks the
// digest of the model actually loaded).
Report check(const Manifest& manifest, const MachineProbe& machine, bool model_files = true);

// The table: item, expected, found, source, status, then "fix:" under each row that is not ok.
std::string format_table(const Report& report);
// {"manifest": "...", "ok": bool, "items": [{"item","expected","found","source","status","severity","fix"}]}
std::string to_json(const Report& report);
// "driver.release: not installed (libcuda.so.1 not found)" for the start-up notice.
std::string one_line(const ReportRow& row);

}  // namespace infer::manifest
