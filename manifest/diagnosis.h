// Root causes found in a MachineProbe, before any manifest row is evaluated: what is wrong with
// the driver, with cuDNN's sub-libraries, and where a library that is not on the loader's path
// can be found. check.cpp shows each on the row it belongs to and marks the rows that follow from
// it. Internal to manifest/.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "manifest/probe.h"

namespace infer::manifest::detail {

struct Problem {
  std::string item;  // the row it belongs to: "driver.release", "driver.cuda", "cudnn.sublibraries"
  std::string found, source, fix;
  std::vector<std::string> notes;
};

// The driver's root cause, if any: a damaged libcuda or NVML, a stub libcuda, a kernel module and user-space
// libraries of different releases, a container without GPU access, NVML without libcuda, no driver.
// `floor` is "CUDA 13.0 needs driver >= 580.65.06" or "".
std::optional<Problem> driver_problem(const MachineProbe& m, const std::string& floor);

// A cuDNN front library (libcudnn.so.9) that is not the install's it seems to be, shadowing the right
// one: a front of another major under this major's name (cuDNN 8.2 as libcudnn.so.9), or a front alone
// in its folder, of another release than the install whose sub-libraries it then loads. The root
// cause, on cudnn.version: the sub-library rows follow from it. `install` is the fix when no other
// copy is on the path ("install cuDNN 9 for CUDA 13 (...)"). Linux; nullopt when the front is its
// install's own.
std::optional<Problem> front_problem(const MachineProbe& m, const std::string& install);

// cuDNN's sub-libraries: missing, damaged, loaded from another folder (named, with the search
// entry that supplied it), or of another release. Their consequences (a genuine library whose
// check fails because a stray one it needs) become notes. nullopt when all are fine.
std::optional<Problem> sublibrary_problem(const MachineProbe& m);

// When `lib` did not load: what else was found ("found libcudnn.so.8 8.9.6 at /x (LD_LIBRARY_PATH
// entry 1)", "libcudnn.so.9 9.19.0 is in /venv/.../nvidia/cudnn/lib (virtualenv /venv), which the
// loader does not search") and the fix it makes possible (an exact LD_LIBRARY_PATH or PATH line), else "".
struct Elsewhere {
  std::string found;
  std::string fix;
};
Elsewhere found_elsewhere(const MachineProbe& m, const LibraryProbe& lib, const std::vector<LibraryCopy>& other_majors,
                          const std::string& needed);

// How the loader reached the folder of `file`, when that is not its path alone: "the current folder
// (empty entry 2 of LD_LIBRARY_PATH)" for a file found through an empty LD_LIBRARY_PATH entry; ""
// otherwise, and on Windows.
std::string current_folder_entry(const MachineProbe& m, const std::string& file);

// The folder of `file` for a report: the folder, and "the current folder <folder> (empty entry 1 of
// LD_LIBRARY_PATH)" where the loader reached it through an empty entry.
std::string folder_words(const MachineProbe& m, const std::string& file);

// The search-path entry that supplied `file`, without its folder: "LD_LIBRARY_PATH entry 2", "the
// current folder (empty entry 1 of LD_LIBRARY_PATH)", "ldconfig cache"; Windows: "PATH entry 3 (C:\\x)";
// "" when none.
std::string entry_words(const MachineProbe& m, const std::string& file);

// The fix for a library file that crashed, hung or is not a library.
std::string broken_fix(const MachineProbe& m, const std::string& file, const std::string& what);

}  // namespace infer::manifest::detail
