#include "manifest/report.h"

#include <algorithm>
#include <array>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

namespace infer::manifest {

const char* to_string(Status s) {
  switch (s) {
    case Status::Ok: return "ok";
    case Status::Warn: return "warn";
    case Status::Fail: return "FAIL";
    case Status::Unknown: return "unknown";
  }
  return "unknown";
}

const ReportRow* Report::first_failure() const {
  auto failing = [&](const std::string& item) {
    return std::any_of(rows.begin(), rows.end(), [&](const ReportRow& r) {
      return r.item == item && r.severity == Severity::Required && r.status != Status::Ok;
    });
  };
  const ReportRow* first = nullptr;
  for (const ReportRow& r : rows) {
    if (r.severity != Severity::Required || r.status == Status::Ok || !r.counts) continue;
    if (r.because.empty() || !failing(r.because)) return &r;
    if (!first) first = &r;
  }
  return first;
}

namespace {

constexpr std::size_t kColumns = 5;  // item, expected, found, source, status
constexpr std::size_t kGap = 2;      // spaces between columns
// The narrowest table: its labels ("    (follows from ") leave room for a word beside them.
constexpr std::size_t kNarrowest = 20;
// A row printed as a block (format_table): its middle cells under these labels.
constexpr std::array<const char*, 3> kBlockLabels = {"    expected: ", "    found:    ", "    source:   "};

using Cells = std::array<std::string, kColumns>;
using Widths = std::array<std::size_t, kColumns>;

std::string trimmed(const std::string& s) {
  const std::size_t b = s.find_first_not_of(' ');
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(' ') - b + 1);
}

std::string without_trailing_blanks(const std::string& s) { return s.substr(0, s.find_last_not_of(' ') + 1); }

// Where the first line of `text` ends (text trimmed, longer than width): at the space after the
// last "; " or ", " that fits if that fills half the line, else at the last space that fits, else
// (the first word alone is longer than a line) at the space after that word: it is never cut.
std::size_t break_point(const std::string& text, std::size_t width) {
  for (std::size_t i = width; i >= width / 2 && i > 1; --i) {
    if (text[i] == ' ' && (text[i - 1] == ';' || text[i - 1] == ',')) return i;
  }
  for (std::size_t i = width; i > 0; --i) {
    if (text[i] == ' ') return i;
  }
  return text.find(' ', width);  // npos: that word is the rest of the text
}

std::size_t longest_word(const std::string& text) {
  std::size_t longest = 0, word = 0;
  for (const char c : text) {
    word = c == ' ' ? 0 : word + 1;
    longest = std::max(longest, word);
  }
  return longest;
}

// The length of a table line whose columns are this wide.
std::size_t line_length(const Widths& w) {
  std::size_t n = kGap * (kColumns - 1);
  for (const std::size_t c : w) n += c;
  return n;
}

std::string status_text(const ReportRow& r) {
  if (!r.counts && r.status != Status::Ok && r.severity == Severity::Required) {
    return std::string(to_string(r.status)) + " (other backend)";
  }
  return std::string(to_string(r.status)) + (r.severity == Severity::Advisory ? " (advisory)" : "");
}

Cells cells_of(const ReportRow& r) { return {r.item, r.expected, r.found, r.source, status_text(r)}; }

// Each column as wide as its widest cell where that fits `width` (0: no limit). Else the columns
// take the rows in the order of the room their longest words need, each row while it still fits,
// so that as many rows as can keep the table's columns; the room left then widens the columns
// toward their widest cell, so that fewer cells wrap.
Widths column_widths(const Cells& head, const std::vector<Cells>& rows, std::size_t width) {
  Widths full{}, w{};
  for (std::size_t i = 0; i < kColumns; ++i) full[i] = w[i] = head[i].size();
  for (const Cells& c : rows) {
    for (std::size_t i = 0; i < kColumns; ++i) full[i] = std::max(full[i], c[i].size());
  }
  if (width == 0 || line_length(full) <= width) return full;
  if (line_length(w) > width) return w;  // not even the column names fit: no columns (every row a block)
  // The status whole ("warn (advisory)" on one line) where it fits: it is what a reader scans for.
  Widths whole_status = w;
  whole_status[kColumns - 1] = full[kColumns - 1];
  if (line_length(whole_status) <= width) w = whole_status;
  std::vector<Widths> needs;
  for (const Cells& c : rows) {
    Widths need{};
    for (std::size_t i = 0; i < kColumns; ++i) need[i] = std::max(head[i].size(), longest_word(c[i]));
    needs.push_back(need);
  }
  std::stable_sort(needs.begin(), needs.end(),
                   [](const Widths& a, const Widths& b) { return line_length(a) < line_length(b); });
  for (const Widths& need : needs) {
    Widths with = w;
    for (std::size_t i = 0; i < kColumns; ++i) with[i] = std::max(w[i], need[i]);
    if (line_length(with) <= width) w = with;
  }
  // The room left: first to the columns that it makes as wide as their widest cell, the nearest
  // first (a status column 5 short of "warn (advisory)" never wraps), then evenly to the others.
  std::size_t left = width - line_length(w);
  std::array<std::size_t, kColumns> order = {0, 1, 2, 3, 4};
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return full[a] - w[a] < full[b] - w[b]; });
  for (const std::size_t i : order) {
    if (full[i] - w[i] > left) break;
    left -= full[i] - w[i];
    w[i] = full[i];
  }
  for (std::size_t grown = 1; left > 0 && grown > 0;) {
    grown = 0;
    for (std::size_t i = 0; i < kColumns && left > 0; ++i) {
      if (w[i] < full[i]) {
        ++w[i];
        --left;
        ++grown;
      }
    }
  }
  return w;
}

