// Writes a small PE32+ DLL image for tests of manifest/windows/pe_file.h, on any system: the headers, one
// section holding an import table, a delay-load table and a VERSIONINFO resource, laid out as
// Microsoft's "PE Format" specification describes. It is never loaded; on Windows (under wine)
// tests/windows/ checks that pe_file reads mingw's real DLLs the same way.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace infer::test {

struct PeSpec {
  std::vector<std::string> imports;
  std::vector<std::string> delay_imports;
  bool with_version = true;
  std::uint16_t machine = 0x8664;  // x64; 0x14c for an x86 DLL (the headers stay PE32+: only the field is read)
  std::uint16_t version[4] = {9, 19, 0, 56};
  std::map<std::string, std::string> strings;  // UTF-8 keys and values; ASCII keys
};

struct PeImage {
  std::vector<unsigned char> bytes;
  std::size_t used = 0;  // the end of the last structure in the file; zero padding follows
};

class PeBuilder {
 public:
  static PeImage build(const PeSpec& spec) {
    PeBuilder b;
    PeImage out;
    out.bytes = b.image(spec);
    out.used = kSectionFile + b.used_;
    return out;
  }

 private:
  static constexpr std::uint32_t kSectionRva = 0x1000, kSectionFile = 0x200;
  std::vector<unsigned char> sec_;  // the section's bytes; RVA = kSectionRva + offset
  std::size_t used_ = 0;            // sec_'s size before the padding

  static void put16(std::vector<unsigned char>& v, std::size_t at, std::uint32_t x) {
    v[at] = static_cast<unsigned char>(x), v[at + 1] = static_cast<unsigned char>(x >> 8);
  }
  static void put32(std::vector<unsigned char>& v, std::size_t at, std::uint32_t x) {
    put16(v, at, x & 0xffff), put16(v, at + 2, x >> 16);
  }
  // Appends bytes 4-aligned; returns their RVA.
  std::uint32_t add(const std::vector<unsigned char>& bytes) {
    while (sec_.size() % 4 != 0) sec_.push_back(0);
    const auto rva = static_cast<std::uint32_t>(kSectionRva + sec_.size());
    sec_.insert(sec_.end(), bytes.begin(), bytes.end());
    return rva;
  }
  std::uint32_t add_name(const std::string& name) {
    std::vector<unsigned char> b(name.begin(), name.end());
    b.push_back(0);
    return add(b);
  }

  static std::vector<std::uint16_t> utf16(const std::string& s) {
    std::vector<std::uint16_t> out;
    for (std::size_t i = 0; i < s.size();) {
      const auto c = static_cast<unsigned char>(s[i]);
      std::uint32_t cp = c;
      int extra = 0;
      if (c >= 0xf0)
        cp = c & 0x07, extra = 3;
      else if (c >= 0xe0)
        cp = c & 0x0f, extra = 2;
      else if (c >= 0xc0)
        cp = c & 0x1f, extra = 1;
      for (int k = 1; k <= extra; ++k) cp = cp << 6 | (static_cast<unsigned char>(s[i + k]) & 0x3f);
      i += 1 + extra;
      if (cp >= 0x10000) {
        out.push_back(static_cast<std::uint16_t>(0xd800 + ((cp - 0x10000) >> 10)));
        out.push_back(static_cast<std::uint16_t>(0xdc00 + ((cp - 0x10000) & 0x3ff)));
      } else {
        out.push_back(static_cast<std::uint16_t>(cp));
      }
    }
    return out;
  }
  // A VERSIONINFO node: wLength, wValueLength, wType, key, padding, value, padding, children.
  static std::vector<unsigned char> node(const std::string& key, const std::vector<unsigned char>& value,
                                         std::uint16_t value_length, std::uint16_t type,
                                         const std::vector<std::vector<unsigned char>>& children) {
    std::vector<unsigned char> b(6, 0);
    for (std::uint16_t u : utf16(key))
      b.push_back(static_cast<unsigned char>(u)), b.push_back(static_cast<unsigned char>(u >> 8));
    b.push_back(0), b.push_back(0);
    while (b.size() % 4 != 0) b.push_back(0);
    b.insert(b.end(), value.begin(), value.end());
    for (const auto& c : children) {
      while (b.size() % 4 != 0) b.push_back(0);
      b.insert(b.end(), c.begin(), c.end());
    }
    put16(b, 0, static_cast<std::uint32_t>(b.size()));
    put16(b, 2, value_length);
    put16(b, 4, type);
    return b;
  }
  static std::vector<unsigned char> version_info(const PeSpec& spec) {
    std::vector<unsigned char> fixed(52, 0);
    put32(fixed, 0, 0xfeef04bd);
    put32(fixed, 4, 0x00010000);
    const std::uint32_t ms = std::uint32_t{spec.version[0]} << 16 | spec.version[1];
    const std::uint32_t ls = std::uint32_t{spec.version[2]} << 16 | spec.version[3];
    put32(fixed, 8, ms), put32(fixed, 12, ls), put32(fixed, 16, ms), put32(fixed, 20, ls);
    std::vector<std::vector<unsigned char>> strings;
    for (const auto& [key, text] : spec.strings) {
      std::vector<unsigned char> value;
      const std::vector<std::uint16_t> units = utf16(text);
      for (std::uint16_t u : units)
        value.push_back(static_cast<unsigned char>(u)), value.push_back(static_cast<unsigned char>(u >> 8));
      value.push_back(0), value.push_back(0);
      strings.push_back(node(key, value, static_cast<std::uint16_t>(units.size() + 1), 1, {}));
    }
    const auto table = node("040904b0", {}, 0, 1, strings);
    const auto string_info = node("StringFileInfo", {}, 0, 1, {table});
    return node("VS_VERSION_INFO", fixed, 52, 0, {string_info});
  }

