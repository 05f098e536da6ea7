#include "manifest/library_files.h"

#include <elf.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>

#include "platform/file_kind.h"

namespace infer::manifest {
namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

const std::string& ldconfig_listing() {
  static const std::string listing = [] {
    std::string out;
    for (const char* exe : {"/sbin/ldconfig", "/usr/sbin/ldconfig"}) {
      if (access(exe, X_OK) != 0) continue;
      const std::string command = std::string(exe) + " -p 2>/dev/null";
      std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
      if (!pipe) break;
      std::array<char, 4096> buf{};
      std::size_t n = 0;
      while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
      break;
    }
    return out;
  }();
  return listing;
}

void add_glob(const std::string& pattern, const std::string& origin, std::vector<SearchFolder>& out) {
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.push_back({g.gl_pathv[i], origin, false});
  }
  globfree(&g);
}

// The wheel folders (nvidia/<package>/lib) of every Python under `prefix`.
void add_site_packages(const std::string& prefix, const std::string& origin, std::vector<SearchFolder>& out) {
  for (const char* kind : {"site-packages", "dist-packages"}) {
    add_glob(prefix + "/lib/python3*/" + kind + "/nvidia/*/lib", origin, out);
  }
}

std::string read_head(int fd, std::size_t n, off_t at = 0) {
  std::string buf(n, '\0');
  const ssize_t got = pread(fd, buf.data(), n, at);
  buf.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return buf;
}

// What the ELF headers of a 64-bit file say about it; "" when it is a complete shared object here.
std::string describe_elf(int fd, std::uint64_t size) {
  Elf64_Ehdr eh{};
  const std::string head = read_head(fd, sizeof eh);
  if (head.size() < sizeof eh) {
    return "truncated at " + std::to_string(size) + " bytes, inside its " + std::to_string(sizeof eh) +
           "-byte ELF header";
  }
  std::memcpy(&eh, head.data(), sizeof eh);
  if (eh.e_ident[EI_CLASS] != (sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32)) {
    return std::string("an ELF file of the other word size (") + (eh.e_ident[EI_CLASS] == ELFCLASS32 ? "32" : "64") +
           "-bit)";
  }
#if defined(__x86_64__)
  constexpr int kMachine = EM_X86_64;
#elif defined(__aarch64__)
  constexpr int kMachine = EM_AARCH64;
#else
  constexpr int kMachine = -1;
#endif
  if (kMachine >= 0 && eh.e_machine != kMachine) {
    return "an ELF file for another machine (e_machine " + std::to_string(eh.e_machine) + ")";
  }
  if (eh.e_type != ET_DYN) return "an ELF file that is not a shared library (e_type " + std::to_string(eh.e_type) + ")";
  // The bytes the headers say the file has: every loadable segment and the section headers.
  std::uint64_t needed = eh.e_shoff ? eh.e_shoff + std::uint64_t{eh.e_shnum} * eh.e_shentsize : 0;
  const std::uint64_t ph_end = eh.e_phoff + std::uint64_t{eh.e_phnum} * eh.e_phentsize;
  if (eh.e_phentsize != sizeof(Elf64_Phdr)) {
    return "a damaged ELF file (program header entries of " + std::to_string(eh.e_phentsize) + " bytes)";
  }
  if (ph_end > size) {
    return "truncated at " + std::to_string(size) + " of at least " + std::to_string(ph_end) +
           " bytes (where its program headers end)";
  }
  const std::string ph =
      read_head(fd, static_cast<std::size_t>(eh.e_phnum) * sizeof(Elf64_Phdr), static_cast<off_t>(eh.e_phoff));
  for (std::size_t i = 0; i + sizeof(Elf64_Phdr) <= ph.size(); i += sizeof(Elf64_Phdr)) {
    Elf64_Phdr p{};
    std::memcpy(&p, ph.data() + i, sizeof p);
    if (p.p_type == PT_LOAD || p.p_type == PT_DYNAMIC)
      needed = std::max<std::uint64_t>(needed, p.p_offset + p.p_filesz);
  }
  if (size < needed) {
    return "truncated at " + std::to_string(size) + " of " + std::to_string(needed) +
           " bytes (where its loadable segments and section headers end)";
  }
  return "";
}

}  // namespace