// Whether every word of the row fits its column.
bool fits_columns(const Cells& cells, const Widths& w) {
  for (std::size_t i = 0; i < kColumns; ++i) {
    if (longest_word(cells[i]) > w[i]) return false;
  }
  return true;
}

// One row; a cell wider than its column continues on the next lines in the same column, the other
// columns blank there, so that every column starts at the same place on every line.
void print_row(std::ostream& out, const Cells& cells, const Widths& w) {
  std::array<std::vector<std::string>, kColumns> pieces;
  std::size_t lines = 1;
  for (std::size_t i = 0; i < kColumns; ++i) {
    pieces[i] = wrap_words(cells[i], w[i]);
    lines = std::max(lines, pieces[i].size());
  }
  for (std::size_t k = 0; k < lines; ++k) {
    std::string line;
    for (std::size_t i = 0; i < kColumns; ++i) {
      const std::string& p = k < pieces[i].size() ? pieces[i][k] : "";
      line += p;
      if (i + 1 < kColumns) line += std::string(w[i] - p.size() + kGap, ' ');
    }
    out << without_trailing_blanks(line) << '\n';
  }
}

// A row with a word wider than its column: its item and status (in their columns where the table
// has columns and they fit them), then a labelled line per middle cell, each wrapped to `width`.
void print_block(std::ostream& out, const Cells& cells, const Widths& w, bool columns, std::size_t width) {
  const std::string& item = cells[0];
  const std::string& status = cells[kColumns - 1];
  const std::size_t status_at = line_length(w) - w[kColumns - 1];
  bool status_shown = true;
  if (columns && item.size() + kGap <= status_at && longest_word(status) <= w[kColumns - 1]) {
    const std::vector<std::string> pieces = wrap_words(status, w[kColumns - 1]);
    for (std::size_t k = 0; k < pieces.size(); ++k) {
      const std::string first = k == 0 ? item : "";
      out << first << std::string(status_at - first.size(), ' ') << pieces[k] << '\n';
    }
  } else if (item.size() + kGap + status.size() <= width) {
    out << item << std::string(kGap, ' ') << status << '\n';
  } else {
    out << item << '\n';
    status_shown = false;
  }
  for (std::size_t i = 0; i < kBlockLabels.size(); ++i) out << wrap_labelled(kBlockLabels[i], cells[i + 1], width);
  if (!status_shown) out << wrap_labelled("    status:   ", status, width);
}

const ReportRow* find_row(const Report& report, const std::string& item) {
  for (const ReportRow& r : report.rows) {
    if (r.item == item) return &r;
  }
  return nullptr;
}

// Under a row that is not ok: where it follows from a cause that is itself not ok, that cause
// (whose fix is the one to apply); else its fix, printed once for all the rows that share it.
void print_fix(std::ostream& out, const Report& report, const ReportRow& r,
               std::map<std::string, std::string>& fixed_by, std::size_t width) {
  const ReportRow* cause = r.because.empty() ? nullptr : find_row(report, r.because);
  if (cause && cause->status != Status::Ok) {
    out << wrap_labelled("    (follows from ", r.because + ")", width);
    return;
  }
  if (r.fix.empty()) return;
  const auto [first, inserted] = fixed_by.emplace(r.fix, r.item);
  out << wrap_labelled("    fix: ", inserted ? r.fix : "same as " + first->second, width);
}

// Schema 2: a line per backend that does not run here, when another does: what stops it, and
// what would let it run.
void print_backends(std::ostream& out, const Report& report, std::size_t width) {
  if (report.backend.empty()) return;
  for (const BackendOutcome& b : report.backends) {
    if (b.runs) continue;
    out << wrap_labelled("backend ",
                         b.name + " (CUDA " + std::to_string(b.cuda_major) + ") does not run here: " + b.first_failure,
                         width);
    if (!b.fix.empty()) out << wrap_labelled("    to run it: ", b.fix, width);
  }
}

void print_result(std::ostream& out, const Report& report, std::size_t width) {
  int failed = 0, warned = 0;
  for (const ReportRow& r : report.rows) {
    if (r.status == Status::Ok || !r.counts) continue;
    ++(r.severity == Severity::Required ? failed : warned);
  }
  if (report.ok) {
    const std::string runs = report.backend.empty()
                                 ? ""
                                 : "runs the CUDA " + report.backend.substr(2) + " backend (" + report.backend + "): ";
    out << wrap_labelled("result: ",
                         "ok: " + runs + "every required item holds" +
                             (warned ? " (" + std::to_string(warned) + " advisory not ok)" : ""),
                         width);
  } else {
    out << wrap_labelled("result: ",
                         "MISMATCH: " + std::to_string(failed) + " required item" + (failed == 1 ? "" : "s") +
                             " not ok (first: " + report.first_failure()->item + ")",
                         width);
  }
}

}  // namespace

