#include "manifest/windows/pe_file.h"

#include <algorithm>
#include <cstdio>

#include "infer/errors.h"
#include "platform/input_file.h"

namespace infer::manifest {
namespace {

// Why a file is not a PE file we can read; becomes an InputError naming the file.
struct NotPe {
  std::string why;
};

std::uint16_t le16(const unsigned char* p) { return static_cast<std::uint16_t>(p[0] | p[1] << 8); }
std::uint32_t le32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

// The file's bytes, read only where asked and only inside the file.
class Source {
 public:
  explicit Source(std::uint64_t size) : size_(size) {}
  virtual ~Source() = default;
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;

  std::uint64_t size() const { return size_; }
  std::vector<unsigned char> bytes(std::uint64_t offset, std::size_t count, const std::string& what) const {
    if (offset > size_ || count > size_ - offset) throw NotPe{what + " lies outside the file"};
    std::vector<unsigned char> out(count);
    if (count > 0) fetch(offset, out.data(), count);
    return out;
  }
  std::uint16_t u16(std::uint64_t offset, const std::string& what) const { return le16(bytes(offset, 2, what).data()); }
  std::uint32_t u32(std::uint64_t offset, const std::string& what) const { return le32(bytes(offset, 4, what).data()); }
  // A NUL-terminated ASCII name of at most `max` bytes.
  std::string name(std::uint64_t offset, std::size_t max, const std::string& what) const {
    const std::size_t count =
        static_cast<std::size_t>(std::min<std::uint64_t>(max + 1, size_ - std::min(offset, size_)));
    const std::vector<unsigned char> b = bytes(offset, count, what);
    const auto end = std::find(b.begin(), b.end(), 0);
    if (end == b.end()) throw NotPe{what + " is not a terminated name"};
    return std::string(b.begin(), end);
  }

 private:
  virtual void fetch(std::uint64_t offset, unsigned char* out, std::size_t count) const = 0;
  std::uint64_t size_;
};

class MemorySource : public Source {
 public:
  MemorySource(const unsigned char* data, std::size_t size) : Source(size), data_(data) {}

 private:
  void fetch(std::uint64_t offset, unsigned char* out, std::size_t count) const override {
    std::copy(data_ + offset, data_ + offset + count, out);
  }
  const unsigned char* data_;
};

class FileSource : public Source {
 public:
  explicit FileSource(const InputFile& file) : Source(file.size()), file_(file) {}

 private:
  void fetch(std::uint64_t offset, unsigned char* out, std::size_t count) const override {
    file_.read_at(offset, out, count);
  }
  const InputFile& file_;
};

struct Section {
  std::uint32_t address, raw_size, raw_offset;
};

// The headers, and RVAs (addresses once loaded) turned into file offsets.
class Image {
 public:
  explicit Image(const Source& src) {
    if (src.size() < 64) throw NotPe{"shorter than a DOS header (64 bytes)"};
    const std::vector<unsigned char> dos = src.bytes(0, 64, "the DOS header");
    if (dos[0] != 'M' || dos[1] != 'Z') throw NotPe{"no MZ signature"};
    const std::uint32_t pe = le32(&dos[0x3c]);
    const std::vector<unsigned char> coff = src.bytes(pe, 24, "the PE header");
    if (coff[0] != 'P' || coff[1] != 'E' || coff[2] != 0 || coff[3] != 0) throw NotPe{"no PE signature"};
    machine_ = le16(&coff[4]);
    const std::uint16_t sections = le16(&coff[6]);
    const std::uint16_t optional_size = le16(&coff[20]);
    characteristics_ = le16(&coff[22]);
    const std::uint64_t optional = std::uint64_t{pe} + 24;
    const std::uint16_t magic = src.u16(optional, "the optional header");
    std::uint32_t count_at = 0, dirs_at = 0;
    if (magic == 0x20b) {  // PE32+
      count_at = 108, dirs_at = 112;
      const std::vector<unsigned char> base = src.bytes(optional + 24, 8, "the image base");
      image_base_ = le32(&base[0]) | std::uint64_t{le32(&base[4])} << 32;
    } else if (magic == 0x10b) {  // PE32
      count_at = 92, dirs_at = 96;
      image_base_ = src.u32(optional + 28, "the image base");
    } else {
      throw NotPe{"unknown optional header (magic 0x" + hex(magic) + ")"};
    }
    if (optional_size < dirs_at) throw NotPe{"the optional header is too short for its data directories"};
    const std::uint32_t declared = src.u32(optional + count_at, "the number of data directories");
    const std::uint32_t room = (optional_size - dirs_at) / 8;
    const std::uint32_t count = std::min({declared, room, 16u});
    const std::vector<unsigned char> dirs =
        src.bytes(optional + dirs_at, std::size_t{count} * 8, "the data directories");
    for (std::uint32_t i = 0; i < count; ++i) directories_[i] = {le32(&dirs[i * 8]), le32(&dirs[i * 8 + 4])};
    const std::vector<unsigned char> table =
        src.bytes(optional + optional_size, std::size_t{sections} * 40, "the section table");
    for (std::size_t i = 0; i < sections; ++i) {
      const unsigned char* s = &table[i * 40];
      sections_.push_back({le32(s + 12), le32(s + 16), le32(s + 20)});
    }
  }

