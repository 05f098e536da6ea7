#include "platform/printable.h"

namespace infer {
namespace {

void append_escaped(std::string& out, unsigned char c) {
  static const char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

bool in(unsigned char c, unsigned char lo, unsigned char hi) { return c >= lo && c <= hi; }

// The length of the well-formed UTF-8 sequence of two or more bytes at text[i], or 0
// (RFC 3629, table 3-7 of the Unicode standard: no overlong forms, surrogates or values past U+10FFFF).
std::size_t sequence_length(std::string_view text, std::size_t i) {
  auto at = [&](std::size_t k) -> unsigned char {
    return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0;
  };
  const unsigned char b0 = at(0), b1 = at(1);
  auto cont = [&](std::size_t k) { return in(at(k), 0x80, 0xbf); };
  if (in(b0, 0xc2, 0xdf)) return cont(1) ? 2 : 0;
  if (b0 == 0xe0) return in(b1, 0xa0, 0xbf) && cont(2) ? 3 : 0;
  if (in(b0, 0xe1, 0xec) || in(b0, 0xee, 0xef)) return cont(1) && cont(2) ? 3 : 0;
  if (b0 == 0xed) return in(b1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (b0 == 0xf0) return in(b1, 0x90, 0xbf) && cont(2) && cont(3) ? 4 : 0;
  if (in(b0, 0xf1, 0xf3)) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (b0 == 0xf4) return in(b1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

}  // namespace

std::string printable_ascii(std::string_view text) {
  std::string out;
  for (const char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f)
      out += ch;
    else
      append_escaped(out, c);
  }
  return out;
}

bool is_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const std::size_t n = c < 0x80 ? 1 : sequence_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string printable_utf8(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += text[i++];
    } else if (const std::size_t n = c >= 0x80 ? sequence_length(text, i) : 0) {
      // C1 controls (U+0080 to U+009F, encoded C2 80 to C2 9F) are escaped like C0 ones: some
      // terminals take U+009B for CSI, the start of an escape sequence.
      if (c == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0) {
        append_escaped(out, c);
        append_escaped(out, static_cast<unsigned char>(text[i + 1]));
      } else {
        out.append(text.substr(i, n));
      }
      i += n;
    } else {
      append_escaped(out, c);
      ++i;
    }
  }
  return out;
}

}  // namespace infer
