// Renders a Report for people (the table `infer --check` prints), for programs (JSON) and for the
// one-line notice of the start-up check.
#pragma once

#include <string>

#include "check.h"

namespace infer::manifest {

// The table: item, expected, found, source, status. Column widths follow the content up to caps
// that keep every table line within 160 characters; a longer cell continues on the next lines in
// its own column. Under a row that is not ok: "    fix: ..." (a fix already printed for an earlier
// row reads "same as <that item>"), or "    (follows from <because>)" while that row is not ok
// either; then "    note: ..." for each note. Fix and note lines wrap at 160 too.
std::string format_table(const Report& report);
// {"manifest": "...", "ok": bool, "items": [{"item","expected","found","source","status","severity","fix"}]};
// an item has "because" and "notes" only when they are not empty.
std::string to_json(const Report& report);
// "driver.release: not installed (libcuda.so.1 not found)" for the start-up notice.
std::string one_line(const ReportRow& row);

}  // namespace infer::manifest
