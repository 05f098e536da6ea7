// Where shared libraries may come from on this machine, and what a file that should be one really
// is. File-system reads only: nothing here loads a library, so it is safe in the checking process.
#pragma once

#include <string>
#include <vector>

namespace infer::manifest {

// A folder a library may be loaded from, and why.
struct SearchFolder {
  std::string path;             // as written; "" never appears (an empty LD_LIBRARY_PATH entry is the current folder)
  std::string origin;           // "LD_LIBRARY_PATH entry 2", "LD_LIBRARY_PATH entry 1 (empty: the current folder)",
                                // "ldconfig cache", "conda env", "virtualenv", "pyenv", "pip --user", "system Python"
  bool on_loader_path = false;  // dlopen(soname) may take a file from here
};

// The folders the dynamic loader searches for dlopen(soname) from the executable, in its order:
// LD_LIBRARY_PATH entries (an empty entry is the current folder, named here), then the folders of
// the ldconfig cache entries for that soname.
std::vector<SearchFolder> loader_folders(const std::string& soname);

// Folders where Python environments keep NVIDIA's wheel libraries (nvidia/*/lib): $CONDA_PREFIX and
// conda installs under $HOME, $VIRTUAL_ENV, pyenv versions, ~/.local, the system Python. The loader
// does not search them unless they are on LD_LIBRARY_PATH.
std::vector<SearchFolder> python_folders();

// Every file named `soname` in those folders, canonical, without duplicates, in search order.
struct FoundFile {
  std::string path;  // canonical
  SearchFolder folder;
};
std::vector<FoundFile> find_library_files(const std::string& soname);

// "" when `path` is a regular file holding a complete ELF shared object for this machine; otherwise
// what it is: "empty file", "a git-lfs pointer, not the library", "a text file", "a FIFO",
// "an ELF file for another machine (e_machine 40)", "truncated at 4096 of 212696 bytes (where its
// loadable segments and section headers end)", ... Reads at most the headers; never blocks on a special file.
std::string describe_non_library(const std::string& path);

// `path` made absolute against the current folder and normalised ("./libcudnn.so.9" ->
// "/work/libcudnn.so.9"); `path` itself when the current folder cannot be read.
std::string absolute_normal(const std::string& path);

// The file a dlopen() error names ("/x/libcudnn.so.9: file too short" -> "/x/libcudnn.so.9"), or "".
std::string file_in_dlerror(const std::string& error);

}  // namespace infer::manifest
