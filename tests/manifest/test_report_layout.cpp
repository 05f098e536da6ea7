// The layout of `infer --check`'s table (manifest::format_table) at a width (issue 31): at width 0
// (a pipe, a file) every row is one line, its cells whole at their columns; at a terminal's width,
// lines fit it and are broken only at spaces, so that no path, digest or version is ever cut: a
// word longer than a line stands alone on its line. On reports of fresh random paths, digests and
// versions, and on fixed cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "manifest/report.h"
#include "tests/support/temp_dir.h"

namespace infer::test {
namespace {

using manifest::Report;
using manifest::ReportRow;
using manifest::Severity;
using manifest::Status;

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> w;
  std::istringstream in(text);
  for (std::string word; in >> word;) w.push_back(word);
  return w;
}

// Random text of the kinds a report holds: paths (of every character a path may hold but a
// blank), SHA-256 digests, versions, and lists of them.
class RandomText {
 public:
  explicit RandomText(std::uint32_t seed) : rng_(seed) {}

  std::size_t below(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }

  std::string name(std::size_t longest) {
    static const std::string kChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+@=";
    std::string n;
    for (std::size_t k = 1 + below(longest); k > 0; --k) n += kChars[below(kChars.size())];
    return n;
  }
  std::string path() {
    std::string p;
    for (std::size_t k = 1 + below(9); k > 0; --k) p += "/" + name(24);
    return p + "/lib" + name(12) + ".so." + std::to_string(below(20));
  }
  std::string digest() {
    static const char kHex[] = "0123456789abcdef";
    std::string d;
    for (int k = 0; k < 64; ++k) d += kHex[below(16)];
    return d;
  }
  std::string version() {
    return std::to_string(below(600)) + "." + std::to_string(below(100)) + "." + std::to_string(below(100));
  }
  std::string phrase() {
    static const char* kWords[] = {"loaded", "also", "on", "the", "loader", "path:", "needs", "driver", ">=", "built"};
    std::string p;
    for (std::size_t k = 1 + below(6); k > 0; --k) p += std::string(p.empty() ? "" : " ") + kWords[below(10)];
    return p;
  }
  // A cell: a few of the kinds above, joined as the report joins them.
  std::string cell() {
    std::string c;
    for (std::size_t k = 1 + below(4); k > 0; --k) {
      static const char* kJoins[] = {" ", "; ", ", "};
      if (!c.empty()) c += kJoins[below(3)];
      switch (below(6)) {
        case 0: c += "cudnnGetVersion (" + path() + ")"; break;
        case 1: c += "sha256 " + digest(); break;
        case 2: c += version(); break;
        case 3: c += path(); break;
        case 4: c += phrase(); break;
        default: c += name(40); break;
      }
    }
    return c;
  }

  Report report() {
    Report r;
    r.manifest = path() + "/VERSIONS.toml";
    for (std::size_t k = below(3); k > 0; --k) r.standins.push_back(path() + ": infer CPU stand-in for " + name(8));
    const std::size_t rows = 1 + below(24);
    for (std::size_t k = 0; k < rows; ++k) {
      ReportRow row;
      row.item = "row" + std::to_string(k) + "." + name(below(3) == 0 ? 60 : 24);
      row.expected = below(3) == 0 ? "sha256 " + digest() : ">=" + version();
      row.found = cell();
      row.source = cell();
      row.status = static_cast<Status>(below(4));
      row.severity = below(3) == 0 ? Severity::Advisory : Severity::Required;
      row.counts = below(5) != 0;
      if (row.status != Status::Ok) row.fix = "remove " + path() + " " + cell();  // unique: printed whole
      if (k > 0 && below(4) == 0) row.because = r.rows[below(k)].item;
      for (std::size_t n = below(3); n > 0; --n) row.notes.push_back(cell());
      r.rows.push_back(row);
    }
    r.ok = std::none_of(r.rows.begin(), r.rows.end(), [](const ReportRow& row) {
      return row.severity == Severity::Required && row.status != Status::Ok && row.counts;
    });
    return r;
  }