std::vector<SearchFolder> loader_folders(const std::string& soname) {
  std::vector<SearchFolder> out;
  const std::string llp = env("LD_LIBRARY_PATH");
  if (!llp.empty()) {
    int index = 0;
    for (std::size_t start = 0; start <= llp.size();) {
      std::size_t colon = llp.find(':', start);
      if (colon == std::string::npos) colon = llp.size();
      const std::string d = llp.substr(start, colon - start);
      ++index;
      if (d.empty()) {
        std::error_code ec;
        out.push_back({fs::current_path(ec).string(),
                       "LD_LIBRARY_PATH entry " + std::to_string(index) + " (empty: the current folder)", true});
      } else {
        out.push_back({d, "LD_LIBRARY_PATH entry " + std::to_string(index), true});
      }
      start = colon + 1;
    }
  }
  // ldconfig -p lines: "\tlibcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.9"
  const std::string& listing = ldconfig_listing();
  const std::string key = "\t" + soname + " (";
  for (std::size_t pos = listing.find(key); pos != std::string::npos; pos = listing.find(key, pos + 1)) {
    const std::size_t arrow = listing.find("=> ", pos);
    const std::size_t eol = listing.find('\n', pos);
    if (arrow == std::string::npos || (eol != std::string::npos && arrow > eol)) continue;
    const std::string file = listing.substr(arrow + 3, eol == std::string::npos ? std::string::npos : eol - arrow - 3);
    out.push_back({fs::path(file).parent_path().string(), "ldconfig cache", true});
  }
  return out;
}

std::vector<SearchFolder> python_folders() {
  std::vector<SearchFolder> out;
  const std::string home = env("HOME");
  if (const std::string conda = env("CONDA_PREFIX"); !conda.empty()) {
    out.push_back({conda + "/lib", "conda env " + conda, false});
    add_site_packages(conda, "conda env " + conda, out);
  }
  for (const std::string& root :
       {home + "/miniconda3", home + "/anaconda3", home + "/miniforge3", std::string("/opt/conda")}) {
    if (home.empty() && root.front() != '/') continue;
    add_glob(root + "/lib", "conda " + root, out);
    add_site_packages(root, "conda " + root, out);
    add_glob(root + "/envs/*/lib", "conda env under " + root, out);
    add_glob(root + "/envs/*/lib/python3*/site-packages/nvidia/*/lib", "conda env under " + root, out);
  }
  if (const std::string venv = env("VIRTUAL_ENV"); !venv.empty()) add_site_packages(venv, "virtualenv " + venv, out);
  const std::string pyenv = !env("PYENV_ROOT").empty() ? env("PYENV_ROOT") : home.empty() ? "" : home + "/.pyenv";
  if (!pyenv.empty()) {
    add_glob(pyenv + "/versions/*/lib/python3*/site-packages/nvidia/*/lib", "pyenv " + pyenv, out);
    add_glob(pyenv + "/versions/*/envs/*/lib/python3*/site-packages/nvidia/*/lib", "pyenv " + pyenv, out);
  }
  if (!home.empty()) add_glob(home + "/.local/lib/python3*/site-packages/nvidia/*/lib", "pip --user (~/.local)", out);
  add_glob("/usr/lib/python3/dist-packages/nvidia/*/lib", "system Python", out);
  add_site_packages("/usr", "system Python", out);
  add_site_packages("/usr/local", "system Python (/usr/local)", out);
  return out;
}

std::vector<FoundFile> find_library_files(const std::string& soname) {
  std::vector<SearchFolder> folders = loader_folders(soname);
  for (SearchFolder& f : python_folders()) folders.push_back(std::move(f));
  std::vector<FoundFile> found;
  std::set<fs::path> seen;
  for (const SearchFolder& folder : folders) {
    std::error_code ec;
    const fs::path file = fs::path(folder.path) / soname;
    if (!fs::exists(file, ec)) continue;
    const fs::path canon = fs::canonical(file, ec);
    if (ec || !seen.insert(canon).second) continue;
    found.push_back({canon.string(), folder});
  }
  return found;
}

std::string describe_non_library(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return std::string("unreadable: ") + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return file_kind(st.st_mode);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::string("unreadable: ") + std::strerror(errno);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  std::string what;
  const std::string head = read_head(fd, 64);
  if (size == 0) {
    what = "empty file";
  } else if (head.rfind("version https://git-lfs", 0) == 0) {
    what = "a git-lfs pointer (" + std::to_string(size) + " bytes), not the library: fetch it with git lfs pull";
  } else if (head.size() >= 4 && head.compare(0, 4,
                                              "\x7f"
                                              "ELF") == 0) {
    what = describe_elf(fd, size);
  } else if (head.rfind("/* GNU ld script", 0) == 0 || head.rfind("INPUT(", 0) == 0 || head.rfind("GROUP", 0) == 0) {
    what = "a linker script (" + std::to_string(size) + " bytes), not a library";
  } else {
    bool text = true;
    for (const char c : head)
      text = text && (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\r' || c == '\t');
    what = (text ? "a text file (" : "not an ELF file (") + std::to_string(size) + " bytes)";
  }
  close(fd);
  return what;
}

std::string absolute_normal(const std::string& path) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  return ec ? path : absolute.lexically_normal().string();
}

std::string file_in_dlerror(const std::string& error) {
  const std::size_t colon = error.find(": ");
  if (colon == std::string::npos) return "";
  const std::string file = error.substr(0, colon);
  if (file.find('/') == std::string::npos) return "";  // a soname: nothing was found
  return absolute_normal(file);                        // "./libcudnn.so.9" from an empty LD_LIBRARY_PATH entry
}

}  // namespace infer::manifest