std::vector<std::string> wrap_words(const std::string& text, std::size_t width) {
  std::vector<std::string> lines;
  std::string rest = trimmed(text);
  while (width > 0 && rest.size() > width) {
    const std::size_t cut = break_point(rest, width);
    if (cut == std::string::npos) break;
    lines.push_back(trimmed(rest.substr(0, cut)));
    rest = trimmed(rest.substr(cut));
  }
  lines.push_back(rest);
  return lines;
}

std::string wrap_labelled(const std::string& prefix, const std::string& text, std::size_t width) {
  // The room beside the prefix; on a terminal narrower than the prefix, a word a line.
  const std::size_t room = width == 0 ? 0 : width > prefix.size() ? width - prefix.size() : 1;
  const std::vector<std::string> lines = wrap_words(text, room);
  const std::string indent(prefix.size(), ' ');
  std::string out;
  // A first word too long for any line stands alone on its line, below the label.
  const bool alone = room > 0 && lines.front().size() > room && !trimmed(prefix).empty();
  if (alone) out += without_trailing_blanks(prefix) + '\n';
  for (std::size_t k = 0; k < lines.size(); ++k) {
    out += without_trailing_blanks((k || alone ? indent : prefix) + lines[k]) + '\n';
  }
  return out;
}

std::string format_table(const Report& report, std::size_t width) {
  if (width > 0) width = std::max(width, kNarrowest);
  const Cells head = {"item", "expected", "found", "source", "status"};
  std::vector<Cells> cells;
  for (const ReportRow& r : report.rows) cells.push_back(cells_of(r));
  const Widths widths = column_widths(head, cells, width);
  // The table has columns where the column names fit and some row keeps to them (else every row
  // is a block, and a line of column names would head nothing).
  const bool columns = (width == 0 || line_length(widths) <= width) &&
                       (cells.empty() || std::any_of(cells.begin(), cells.end(),
                                                     [&](const Cells& c) { return fits_columns(c, widths); }));
  std::ostringstream out;
  out << wrap_labelled("manifest: ", report.manifest, width);
  if (!report.standins.empty()) {
    out << wrap_labelled("NOTE: ",
                         "the CPU stand-in for NVIDIA's libraries is loaded (test infrastructure): this report "
                         "describes no real GPU, driver, CUDA runtime or cuDNN",
                         width);
    for (const std::string& s : report.standins) out << wrap_labelled("  stand-in: ", s, width);
  }
  if (columns) print_row(out, head, widths);
  std::map<std::string, std::string> fixed_by;  // fix -> the first item printed with it
  for (std::size_t k = 0; k < report.rows.size(); ++k) {
    const ReportRow& r = report.rows[k];
    if (columns && fits_columns(cells[k], widths)) {
      print_row(out, cells[k], widths);
    } else {
      print_block(out, cells[k], widths, columns, width);
    }
    if (r.status != Status::Ok && r.counts) print_fix(out, report, r, fixed_by, width);
    for (const std::string& note : r.notes) out << wrap_labelled("    note: ", note, width);
  }
  print_backends(out, report, width);
  print_result(out, report, width);
  return out.str();
}

std::string to_json(const Report& report) {
  nlohmann::json items = nlohmann::json::array();
  for (const ReportRow& r : report.rows) {
    nlohmann::json item = {{"item", r.item},     {"expected", r.expected},        {"found", r.found},
                           {"source", r.source}, {"status", to_string(r.status)}, {"severity", to_string(r.severity)},
                           {"fix", r.fix}};
    // Only when set: a report without causes or notes keeps the schema it always had.
    if (!r.because.empty()) item["because"] = r.because;
    if (!r.notes.empty()) item["notes"] = r.notes;
    if (!r.counts) item["counts"] = false;
    items.push_back(item);
  }
  nlohmann::json j = {{"manifest", report.manifest}, {"ok", report.ok}, {"items", items}};
  if (!report.backends.empty()) {  // schema 2 only: a schema 1 report keeps the schema it always had
    nlohmann::json backends = nlohmann::json::array();
    for (const BackendOutcome& b : report.backends) {
      backends.push_back({{"name", b.name},
                          {"cuda_major", b.cuda_major},
                          {"runs", b.runs},
                          {"first_failure", b.first_failure},
                          {"fix", b.fix}});
    }
    j["backend"] = report.backend.empty() ? nlohmann::json(nullptr) : nlohmann::json(report.backend);
    j["backends"] = backends;
  }
  if (!report.standins.empty()) j["standin"] = report.standins;  // only then: the schema stays as it was
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string one_line(const ReportRow& row) { return row.item + ": " + row.found + " (expected " + row.expected + ")"; }

}  // namespace infer::manifest