 private:
  std::mt19937 rng_;
};

std::string status_text(const ReportRow& r) {
  if (!r.counts && r.status != Status::Ok && r.severity == Severity::Required) {
    return std::string(to_string(r.status)) + " (other backend)";
  }
  return std::string(to_string(r.status)) + (r.severity == Severity::Advisory ? " (advisory)" : "");
}

// Every row is one line, each cell whole where its column starts; each fix and note one line.
void expect_one_line_per_row(const Report& report) {
  const std::string table = manifest::format_table(report, 0);
  const std::vector<std::string> lines = split_lines(table);
  const auto head =
      std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("item ", 0) == 0; });
  ASSERT_NE(head, lines.end()) << table;
  std::vector<std::size_t> starts;
  for (const char* name : {"expected", "found", "source", "status"}) starts.push_back(head->find(name));
  for (const ReportRow& r : report.rows) {
    std::vector<std::string> rows;
    for (const std::string& l : lines) {
      if (l.rfind(r.item + " ", 0) == 0) rows.push_back(l);
    }
    ASSERT_EQ(rows.size(), 1u) << r.item << "\n" << table;
    const std::string cells[] = {r.expected, r.found, r.source, status_text(r)};
    for (std::size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(rows[0].compare(starts[i], cells[i].size(), cells[i]), 0)
          << "column " << i << " of " << r.item << ": " << cells[i] << "\n"
          << rows[0];
    }
    for (const std::string& note : r.notes) {
      EXPECT_NE(table.find("\n    note: " + note + "\n"), std::string::npos) << note << "\n" << table;
    }
  }
  EXPECT_NE(table.find("manifest: " + report.manifest + "\n"), std::string::npos) << table;
  for (const std::string& s : report.standins) {
    EXPECT_NE(table.find("\n  stand-in: " + s + "\n"), std::string::npos) << s << "\n" << table;
  }
  for (const std::string& l : lines) {
    if (l.rfind("    fix: ", 0) == 0 && l.rfind("    fix: same as ", 0) != 0) {
      const std::string fix = l.substr(9);
      EXPECT_TRUE(std::any_of(report.rows.begin(), report.rows.end(), [&](const ReportRow& r) { return r.fix == fix; }))
          << l;
    }
  }
}

// At `width` (20 or more: the narrowest table): each line fits, or is one word longer than the
// room it had; nothing is lost or cut.
void expect_fits(const Report& report, std::size_t width) {
  const std::string table = manifest::format_table(report, width);
  const std::vector<std::string> lines = split_lines(table);
  for (const std::string& l : lines) {
    if (l.size() > width) {
      EXPECT_EQ(words(l).size(), 1u) << "a line over " << width << " of more than one word:\n" << l << "\n" << table;
    }
  }
  // The same words as the unwrapped table, less the labels and column names the layouts differ by.
  const std::set<std::string> labels = {"item",      "expected", "found",   "source", "status",
                                        "expected:", "found:",   "source:", "status:"};
  std::multiset<std::string> wrapped, whole;
  for (const std::string& w : words(table)) {
    if (!labels.count(w)) wrapped.insert(w);
  }
  for (const std::string& w : words(manifest::format_table(report, 0))) {
    if (!labels.count(w)) whole.insert(w);
  }
  EXPECT_EQ(wrapped, whole) << "width " << width << "\n" << table;
  // In particular every path, digest and version of the input is a word, or inside one, of a line.
  const std::set<std::string> present(wrapped.begin(), wrapped.end());
  for (const ReportRow& r : report.rows) {
    for (const std::string& cell : {r.item, r.expected, r.found, r.source}) {
      for (const std::string& w : words(cell)) {
        EXPECT_TRUE(present.count(w)) << "width " << width << ": " << w << " cut\n" << table;
      }
    }
  }
}

TEST(ReportLayout, WidthZeroPrintsEachRowOnOneLineItsCellsWholeInTheirColumns) {
  const std::uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  RandomText random(seed);
  for (int k = 0; k < 40; ++k) expect_one_line_per_row(random.report());
}

TEST(ReportLayout, AtAWidthLinesFitAndNoWordIsCut) {
  const std::uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  RandomText random(seed);
  for (int k = 0; k < 40; ++k) {
    const Report report = random.report();
    for (std::size_t width : {20, 40, 60, 80, 100, 120, 160, 200}) expect_fits(report, width);
    expect_fits(report, 20 + random.below(250));
  }
}

// A table that fits needs no wrapping: at a width above its widest line it is the unwrapped one.
TEST(ReportLayout, ATableThatFitsIsTheUnwrappedOne) {
  RandomText random(std::random_device{}());
  for (int k = 0; k < 10; ++k) {
    const Report report = random.report();
    const std::string whole = manifest::format_table(report, 0);
    std::size_t widest = 0;
    for (const std::string& l : split_lines(whole)) widest = std::max(widest, l.size());
    EXPECT_EQ(manifest::format_table(report, widest), whole);
  }
}

