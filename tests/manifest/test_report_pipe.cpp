// `infer --check` as a script and as a person read it (issue 31). Into a pipe nothing is wrapped:
// every row is one line, so `infer --check | grep -F "$(realpath <a library it names>)"` finds the
// library and a model file's digest row greps whole. On a terminal (here a pseudo-terminal of a set
// size) the table fits the terminal's width, broken only at spaces: no path, digest or version is
// ever cut. The libraries are copies of the CPU stand-in (tests/standin) in a folder of a long
// random path, longer than any column and than the 160 characters the table once wrapped at.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/support/process.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

namespace fs = std::filesystem;

const fs::path kStandin = (exe_dir() / INFER_STANDIN_LIBRARY_DIR).lexically_normal();

// A folder name of 6 to 29 characters of those a path holds ([a-z0-9._-]), never "." or "..".
std::string random_name(std::mt19937& rng) {
  static const std::string kChars = "abcdefghijklmnopqrstuvwxyz0123456789._-";
  std::uniform_int_distribution<std::size_t> length(6, 29), pick(0, kChars.size() - 1);
  std::string name = "d";
  for (std::size_t n = length(rng); name.size() < n;) name += kChars[pick(rng)];
  return name;
}

// The stand-in's libraries copied into a folder of a random path over 200 characters long; its
// real path (no link on the way), which the report then names.
fs::path standin_copy(const TempDir& dir, std::mt19937& rng) {
  fs::path lib = dir.path();
  while (lib.string().size() < 200) lib /= random_name(rng);
  fs::create_directories(lib);
  for (const fs::directory_entry& e : fs::directory_iterator(kStandin)) {
    if (e.is_symlink()) {
      fs::create_symlink(fs::read_symlink(e.path()), lib / e.path().filename());
    } else {
      fs::copy_file(e.path(), lib / e.path().filename());
    }
  }
  return fs::canonical(lib);
}

void collect_strings(const nlohmann::json& j, std::vector<std::string>& out) {
  if (j.is_string()) out.push_back(j.get<std::string>());
  if (j.is_array() || j.is_object()) {
    for (const nlohmann::json& v : j) collect_strings(v, out);
  }
}

// The library files the JSON report names anywhere (source, found, fix, notes, standin): each
// absolute path that starts a word or follows "(", ends at a blank, ")", ",", ";" or a trailing
// ":", and names an existing file of a shared library.
std::set<std::string> library_paths(const nlohmann::json& report) {
  std::vector<std::string> strings;
  collect_strings(report, strings);
  static const std::regex kPath("(^|[ (])(/[^ (),;]+)");
  std::set<std::string> paths;
  for (const std::string& s : strings) {
    for (auto m = std::sregex_iterator(s.begin(), s.end(), kPath); m != std::sregex_iterator(); ++m) {
      std::string p = (*m)[2];
      while (!p.empty() && (p.back() == ':' || p.back() == '.')) p.pop_back();
      if (fs::path(p).filename().string().find(".so") != std::string::npos && fs::is_regular_file(p)) {
        paths.insert(p);
      }
    }
  }
  return paths;
}

bool some_line_has(const std::vector<std::string>& lines, const std::string& part) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

struct Checked {
  nlohmann::json report;            // infer --check --json
  std::set<std::string> libraries;  // the library paths it names
  std::size_t in_copy = 0;          // of which in the stand-in's copy
  std::vector<std::string> env;
};

Checked check_on_standin_copy(const TempDir& dir, std::mt19937& rng) {
  Checked c;
  const fs::path lib = standin_copy(dir, rng);
  c.env = {"LD_LIBRARY_PATH=" + lib.string()};
  const ProcessResult json = run_process(infer_exe(), {"--check", "--json"}, c.env);
  c.report = nlohmann::json::parse(json.out, nullptr, false);
  if (!c.report.is_object()) return c;
  c.libraries = library_paths(c.report);
  for (const std::string& p : c.libraries) c.in_copy += p.rfind(lib.string() + "/", 0) == 0 ? 1 : 0;
  return c;
}

