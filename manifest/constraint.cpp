#include "manifest/constraint.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace infer::manifest {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

std::optional<Version> Version::try_parse(const std::string& text) {
  std::vector<std::uint64_t> parts;
  std::size_t i = 0;
  while (true) {
    const std::size_t start = i;
    std::uint64_t value = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (value > 1'000'000'000'000ULL) return std::nullopt;
      value = value * 10 + static_cast<std::uint64_t>(text[i] - '0');
      ++i;
    }
    if (i == start) return std::nullopt;
    parts.push_back(value);
    if (i == text.size()) break;
    if (text[i] != '.') return std::nullopt;
    ++i;
  }
  Version v(std::move(parts));
  v.text_ = text;
  return v;
}

Version Version::parse(const std::string& text) {
  std::optional<Version> v = try_parse(text);
  if (!v) throw std::invalid_argument("'" + text + "' is not a dotted version number such as 580.65.06");
  return *v;
}

std::string Version::to_string() const {
  if (!text_.empty()) return text_;
  std::string s;
  for (std::size_t i = 0; i < parts_.size(); ++i) s += (i ? "." : "") + std::to_string(parts_[i]);
  return s;
}

int Version::compare(const Version& other) const {
  const std::size_t n = std::max(parts_.size(), other.parts_.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t a = i < parts_.size() ? parts_[i] : 0;
    const std::uint64_t b = i < other.parts_.size() ? other.parts_[i] : 0;
    if (a != b) return a < b ? -1 : 1;
  }
  return 0;
}

bool Version::starts_with(const Version& prefix) const {
  for (std::size_t i = 0; i < prefix.parts_.size(); ++i) {
    const std::uint64_t a = i < parts_.size() ? parts_[i] : 0;
    if (a != prefix.parts_[i]) return false;
  }
  return true;
}

Constraint Constraint::parse(const std::string& text) {
  Constraint c;
  c.text_ = trim(text);
  if (c.text_.empty()) throw std::invalid_argument("empty constraint (use \"*\" for any version)");
  if (c.text_ == "*") return c;
  std::size_t pos = 0;
  while (pos <= c.text_.size()) {
    const std::size_t comma = c.text_.find(',', pos);
    std::string clause = trim(c.text_.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    pos = comma == std::string::npos ? c.text_.size() + 1 : comma + 1;
    if (clause.empty()) throw std::invalid_argument("empty clause in '" + c.text_ + "'");
    Op op = Op::Eq;
    static const std::pair<const char*, Op> kOps[] = {{">=", Op::Ge}, {"<=", Op::Le}, {"==", Op::Eq}, {"!=", Op::Ne},
                                                      {">", Op::Gt},  {"<", Op::Lt},  {"=", Op::Eq}};
    bool has_op = false;
    for (const auto& [sym, o] : kOps) {
      if (clause.rfind(sym, 0) == 0) {
        op = o;
        clause = trim(clause.substr(std::string(sym).size()));
        has_op = true;
        break;
      }
    }
    if (clause.size() >= 2 && clause.compare(clause.size() - 2, 2, ".*") == 0) {
      if (has_op) throw std::invalid_argument("'" + c.text_ + "': a wildcard cannot follow an operator");
      clause.resize(clause.size() - 2);
      op = Op::Prefix;
    }
    if (clause.find('*') != std::string::npos) {
      throw std::invalid_argument("'" + c.text_ + "': '*' is allowed only alone or as the last component (9.19.*)");
    }
    std::optional<Version> v = Version::try_parse(clause);
    if (!v) {
      throw std::invalid_argument("'" + c.text_ + "': '" + clause +
                                  "' is not a version; expected forms: 13.0, 9.19.*, >=580.65.06, \">=9.1, <10\", *");
    }
    c.clauses_.push_back({op, *v});
  }
  return c;
}

bool Constraint::allows(const Version& v) const {
  for (const Clause& cl : clauses_) {
    const int cmp = v.compare(cl.version);
    bool ok = false;
    switch (cl.op) {
      case Op::Eq: ok = cmp == 0; break;
      case Op::Ne: ok = cmp != 0; break;
      case Op::Lt: ok = cmp < 0; break;
      case Op::Le: ok = cmp <= 0; break;
      case Op::Gt: ok = cmp > 0; break;
      case Op::Ge: ok = cmp >= 0; break;
      case Op::Prefix: ok = v.starts_with(cl.version); break;
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace infer::manifest
