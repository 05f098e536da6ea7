#include "manifest/glob.h"

#include <cstddef>

namespace infer::manifest {
namespace {

// Matches the bracket expression starting at pattern[p] (just after '[') against c. Sets `end` to
// the index after its ']'; npos when the bracket never closes (then '[' is a literal).
bool bracket_matches(std::string_view pattern, std::size_t p, char c, std::size_t& end) {
  bool negate = false;
  if (p < pattern.size() && (pattern[p] == '!' || pattern[p] == '^')) {
    negate = true;
    ++p;
  }
  bool matched = false;
  bool first = true;
  while (p < pattern.size() && (pattern[p] != ']' || first)) {
    first = false;
    char lo = pattern[p];
    if (lo == '\\' && p + 1 < pattern.size()) lo = pattern[++p];
    char hi = lo;
    if (p + 2 < pattern.size() && pattern[p + 1] == '-' && pattern[p + 2] != ']') {
      p += 2;
      hi = pattern[p];
      if (hi == '\\' && p + 1 < pattern.size()) hi = pattern[++p];  // an escaped end: "[a-\\]]"
    }
    if (lo <= c && c <= hi) matched = true;
    ++p;
  }
  if (p >= pattern.size()) {
    end = std::string_view::npos;
    return false;
  }
  end = p + 1;
  return matched != negate;
}

}  // namespace

// Iterative with one backtrack point (the last '*'): linear in practice, never exponential.
bool glob_match(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0;
  std::size_t star_p = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size()) {
      const char pc = pattern[p];
      if (pc == '*') {
        star_p = ++p;
        star_t = t;
        continue;
      }
      if (pc == '?') {
        ++p;
        ++t;
        continue;
      }
      if (pc == '[') {
        std::size_t end = 0;
        const bool ok = bracket_matches(pattern, p + 1, text[t], end);
        if (end != std::string_view::npos) {
          if (ok) {
            p = end;
            ++t;
            continue;
          }
        } else if (text[t] == '[') {  // an unclosed '[' is itself
          ++p;
          ++t;
          continue;
        }
      } else {
        const bool escaped = pc == '\\' && p + 1 < pattern.size();
        const char want = escaped ? pattern[p + 1] : pc;
        if (want == text[t]) {
          p += escaped ? 2 : 1;
          ++t;
          continue;
        }
      }
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p;  // let the last '*' take one more character
    t = ++star_t;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace infer::manifest
