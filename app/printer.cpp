#include "app/printer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ostream>

#include <nlohmann/json.hpp>

#include "app/classify.h"
#include "app/interrupt.h"
#include "platform/printable.h"

namespace infer::app {
namespace {

std::string dump(const nlohmann::json& j) {
  // Invalid UTF-8 in a file name is replaced rather than thrown: a line is always whole (the name's
  // bytes are in "file_bytes").
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// {"file": name}, plus "file_bytes" when the name is not UTF-8: JSON strings hold Unicode text, so
// such a name's "file" has U+FFFD for each bad byte and "file_bytes" has every byte, in base64.
nlohmann::json file_fields(const std::string& path) {
  nlohmann::json j{{"file", path}};
  if (!is_utf8(path)) j["file_bytes"] = base64(path);
  return j;
}

}  // namespace

std::string base64(std::string_view bytes) {
  static const char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 3; ++k) v = v << 8 | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (std::size_t k = 0; k < 4; ++k) out += k <= n ? kDigits[v >> (18 - 6 * k) & 63] : '=';
  }
  return out;
}

Printer::Printer(const Options& options, const Classifier& classifier, std::ostream& out, std::ostream& err)
    : options_(options), out_(out), err_(err), device_(classifier.device()), backend_(classifier.backend()) {
  tag_ = device_ == "cpu" ? "[cpu]" : "[" + printable_utf8(backend_) + "]";
}

void Printer::error(const Input& input, const std::string& message) {
  const std::string err_line = "infer: " + printable_utf8(message) + '\n';
  std::string out_line;
  if (options_.json) {
    nlohmann::json j = file_fields(input.path);
    j["error"] = message;
    out_line = dump(j) + '\n';
  }
  const WholeOutput whole;
  err_ << err_line << std::flush;
  if (!out_line.empty()) write_out(out_line);
}

void Printer::emit(const std::string& line) {
  const WholeOutput whole;  // a signal now waits for the line: whole, and flushed
  write_out(line);
}

void Printer::write_out(const std::string& line) {
  errno = 0;
  out_ << line << std::flush;
  if (!out_ && write_errno_ == 0) write_errno_ = errno;  // flush() reports the first failure's reason
}

void Printer::flush() {
  errno = 0;
  out_.flush();
  if (!out_) {
    const int why = write_errno_ != 0 ? write_errno_ : errno;
    throw OutputError(why ? std::strerror(why) : "write failed");
  }
}

void Printer::result(const Input& input, const std::vector<Prediction>& top, bool scores) {
  if (options_.json) {
    nlohmann::json classes = nlohmann::json::array();
    for (const Prediction& p : top) {
      classes.push_back({{"label", p.label}, {"index", p.index}, {scores ? "score" : "prob", p.score}});
    }
    nlohmann::json j = file_fields(input.path);
    j["device"] = device_;
    j["backend"] = backend_;
    j["top"] = std::move(classes);
    emit(dump(j) + '\n');
    return;
  }
  std::string line = printable_utf8(input.path) + ':';
  for (std::size_t i = 0; i < top.size(); ++i) {
    char value[32];
    std::snprintf(value, sizeof value, "%.3f", static_cast<double>(top[i].score));
    line += (i ? " | " : " ") + printable_utf8(top[i].label) + ' ' + value;
  }
  line += (scores ? "   (scores) " : "   ") + tag_ + '\n';
  emit(line);
}

}  // namespace infer::app
