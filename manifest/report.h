// The result of a check (check.h): one row per manifest item; and its renderings for people (the
// table `infer --check` prints), for programs (JSON) and for the one-line notice of the start-up check.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "manifest/manifest.h"

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
  // Whether the row decides the result. Schema 2: the rows of a backend that does not run here
  // are shown but do not count when another backend runs (check_backends).
  bool counts = true;
};

// Schema 2: one backend's outcome (check_backends).
struct BackendOutcome {
  std::string name;  // "cu13"
  int cuda_major = 0;
  bool runs = false;          // every required item of the machine and of this backend holds
  std::string first_failure;  // one_line() of its first failing row; empty when it runs
  std::string fix;            // that row's fix
};

struct Report {
  std::string manifest;
  bool ok = true;  // every required row is ok (unknown counts as not ok)
  std::vector<ReportRow> rows;
  // "<path>: <identity>" of each probed library that is the project's CPU stand-in (tests only).
  // Both renderings lead with them: with a stand-in loaded, nothing in the report describes a GPU.
  std::vector<std::string> standins;
  // Schema 2: the backend that runs ("cu12"; empty when none does) and every backend's outcome,
  // in the manifest's order.
  std::string backend;
  std::vector<BackendOutcome> backends;
  // The root cause: the first required row that counts, is not ok and does not follow from
  // another such row; nullptr when every required row that counts is ok.
  const ReportRow* first_failure() const;
};

// The table: item, expected, found, source, status. Under a row that is not ok: "    fix: ..." (a
// fix already printed for an earlier row reads "same as <that item>"), or "    (follows from
// <because>)" while that row is not ok either; then "    note: ..." for each note.
// `width` is the terminal's, in columns (bytes); the caller (app/) knows whether there is one:
// - 0, for a pipe, a file or a program's string: nothing is wrapped. Each row is one line, its
//   columns as wide as their widest cell and aligned with spaces; each fix and note one line too.
// - else lines fit `width`, broken only at spaces (wrap_words), never inside a path, digest or
//   version. Columns narrow to fit; a cell wider than its column continues on the next lines in
//   its own column. A row with a word wider than the columns can give it (a digest, a long path) is
//   printed as a block: "<item>  <status>", then "    expected: ...", "    found: ...",
//   "    source: ...", each continuing under its text. A word longer than a whole line is never
//   cut: it stands alone on its line, past `width`. A width under 20 is taken as 20.
std::string format_table(const Report& report, std::size_t width = 0);
// `text` as lines of at most `width` bytes, broken only at spaces, after a "; " or ", " where that
// fills half a line (a list keeps its items whole), else at the last space that fits. A word
// longer than `width` is one line of its own, whole. width 0: the text as one line.
std::vector<std::string> wrap_words(const std::string& text, std::size_t width);
// prefix + text, wrapped as above so that each line fits `width`, the continuation lines indented
// under the text's first character ("    fix: ..."), as is a first word too long for any line,
// which leaves the prefix alone on the first line; every line ends in '\n'. The other tables
// app/ prints (infer --version) are written with it.
std::string wrap_labelled(const std::string& prefix, const std::string& text, std::size_t width);
// {"manifest": "...", "ok": bool, "items": [{"item","expected","found","source","status","severity","fix"}]};
// an item has "because" and "notes" only when they are not empty.
std::string to_json(const Report& report);
// "driver.release: not installed (libcuda.so.1 not found)" for the start-up notice.
std::string one_line(const ReportRow& row);

}  // namespace infer::manifest
