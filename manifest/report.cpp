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
// Column widths follow the content up to these caps; with the gaps they add up to kLineLimit, so a
// report stays readable in a terminal and in CI logs. 34 fits the shipped manifest's longest item
// (model:weights/fashion.safetensors); "unknown (advisory)" is the widest status.
constexpr std::array<std::size_t, kColumns> kCap = {34, 24, 40, 36, 18};
constexpr std::size_t kLineLimit = 160;

using Cells = std::array<std::string, kColumns>;
using Widths = std::array<std::size_t, kColumns>;

std::string trimmed(const std::string& s) {
  const std::size_t b = s.find_first_not_of(' ');
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(' ') - b + 1);
}

// Where the first line of `text` ends (text longer than width): after the last "; " or ", " that
// fits if that fills half the line (a list keeps its items whole), else before the last space or
// after the last '/', else a hard break that does not split a UTF-8 sequence.
std::size_t break_point(const std::string& text, std::size_t width) {
  for (std::size_t i = width; i >= width / 2 && i > 1; --i) {
    if (text[i] == ' ' && (text[i - 1] == ';' || text[i - 1] == ',')) return i;
  }
  for (std::size_t i = width; i > 0; --i) {
    if (text[i] == ' ' || text[i - 1] == '/') return i;
  }
  std::size_t cut = width;
  while (cut > 1 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

// Lines of at most `width` characters.
std::vector<std::string> wrap(const std::string& text, std::size_t width) {
  std::vector<std::string> lines;
  std::string rest = trimmed(text);
  while (rest.size() > width) {
    const std::size_t cut = break_point(rest, width);
    lines.push_back(trimmed(rest.substr(0, cut)));
    rest = trimmed(rest.substr(cut));
  }
  lines.push_back(rest);
  return lines;
}

std::string status_text(const ReportRow& r) {
  if (!r.counts && r.status != Status::Ok && r.severity == Severity::Required) {
    return std::string(to_string(r.status)) + " (other backend)";
  }
  return std::string(to_string(r.status)) + (r.severity == Severity::Advisory ? " (advisory)" : "");
}

Cells cells_of(const ReportRow& r) { return {r.item, r.expected, r.found, r.source, status_text(r)}; }

Widths column_widths(const Cells& head, const std::vector<ReportRow>& rows) {
  Widths w{};
  for (std::size_t i = 0; i < kColumns; ++i) w[i] = head[i].size();
  for (const ReportRow& r : rows) {
    const Cells c = cells_of(r);
    for (std::size_t i = 0; i < kColumns; ++i) w[i] = std::max(w[i], std::min(c[i].size(), kCap[i]));
  }
  return w;
}

// One row; a cell wider than its column continues on the next lines in the same column, the other
// columns blank there, so that every column starts at the same place on every line.
void print_row(std::ostream& out, const Cells& cells, const Widths& w) {
  std::array<std::vector<std::string>, kColumns> pieces;
  std::size_t lines = 1;
  for (std::size_t i = 0; i < kColumns; ++i) {
    pieces[i] = wrap(cells[i], w[i]);
    lines = std::max(lines, pieces[i].size());
  }
  for (std::size_t k = 0; k < lines; ++k) {
    std::string line;
    for (std::size_t i = 0; i < kColumns; ++i) {
      const std::string& p = k < pieces[i].size() ? pieces[i][k] : "";
      line += p;
      if (i + 1 < kColumns) line += std::string(w[i] - p.size() + kGap, ' ');
    }
    out << line.substr(0, line.find_last_not_of(' ') + 1) << '\n';
  }
}

// "    fix: text", continued under the text's first character.
void print_labelled(std::ostream& out, const std::string& label, const std::string& text) {
  const std::string prefix = "    " + label + ": ";
  const std::vector<std::string> lines = wrap(text, kLineLimit - prefix.size());
  for (std::size_t k = 0; k < lines.size(); ++k)
    out << (k ? std::string(prefix.size(), ' ') : prefix) << lines[k] << '\n';
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
               std::map<std::string, std::string>& fixed_by) {
  const ReportRow* cause = r.because.empty() ? nullptr : find_row(report, r.because);
  if (cause && cause->status != Status::Ok) {
    out << "    (follows from " << r.because << ")\n";
    return;
  }
  if (r.fix.empty()) return;
  const auto [first, inserted] = fixed_by.emplace(r.fix, r.item);
  print_labelled(out, "fix", inserted ? r.fix : "same as " + first->second);
}

// Schema 2: a line per backend that does not run here, when another does: what stops it, and
// what would let it run.
void print_backends(std::ostream& out, const Report& report) {
  if (report.backend.empty()) return;
  for (const BackendOutcome& b : report.backends) {
    if (b.runs) continue;
    out << "backend " << b.name << " (CUDA " << b.cuda_major << ") does not run here: " << b.first_failure << '\n';
    if (!b.fix.empty()) print_labelled(out, "to run it", b.fix);
  }
}

void print_result(std::ostream& out, const Report& report) {
  int failed = 0, warned = 0;
  for (const ReportRow& r : report.rows) {
    if (r.status == Status::Ok || !r.counts) continue;
    ++(r.severity == Severity::Required ? failed : warned);
  }
  if (report.ok) {
    const std::string runs = report.backend.empty()
                                 ? ""
                                 : "runs the CUDA " + report.backend.substr(2) + " backend (" + report.backend + "): ";
    out << "result: ok: " << runs << "every required item holds"
        << (warned ? " (" + std::to_string(warned) + " advisory not ok)" : "") << '\n';
  } else {
    out << "result: MISMATCH: " << failed << " required item" << (failed == 1 ? "" : "s")
        << " not ok (first: " << report.first_failure()->item << ")\n";
  }
}

}  // namespace

std::string format_table(const Report& report) {
  const Cells head = {"item", "expected", "found", "source", "status"};
  const Widths widths = column_widths(head, report.rows);
  std::ostringstream out;
  out << "manifest: " << report.manifest << '\n';
  if (!report.standins.empty()) {
    out << "NOTE: the CPU stand-in for NVIDIA's libraries is loaded (test infrastructure): this report describes "
           "no real GPU, driver, CUDA runtime or cuDNN\n";
    for (const std::string& s : report.standins) out << "  stand-in: " << s << '\n';
  }
  print_row(out, head, widths);
  std::map<std::string, std::string> fixed_by;  // fix -> the first item printed with it
  for (const ReportRow& r : report.rows) {
    print_row(out, cells_of(r), widths);
    if (r.status != Status::Ok && r.counts) print_fix(out, report, r, fixed_by);
    for (const std::string& note : r.notes) print_labelled(out, "note", note);
  }
  print_backends(out, report);
  print_result(out, report);
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
