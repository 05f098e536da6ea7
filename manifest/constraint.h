// Dotted version numbers and the constraints VERSIONS.toml states about them.
//
// A Version is any number of dot-separated non-negative integers ("580.65.06", "13.0", "9"),
// compared component by component as numbers, missing trailing components counting as 0
// (so "13" == "13.0" == "13.0.0" and 580.65.06 < 580.105.08).
//
// A Constraint is "*" (anything) or comma-separated clauses that must all hold:
//   "13.0"            exactly 13.0 (== 13.0.0; not 13.0.48)
//   "9.19.*"          any version starting 9.19 (wildcard only as the last component, no operator)
//   ">=580.65.06"     one of >=, >, <=, <, ==, != followed by a version
//   ">=9.1, <10"      a range
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace infer::manifest {

class Version {
 public:
  Version() = default;
  explicit Version(std::vector<std::uint64_t> parts) : parts_(std::move(parts)) {}
  // Throws std::invalid_argument naming the text when it is not a dotted number.
  static Version parse(const std::string& text);
  // Nothing when the text is not a dotted number (for values read from the system).
  static std::optional<Version> try_parse(const std::string& text);

  const std::vector<std::uint64_t>& parts() const { return parts_; }
  std::string to_string() const;            // as written when parsed ("580.65.06"), else the numbers joined by dots
  int compare(const Version& other) const;  // <0, 0, >0
  bool starts_with(const Version& prefix) const;

 private:
  std::vector<std::uint64_t> parts_;
  std::string text_;
};

inline bool operator<(const Version& a, const Version& b) { return a.compare(b) < 0; }
inline bool operator==(const Version& a, const Version& b) { return a.compare(b) == 0; }

class Constraint {
 public:
  // Throws std::invalid_argument with a one-line description of what is wrong.
  static Constraint parse(const std::string& text);
  bool allows(const Version& v) const;
  const std::string& text() const { return text_; }

 private:
  enum class Op { Eq, Ne, Lt, Le, Gt, Ge, Prefix };
  struct Clause {
    Op op;
    Version version;
  };
  std::string text_;
  std::vector<Clause> clauses_;  // empty: "*"
};

}  // namespace infer::manifest