  std::uint16_t machine() const { return machine_; }
  bool dll() const { return (characteristics_ & 0x2000) != 0; }
  std::uint64_t image_base() const { return image_base_; }
  // (RVA, size) of data directory `index`; {0, 0} when absent.
  std::pair<std::uint32_t, std::uint32_t> directory(int index) const { return directories_[index]; }

  // The file offset of `rva`: inside a section's bytes in the file (the rest of a section is zeros
  // that the file does not hold).
  std::uint64_t offset(std::uint64_t rva, const std::string& what) const {
    for (const Section& s : sections_) {
      if (rva >= s.address && rva - s.address < s.raw_size) return std::uint64_t{s.raw_offset} + (rva - s.address);
    }
    throw NotPe{what + " (address 0x" + hex(rva) + ") is in no section of the file"};
  }

  static std::string hex(std::uint64_t v) {
    char text[24];
    std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(v));
    return text;
  }

 private:
  std::uint16_t machine_ = 0, characteristics_ = 0;
  std::uint64_t image_base_ = 0;
  std::array<std::pair<std::uint32_t, std::uint32_t>, 16> directories_{};
  std::vector<Section> sections_;
};

constexpr std::size_t kMaxNameBytes = 260;     // MAX_PATH: a DLL name in an import table
constexpr std::size_t kMaxDescriptors = 4096;  // far above any real DLL's (cuDNN's: under 20)

std::vector<std::string> imports(const Source& src, const Image& image) {
  std::vector<std::string> out;
  const std::uint32_t rva = image.directory(1).first;
  if (rva == 0) return out;
  for (std::size_t i = 0;; ++i) {
    if (i == kMaxDescriptors) throw NotPe{"the import table does not end"};
    const std::vector<unsigned char> d =
        src.bytes(image.offset(std::uint64_t{rva} + i * 20, "the import table"), 20, "the import table");
    if (std::all_of(d.begin(), d.end(), [](unsigned char c) { return c == 0; })) break;
    out.push_back(
        src.name(image.offset(le32(&d[12]), "an imported DLL's name"), kMaxNameBytes, "an imported DLL's name"));
  }
  return out;
}

std::vector<std::string> delay_imports(const Source& src, const Image& image) {
  std::vector<std::string> out;
  const std::uint32_t rva = image.directory(13).first;
  if (rva == 0) return out;
  for (std::size_t i = 0;; ++i) {
    if (i == kMaxDescriptors) throw NotPe{"the delay-load import table does not end"};
    const std::vector<unsigned char> d =
        src.bytes(image.offset(std::uint64_t{rva} + i * 32, "the delay-load table"), 32, "the delay-load table");
    const std::uint32_t attributes = le32(&d[0]), name = le32(&d[4]);
    if (name == 0) break;
    // Attribute bit 0 clear: the old form, whose fields are addresses (VAs), not RVAs.
    const std::uint64_t name_rva =
        (attributes & 1) != 0 ? name : name - std::min<std::uint64_t>(name, image.image_base());
    out.push_back(
        src.name(image.offset(name_rva, "a delay-loaded DLL's name"), kMaxNameBytes, "a delay-loaded DLL's name"));
  }
  return out;
}

// UTF-16LE code units to UTF-8; an unpaired surrogate becomes U+FFFD.
std::string utf8(const std::vector<std::uint16_t>& units) {
  std::string out;
  auto put = [&](std::uint32_t c) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xc0 | c >> 6), out += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xe0 | c >> 12), out += static_cast<char>(0x80 | (c >> 6 & 0x3f));
      out += static_cast<char>(0x80 | (c & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | c >> 18), out += static_cast<char>(0x80 | (c >> 12 & 0x3f));
      out += static_cast<char>(0x80 | (c >> 6 & 0x3f)), out += static_cast<char>(0x80 | (c & 0x3f));
    }
  };
  for (std::size_t i = 0; i < units.size(); ++i) {
    const std::uint32_t u = units[i];
    if (u >= 0xd800 && u < 0xdc00 && i + 1 < units.size() && units[i + 1] >= 0xdc00 && units[i + 1] < 0xe000) {
      put(0x10000 + ((u - 0xd800) << 10) + (units[i + 1] - 0xdc00));
      ++i;
    } else if (u >= 0xd800 && u < 0xe000) {
      put(0xfffd);
    } else {
      put(u);
    }
  }
  return out;
}

