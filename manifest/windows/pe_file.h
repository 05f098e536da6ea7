// Reading a Windows DLL or program (a PE file) without loading it: its machine, the DLLs it imports
// and delay-loads, and its VERSIONINFO resource. Portable code (it runs on Linux too): the Windows
// probe names the dependent DLL that LoadLibraryExW's error 126 does not name, and reads the
// version of a DLL that is not loaded, or cannot be.
//
// Layouts from Microsoft's "PE Format" specification (learn.microsoft.com/windows/win32/debug/
// pe-format: headers, section table, the .idata and delay-load import tables, the .rsrc tree) and
// the VERSIONINFO structures (learn.microsoft.com/windows/win32/menurc/vs-versioninfo,
// stringfileinfo, stringtable, string-str, and VS_FIXEDFILEINFO). Every offset, count and length in
// the file is checked against the file's size: a truncated or hostile file is refused with the
// reason, never read out of bounds.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace infer::manifest {

struct PeVersion {
  std::array<std::uint16_t, 4> file{};     // VS_FIXEDFILEINFO's file version: 9, 19, 0, 56
  std::array<std::uint16_t, 4> product{};  // and product version
  // The first string table's strings ("ProductName", "FileVersion", "FileDescription", ...), UTF-8.
  std::map<std::string, std::string> strings;
  std::string file_version() const;  // "9.19.0.56"
};

struct PeFile {
  std::uint16_t machine = 0;               // IMAGE_FILE_MACHINE_*: 0x8664 x64, 0x14c x86, 0xaa64 ARM64
  bool dll = false;                        // IMAGE_FILE_DLL
  std::vector<std::string> imports;        // DLL names as written ("KERNEL32.dll"), in table order
  std::vector<std::string> delay_imports;  // loaded on first use, not when this file is loaded
  std::optional<PeVersion> version;        // absent when the file has no VERSIONINFO resource
  std::string machine_name() const;        // "x64", "x86", "ARM64", "machine 0x1c4"
};

// Throws InputError(name, "not a Windows DLL or program: <why>") for a file that is not a PE file
// or whose headers, import table or version resource point outside it.
PeFile parse_pe(const unsigned char* data, std::size_t size, const std::string& name);
// The file through InputFile (regular files only), reading only the parts it needs: a cuDNN DLL
// is hundreds of MiB.
PeFile read_pe_file(const std::filesystem::path& path);

}  // namespace infer::manifest
