// Runs the infer executable as a child process and captures its exit code, stdout and stderr.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace infer::test {

struct ProcessResult {
  int exit_code = -1;
  std::string out;
  std::string err;
  long max_rss_kib = 0;  // the child's peak resident set size (getrusage's ru_maxrss)
  std::vector<std::string> out_lines() const { return lines(out); }
  static std::vector<std::string> lines(const std::string& s) { return split_lines(s); }
};

// Runs `exe args...` with stdout and stderr captured to files (no shell involved). extra_env
// entries ("NAME=value") are added to the environment of the child.
inline ProcessResult run_process(const std::string& exe, const std::vector<std::string>& args,
                                 const std::vector<std::string>& extra_env = {}) {
  TempDir dir;
  const std::string out_path = (dir / "stdout").string(), err_path = (dir / "stderr").string();
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out_path.c_str(), "w", stdout) || !freopen(err_path.c_str(), "w", stderr)) _exit(127);
    for (const std::string& e : extra_env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv{const_cast<char*>(exe.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  wait4(pid, &status, 0, &usage);
  ProcessResult r;
  r.max_rss_kib = usage.ru_maxrss;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

}  // namespace infer::test