// One node of the VERSIONINFO tree: wLength, wValueLength, wType, a UTF-16 key, padding to 32
// bits, the value, padding, then the children, all within wLength bytes.
struct Block {
  std::string key;
  std::size_t value_at = 0, value_end = 0;   // the value's bytes
  std::size_t children_at = 0, end = 0;      // the children's bytes
  std::uint16_t value_length = 0, type = 0;  // wValueLength (WCHARs when type is 1), wType
};

std::size_t align4(std::size_t at) { return (at + 3) & ~std::size_t{3}; }

// The block at `at`, which must end by `limit`; nullopt at the end of a list (a zero length).
std::optional<Block> block(const std::vector<unsigned char>& v, std::size_t at, std::size_t limit) {
  if (at + 6 > limit) return std::nullopt;
  const std::size_t length = le16(&v[at]);
  if (length == 0) return std::nullopt;
  if (length < 6 || length > limit - at) throw NotPe{"a VERSIONINFO block's length runs past its parent"};
  Block b;
  b.end = at + length;
  b.value_length = le16(&v[at + 2]);
  b.type = le16(&v[at + 4]);
  std::vector<std::uint16_t> key;
  std::size_t p = at + 6;
  for (;; p += 2) {
    if (p + 2 > b.end) throw NotPe{"a VERSIONINFO key is not terminated"};
    const std::uint16_t u = le16(&v[p]);
    if (u == 0) break;
    key.push_back(u);
  }
  b.key = utf8(key);
  b.value_at = std::min(align4(p + 2), b.end);
  const std::size_t value_bytes = b.type == 1 ? std::size_t{b.value_length} * 2 : b.value_length;
  b.value_end = std::min(b.value_at + value_bytes, b.end);
  b.children_at = std::min(align4(b.value_end), b.end);
  return b;
}

// The children of `parent`, in order.
std::vector<Block> children(const std::vector<unsigned char>& v, const Block& parent) {
  std::vector<Block> out;
  for (std::size_t at = parent.children_at; at < parent.end;) {
    std::optional<Block> b = block(v, at, parent.end);
    if (!b) break;
    at = align4(b->end);
    out.push_back(std::move(*b));
  }
  return out;
}

PeVersion parse_version(const std::vector<unsigned char>& v) {
  const std::optional<Block> root = block(v, 0, v.size());
  if (!root || root->key != "VS_VERSION_INFO") throw NotPe{"the version resource is not a VS_VERSION_INFO"};
  if (root->value_end - root->value_at < 52 || le32(&v[root->value_at]) != 0xfeef04bdu) {
    throw NotPe{"the version resource has no VS_FIXEDFILEINFO"};
  }
  PeVersion out;
  const unsigned char* fixed = &v[root->value_at];
  const std::uint32_t file_ms = le32(fixed + 8), file_ls = le32(fixed + 12);
  const std::uint32_t product_ms = le32(fixed + 16), product_ls = le32(fixed + 20);
  out.file = {static_cast<std::uint16_t>(file_ms >> 16), static_cast<std::uint16_t>(file_ms),
              static_cast<std::uint16_t>(file_ls >> 16), static_cast<std::uint16_t>(file_ls)};
  out.product = {static_cast<std::uint16_t>(product_ms >> 16), static_cast<std::uint16_t>(product_ms),
                 static_cast<std::uint16_t>(product_ls >> 16), static_cast<std::uint16_t>(product_ls)};
  for (const Block& info : children(v, *root)) {
    if (info.key != "StringFileInfo") continue;
    const std::vector<Block> tables = children(v, info);
    if (tables.empty()) break;
    for (const Block& s : children(v, tables.front())) {
      std::vector<std::uint16_t> text;
      for (std::size_t p = s.value_at; p + 2 <= s.value_end; p += 2) {
        const std::uint16_t u = le16(&v[p]);
        if (u == 0) break;
        text.push_back(u);
      }
      out.strings.emplace(s.key, utf8(text));
    }
    break;
  }
  return out;
}

