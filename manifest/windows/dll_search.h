// Where Windows' loader finds a DLL and its dependents, predicted from the files, without loading
// anything: which copy of cudnn64_9.dll a program gets (an older one earlier on PATH, a conda
// copy), and, when loading fails with error 126, which dependent DLL is missing or unusable
// (cudnn_graph64_9.dll, say) and through which chain of imports. Portable: the folders are given,
// so Linux tests run it on folder trees of fake DLLs (tests/support/pe_builder.h), and the Windows tests
// compare it with LoadLibraryExW's own result (tests/windows/).
//
// The search orders are Microsoft's "Dynamic-link library search order" (learn.microsoft.com/
// windows/win32/dlls/dynamic-link-library-search-order), for desktop applications with safe DLL
// search mode on (the default), no manifest redirection and no KnownDLLs entry:
//   standard          the application's folder, System32, the 16-bit System folder, the Windows
//                     folder, the current folder, the PATH entries in order;
//   altered           LoadLibraryExW with LOAD_WITH_ALTERED_SEARCH_PATH and an absolute path: the
//                     same, with the loaded DLL's folder in place of the application's.
// A DLL loaded by a DLL (cudnn64_9.dll loading cudnn_ops64_9.dll) is searched in the process's
// order, not in the loading DLL's folder: why cuDNN's bin folder must be on PATH.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace infer::manifest {

struct DllFolder {
  std::filesystem::path path;
  std::string role;     // "the application's folder", "System32", "PATH entry 3", ...
  bool system = false;  // System32, System, the Windows folder: their DLLs' dependents are not followed
};

struct DllSearchOrder {
  std::vector<DllFolder> folders;

  // The standard order. `path_entries`: PATH split at ';', empty entries removed.
  static DllSearchOrder standard(const std::filesystem::path& application_dir, const std::filesystem::path& windows_dir,
                                 const std::filesystem::path& current_dir,
                                 const std::vector<std::filesystem::path>& path_entries);
  // The order LOAD_WITH_ALTERED_SEARCH_PATH gives the dependents of a DLL loaded by absolute path.
  static DllSearchOrder altered(const std::filesystem::path& dll_dir, const std::filesystem::path& windows_dir,
                                const std::filesystem::path& current_dir,
                                const std::vector<std::filesystem::path>& path_entries);
};

struct FoundDll {
  std::filesystem::path path;
  std::string role;     // the role of the folder it was found in
  bool system = false;  // that folder is one of Windows' own (DllFolder::system)
};

// The first folder holding `name` (compared without case, as Windows' file systems do).
// API sets (api-ms-win-*, ext-ms-*) are the loader's own, never files: nullopt.
std::optional<FoundDll> find_dll(const std::string& name, const DllSearchOrder& order);

struct LoadDiagnosis {
  bool loads = true;  // every dependent found, readable and of the right machine
  // From the DLL asked for to the first one that fails: "cudnn64_9.dll", "cudnn_graph64_9.dll".
  std::vector<std::string> chain;
  std::string missing;             // the DLL no folder holds; empty when another problem stopped it
  std::string problem;             // "<path>: is x86, not x64", "<path>: not a Windows DLL or program: ..."
  std::vector<FoundDll> resolved;  // every DLL found on the way, in the order they were found
  std::string describe() const;    // one line: "cudnn64_9.dll needs cudnn_graph64_9.dll, which no folder holds"
};

// Follows the import tables (not the delay-load ones: those load on first use) from `dll` (a name,
// searched in `order`, or a path) through every dependent that is not in a system folder.
// `machine`: what the process is (0x8664, x64).
LoadDiagnosis diagnose_load(const std::string& dll, const DllSearchOrder& order, std::uint16_t machine = 0x8664);

}  // namespace infer::manifest