// A fixed case: a digest and a path longer than the line are each alone on a line, whole; the
// row's other cells, and a fix naming a path, wrap around them.
TEST(ReportLayout, AWordLongerThanTheLineStandsAloneWhole) {
  const std::string digest = "3f0a1c9e5b7d2468ace013579bdf2468ace013579bdf2468ace013579bdf2468";
  const std::string lib = "/opt/deploy/lib/nvidia/cudnn-9.19.0-cuda13/lib/libcudnn.so.9";
  Report r;
  r.manifest = "/etc/infer/VERSIONS.toml";
  r.ok = false;
  r.rows = {{"model:weights/fashion.safetensors",
             "sha256 " + digest,
             "sha256 " + digest,
             "/srv/models/fashion.safetensors",
             Status::Fail,
             Severity::Required,
             "",
             "",
             {}},
            {"cudnn.single_copy",
             "holds",
             "2 copies: " + lib + ", /usr/lib/x86_64-linux-gnu/libcudnn.so.9",
             "LD_LIBRARY_PATH, ldconfig -p",
             Status::Warn,
             Severity::Advisory,
             "remove " + lib + " or run with a LD_LIBRARY_PATH that names one",
             "",
             {}}};
  const std::string table = manifest::format_table(r, 60);
  const std::vector<std::string> lines = split_lines(table);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "    expected: sha256"), lines.end()) << table;
  EXPECT_NE(std::find(lines.begin(), lines.end(), std::string(14, ' ') + digest), lines.end()) << table;
  // The fix: its first word fits, the path does not fit beside it and starts the next line.
  EXPECT_NE(table.find("    fix: remove\n         " + lib + "\n"), std::string::npos) << table;
  // found: "2 copies:" then each path on a line of its own, under the text.
  EXPECT_NE(table.find("    found:    2 copies:\n              " + lib + ",\n"), std::string::npos) << table;
  for (const std::string& l : lines) {
    if (l.size() > 60) {
      EXPECT_EQ(words(l).size(), 1u) << l;
    }
  }
  // Unwrapped: each row on one line.
  const std::string whole = manifest::format_table(r, 0);
  const std::vector<std::string> whole_lines = split_lines(whole);
  const auto model = std::find_if(whole_lines.begin(), whole_lines.end(), [](const std::string& l) {
    return l.rfind("model:weights/fashion.safetensors  sha256 ", 0) == 0;
  });
  ASSERT_NE(model, whole_lines.end()) << whole;
  EXPECT_NE(model->find("sha256 " + digest + "  sha256 " + digest + "  "), std::string::npos) << *model;
  EXPECT_EQ(words(*model).back(), "FAIL") << *model;
  EXPECT_NE(whole.find("\n    fix: " + r.rows[1].fix + "\n"), std::string::npos) << whole;
}

TEST(ReportLayout, WrapWordsBreaksOnlyAtSpaces) {
  RandomText random(std::random_device{}());
  for (int k = 0; k < 200; ++k) {
    const std::string text = random.cell();
    const std::size_t width = 1 + random.below(90);
    const std::vector<std::string> lines = manifest::wrap_words(text, width);
    std::string joined;
    for (const std::string& l : lines) {
      if (l.size() > width) {
        EXPECT_EQ(words(l).size(), 1u) << width << ": " << l;
      }
      EXPECT_EQ(l, words(l).empty() ? "" : l.substr(l.find_first_not_of(' '))) << "no leading blank: " << l;
      joined += (joined.empty() ? "" : " ") + l;
    }
    EXPECT_EQ(words(joined), words(text));
    EXPECT_EQ(joined, text) << width;  // the text's blanks are single: the lines joined by one give it back
    EXPECT_EQ(manifest::wrap_words(text, 0), std::vector<std::string>{text});
  }
  // A list breaks after its separator where that fills half the line.
  EXPECT_EQ(manifest::wrap_words("libcudnn_cnn.so.9 missing; libcudnn_adv.so.9 missing", 40),
            (std::vector<std::string>{"libcudnn_cnn.so.9 missing;", "libcudnn_adv.so.9 missing"}));
}

}  // namespace
}  // namespace infer::test