constexpr std::uint32_t kVersionType = 16;           // RT_VERSION
constexpr std::uint32_t kMaxVersionBytes = 1 << 20;  // real ones are under 2 KiB

std::optional<PeVersion> version(const Source& src, const Image& image) {
  const std::uint32_t rva = image.directory(2).first;
  if (rva == 0) return std::nullopt;
  const std::uint64_t base = image.offset(rva, "the resource table");
  // A resource directory: 16 bytes, then its named and its ID entries, 8 bytes each.
  auto entries = [&](std::uint64_t dir) {
    const std::vector<unsigned char> head = src.bytes(dir, 16, "a resource directory");
    const std::size_t count = std::size_t{le16(&head[12])} + le16(&head[14]);
    const std::vector<unsigned char> e = src.bytes(dir + 16, count * 8, "a resource directory's entries");
    std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
    for (std::size_t i = 0; i < count; ++i) out.emplace_back(le32(&e[i * 8]), le32(&e[i * 8 + 4]));
    return out;
  };
  const auto subdirectory = [&](std::uint32_t target) {
    if ((target & 0x80000000u) == 0) throw NotPe{"a resource directory entry is not a directory"};
    return base + (target & 0x7fffffffu);
  };
  // Type RT_VERSION, then its first name, then its first language: the data entry.
  std::optional<std::uint32_t> by_type;
  for (const auto& [id, target] : entries(base)) {
    if ((id & 0x80000000u) == 0 && id == kVersionType) by_type = target;
  }
  if (!by_type) return std::nullopt;
  const auto names = entries(subdirectory(*by_type));
  if (names.empty()) return std::nullopt;
  const auto languages = entries(subdirectory(names.front().second));
  if (languages.empty()) return std::nullopt;
  const std::uint32_t leaf = languages.front().second;
  if ((leaf & 0x80000000u) != 0) throw NotPe{"the version resource's data entry is a directory"};
  const std::vector<unsigned char> data = src.bytes(base + leaf, 16, "the version resource's data entry");
  const std::uint32_t data_rva = le32(&data[0]), data_size = le32(&data[4]);
  if (data_size > kMaxVersionBytes) throw NotPe{"the version resource is over 1 MiB"};
  return parse_version(src.bytes(image.offset(data_rva, "the version resource"), data_size, "the version resource"));
}

PeFile parse(const Source& src, const std::string& name) {
  try {
    const Image image(src);
    PeFile out;
    out.machine = image.machine();
    out.dll = image.dll();
    out.imports = imports(src, image);
    out.delay_imports = delay_imports(src, image);
    out.version = version(src, image);
    return out;
  } catch (const NotPe& e) {
    throw InputError(name, "not a Windows DLL or program: " + e.why);
  }
}

}  // namespace

std::string PeVersion::file_version() const {
  return std::to_string(file[0]) + "." + std::to_string(file[1]) + "." + std::to_string(file[2]) + "." +
         std::to_string(file[3]);
}

std::string PeFile::machine_name() const {
  switch (machine) {
    case 0x8664: return "x64";
    case 0x14c: return "x86";
    case 0xaa64: return "ARM64";
    case 0x1c4: return "ARM";
    default: return "machine 0x" + Image::hex(machine);
  }
}

PeFile parse_pe(const unsigned char* data, std::size_t size, const std::string& name) {
  return parse(MemorySource(data, size), name);
}

PeFile read_pe_file(const std::filesystem::path& path) {
  const InputFile file(path);
  return parse(FileSource(file), file.name());
}

}  // namespace infer::manifest