  std::vector<unsigned char> image(const PeSpec& spec) {
    std::uint32_t import_rva = 0, import_size = 0, delay_rva = 0, delay_size = 0, rsrc_rva = 0, rsrc_size = 0;
    if (!spec.imports.empty()) {
      std::vector<std::uint32_t> names;
      for (const std::string& n : spec.imports) names.push_back(add_name(n));
      std::vector<unsigned char> table((names.size() + 1) * 20, 0);
      for (std::size_t i = 0; i < names.size(); ++i) put32(table, i * 20 + 12, names[i]);
      import_rva = add(table), import_size = static_cast<std::uint32_t>(table.size());
    }
    if (!spec.delay_imports.empty()) {
      std::vector<std::uint32_t> names;
      for (const std::string& n : spec.delay_imports) names.push_back(add_name(n));
      std::vector<unsigned char> table((names.size() + 1) * 32, 0);
      for (std::size_t i = 0; i < names.size(); ++i) put32(table, i * 32, 1), put32(table, i * 32 + 4, names[i]);
      delay_rva = add(table), delay_size = static_cast<std::uint32_t>(table.size());
    }
    if (spec.with_version) {
      // Root (type 16) -> name 1 -> language 0x409 -> data entry -> the VS_VERSIONINFO bytes.
      const std::vector<unsigned char> info = version_info(spec);
      std::vector<unsigned char> tree(3 * 24 + 16, 0);  // three directories with one entry, a data entry
      for (int level = 0; level < 3; ++level) {
        const std::size_t at = level * 24;
        put16(tree, at + 14, 1);  // one ID entry
        put32(tree, at + 16, level == 0 ? 16 : level == 1 ? 1 : 0x409);
        put32(tree, at + 20, level < 2 ? (0x80000000u | static_cast<std::uint32_t>((level + 1) * 24)) : 72);
      }
      rsrc_rva = add(tree);
      const std::uint32_t info_rva = add(info);
      // The data entry's offset is relative to the resource section; its data address is an RVA.
      put32(sec_, rsrc_rva - kSectionRva + 72, info_rva);
      put32(sec_, rsrc_rva - kSectionRva + 76, static_cast<std::uint32_t>(info.size()));
      rsrc_size = static_cast<std::uint32_t>(tree.size());
    }
    used_ = sec_.size();
    while (sec_.size() % 0x200 != 0) sec_.push_back(0);

    std::vector<unsigned char> file(kSectionFile, 0);
    file[0] = 'M', file[1] = 'Z';
    put32(file, 0x3c, 0x40);
    file[0x40] = 'P', file[0x41] = 'E';
    put16(file, 0x44, spec.machine);
    put16(file, 0x46, 1);       // one section
    put16(file, 0x54, 240);     // PE32+ optional header with 16 data directories
    put16(file, 0x56, 0x2022);  // executable image, large-address aware, DLL
    const std::size_t opt = 0x58;
    put16(file, opt, 0x20b);
    put32(file, opt + 24, 0x80000000u), put32(file, opt + 28, 0x1);  // image base 0x180000000
    put32(file, opt + 108, 16);
    const std::pair<std::uint32_t, std::uint32_t> dirs[16] = {{},
                                                              {import_rva, import_size},
                                                              {rsrc_rva, rsrc_size},
                                                              {},
                                                              {},
                                                              {},
                                                              {},
                                                              {},
                                                              {},
                                                              {},
                                                              {},
                                                              {},
                                                              {},
                                                              {delay_rva, delay_size},
                                                              {},
                                                              {}};
    for (int i = 0; i < 16; ++i)
      put32(file, opt + 112 + i * 8, dirs[i].first), put32(file, opt + 116 + i * 8, dirs[i].second);
    const std::size_t section = opt + 240;
    const char name[8] = {'.', 'd', 'a', 't', 'a', 0, 0, 0};
    for (int i = 0; i < 8; ++i) file[section + i] = static_cast<unsigned char>(name[i]);
    put32(file, section + 8, static_cast<std::uint32_t>(sec_.size()));
    put32(file, section + 12, kSectionRva);
    put32(file, section + 16, static_cast<std::uint32_t>(sec_.size()));
    put32(file, section + 20, kSectionFile);
    file.insert(file.end(), sec_.begin(), sec_.end());
    return file;
  }
};

}  // namespace infer::test