TEST(ReportPipe, EveryRowIsOneLineAndEveryLibraryAndDigestGrepsWhole) {
  if (!fs::exists(kStandin / "libcuda.so.1")) GTEST_SKIP() << "the CPU stand-in is not built (" << kStandin << ")";
  TempDir dir;
  std::mt19937 rng(std::random_device{}());
  const Checked c = check_on_standin_copy(dir, rng);
  ASSERT_TRUE(c.report.is_object());
  // Not vacuous: the driver, NVML, CUDA runtime and cuDNN of the copy at least.
  ASSERT_GE(c.in_copy, 4u) << c.report.dump(2);

  // Into a pipe, as a script reads it.
  const ProcessResult piped = run_process("/bin/sh", {"-c", quoted(infer_exe()) + " --check | cat"}, c.env);
  const std::vector<std::string> lines = piped.out_lines();
  ASSERT_FALSE(lines.empty()) << piped.err;
  for (const std::string& p : c.libraries) {
    EXPECT_TRUE(some_line_has(lines, p)) << p << "\n" << piped.out;
    // As the issue states it: the real path greps (the copy's paths are real paths already).
    if (fs::canonical(p).string() == p) continue;
    EXPECT_TRUE(some_line_has(lines, fs::canonical(p).string())) << p << "\n" << piped.out;
  }
  // Each row is one line, its cells whole on it.
  std::size_t digests = 0;
  for (const nlohmann::json& item : c.report["items"]) {
    const std::string name = item["item"];
    std::vector<std::string> rows;
    for (const std::string& l : lines) {
      if (l.rfind(name + " ", 0) == 0) rows.push_back(l);
    }
    ASSERT_EQ(rows.size(), 1u) << name << "\n" << piped.out;
    for (const char* cell : {"expected", "found", "source"}) {
      EXPECT_NE(rows[0].find(item[cell].get<std::string>()), std::string::npos) << cell << " of " << rows[0];
    }
    // A model file's row: its digest, 64 hex digits, whole on the row's line.
    static const std::regex kDigest("sha256 ([0-9a-f]{64})( |$)");
    std::smatch m;
    const std::string expected = item["expected"];
    if (name.rfind("model:", 0) == 0 && std::regex_search(expected, m, kDigest)) {
      ++digests;
      EXPECT_NE(rows[0].find("sha256 " + m[1].str()), std::string::npos) << rows[0];
    }
  }
  EXPECT_GE(digests, 2u) << "the shipped manifest lists the model's two files\n" << piped.out;

  // The words, through grep itself.
  const std::string cudnn = c.env[0].substr(std::string("LD_LIBRARY_PATH=").size()) + "/libcudnn.so.9";
  ASSERT_TRUE(c.libraries.count(cudnn)) << cudnn;
  const ProcessResult grep = run_process(
      "/bin/sh", {"-c", quoted(infer_exe()) + " --check | grep -F -- \"$(realpath " + quoted(cudnn) + ")\""}, c.env);
  EXPECT_EQ(grep.exit_code, 0) << grep.out << grep.err;
  EXPECT_NE(grep.out.find(cudnn), std::string::npos) << grep.out;
}

