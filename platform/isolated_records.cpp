#include "platform/isolated_records.h"

#include <cerrno>
#include <cstdlib>

#include "platform/printable.h"

namespace infer {
namespace detail {

std::string escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else
      out += c;
  }
  return out;
}

std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
  }
  return out;
}

void parse_records(const std::string& text, IsolatedResult& r) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    const std::size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    const std::string key = line.substr(0, tab);
    // What a damaged library returned can be any bytes: keep it one line of valid UTF-8.
    const std::string value = printable_utf8(unescape(line.substr(tab + 1)));
    if (key == "step")
      r.step = value;
    else if (key == "fault")
      r.fault_file = value;
    else
      r.records.emplace_back(key, value);
  }
}

std::vector<std::string> output_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size() && lines.size() < 20) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line;
    for (std::size_t i = start; i < end && line.size() < 300; ++i) {
      const unsigned char c = static_cast<unsigned char>(text[i]);
      if (c >= 0x20 && c < 0x7f)
        line += static_cast<char>(c);
      else if (c == '\t')
        line += ' ';
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (!line.empty()) lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

}  // namespace detail

std::string IsolatedResult::failure() const {
  const std::string during = step.empty() ? "" : " while " + step;
  switch (end) {
    case End::Finished: return "";
    case End::NotStarted: return "could not be run in a child process: " + start_error;
    case End::TimedOut: return "did not finish within " + std::to_string(timeout_ms) + " ms" + during;
    case End::Exited: return "ended the process with exit(" + std::to_string(exit_code) + ")" + during;
    case End::Signalled: return detail::crash_text(signal) + (fault_file.empty() ? "" : " in " + fault_file) + during;
  }
  return "";
}

std::optional<long long> IsolatedResult::number(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  const std::string v = value(key);
  char* end_of_number = nullptr;
  errno = 0;
  const long long n = std::strtoll(v.c_str(), &end_of_number, 10);
  if (v.empty() || *end_of_number != '\0' || errno == ERANGE) return std::nullopt;
  return n;
}

std::string IsolatedResult::value(const std::string& key) const {
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    if (it->first == key) return it->second;
  }
  return "";
}

bool IsolatedResult::has(const std::string& key) const {
  for (const auto& r : records) {
    if (r.first == key) return true;
  }
  return false;
}

std::chrono::milliseconds probe_timeout() {
  if (const char* v = std::getenv("INFER_PROBE_TIMEOUT_MS"); v && *v) {
    char* end = nullptr;
    const long ms = std::strtol(v, &end, 10);
    if (end && *end == '\0' && ms > 0) return std::chrono::milliseconds(ms);
  }
  return std::chrono::seconds(10);
}

}  // namespace infer