// Runs `infer args` with stdout on a pseudo-terminal of `columns` columns, stderr on a file; what
// the terminal received, the line discipline's "\r\n" turned back into "\n".
ProcessResult run_on_terminal(const std::vector<std::string>& args, const std::vector<std::string>& env,
                              unsigned short columns) {
  ProcessResult r;
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) return r;
  const std::string slave_name = ptsname(master);
  const int slave = open(slave_name.c_str(), O_RDWR | O_NOCTTY);
  struct winsize size {};
  size.ws_row = 50;
  size.ws_col = columns;
  if (slave < 0 || ioctl(slave, TIOCSWINSZ, &size) != 0) return r;
  TempDir dir;
  const std::string err_path = (dir / "stderr").string(), exe = infer_exe();
  const pid_t pid = fork();
  if (pid == 0) {
    if (dup2(slave, STDOUT_FILENO) < 0 || !freopen(err_path.c_str(), "w", stderr)) _exit(127);
    close(master);
    close(slave);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv{const_cast<char*>(exe.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  close(slave);
  char buffer[4096];
  for (;;) {  // until the child's end closes the terminal: EIO on Linux
    const ssize_t n = read(master, buffer, sizeof buffer);
    if (n > 0) {
      r.out.append(buffer, static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  close(master);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out.erase(std::remove(r.out.begin(), r.out.end(), '\r'), r.out.end());
  r.err = slurp(err_path);
  return r;
}

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> w;
  std::istringstream in(line);
  for (std::string word; in >> word;) w.push_back(word);
  return w;
}

// On a terminal: lines fit its width, or are one word too long for any line; every library path
// and every digest is one word of some line.
void expect_terminal_layout(const ProcessResult& r, const std::set<std::string>& libraries, std::size_t width,
                            const std::string& what) {
  const std::vector<std::string> lines = r.out_lines();
  ASSERT_GT(lines.size(), 10u) << what << ": " << r.err;
  std::set<std::string> all;
  for (const std::string& line : lines) {
    const std::vector<std::string> w = words(line);
    all.insert(w.begin(), w.end());
    if (line.size() > width) {
      EXPECT_EQ(w.size(), 1u) << what << ": a line over " << width << ":\n" << line;
    }
  }
  for (const std::string& p : libraries) {  // inside one word: "(/path/libcudnn.so.9)" is one
    const bool whole =
        std::any_of(all.begin(), all.end(), [&](const std::string& w) { return w.find(p) != std::string::npos; });
    EXPECT_TRUE(whole) << what << ": " << p << " is not within a word of the table\n" << r.out;
  }
  static const std::regex kHex("[0-9a-f]{16,}");
  for (const std::string& w : all) {
    if (std::regex_match(w, kHex)) {
      EXPECT_EQ(w.size(), 64u) << what << ": a digest cut: " << w;
    }
  }
  EXPECT_GE(std::count_if(all.begin(), all.end(), [](const std::string& w) { return std::regex_match(w, kHex); }), 2)
      << what << "\n"
      << r.out;
}

TEST(ReportPipe, OnATerminalTheTableFitsItsWidthAndNoPathOrDigestIsCut) {
  if (!fs::exists(kStandin / "libcuda.so.1")) GTEST_SKIP() << "the CPU stand-in is not built (" << kStandin << ")";
  TempDir dir;
  std::mt19937 rng(std::random_device{}());
  const Checked c = check_on_standin_copy(dir, rng);
  ASSERT_TRUE(c.report.is_object());
  ASSERT_GE(c.in_copy, 4u) << c.report.dump(2);
  const int terminal = posix_openpt(O_RDWR | O_NOCTTY);
  if (terminal < 0) GTEST_SKIP() << "no pseudo-terminal here (posix_openpt: " << std::strerror(errno) << ")";
  close(terminal);
  std::vector<std::string> env = c.env;
  env.push_back("COLUMNS=");  // the terminal's own size, not the test runner's
  const ProcessResult wide = run_on_terminal({"--check"}, env, 100);
  expect_terminal_layout(wide, c.libraries, 100, "a terminal of 100 columns");
  // COLUMNS, when set, is the width.
  env.back() = "COLUMNS=64";
  const ProcessResult narrow = run_on_terminal({"--check"}, env, 100);
  expect_terminal_layout(narrow, c.libraries, 64, "COLUMNS=64");
  EXPECT_NE(narrow.out, wide.out);
  // --version too: wrapped to the terminal, one line per entry into a pipe, the same words.
  const ProcessResult version = run_on_terminal({"--version"}, env, 60);
  const ProcessResult piped = run_process("/bin/sh", {"-c", quoted(infer_exe()) + " --version | cat"}, c.env);
  std::vector<std::string> on_terminal, in_pipe;
  bool long_line = false;
  for (const std::string& line : version.out_lines()) {
    if (line.size() > 64) {
      EXPECT_EQ(words(line).size(), 1u) << line << "\n" << version.out;
    }
    for (const std::string& w : words(line)) on_terminal.push_back(w);
  }
  for (const std::string& line : piped.out_lines()) {
    long_line = long_line || line.size() > 64;
    for (const std::string& w : words(line)) in_pipe.push_back(w);
  }
  EXPECT_TRUE(long_line) << "nothing to wrap at 64 columns\n" << piped.out;
  EXPECT_EQ(on_terminal, in_pipe) << version.out << "\n" << piped.out;
  EXPECT_GT(version.out_lines().size(), piped.out_lines().size()) << version.out;
}

}  // namespace
}  // namespace infer::test
