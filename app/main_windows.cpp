// `infer.exe`, the Windows build (cross-compiled with mingw-w64, see README "Windows"): the
// environment check against VERSIONS.toml, and a manifest written for this machine.
// Classification is the Linux build's so far. Arguments arrive as UTF-16 (wmain) and are handled
// as UTF-8; output is UTF-8.
//
//   infer --check [--manifest FILE] [--json]   exit 0 every required item holds, 5 not, 3 the
//                                              manifest is invalid, 2 bad command line
//   infer --write-manifest FILE                exit 0, or 3 when FILE cannot be written
//   infer --version
#include <windows.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "exit_codes.h"
#include "manifest/check.h"
#include "manifest/manifest.h"
#include "manifest/probe.h"
#include "manifest/report.h"
#include "manifest/writer.h"
#include "model/errors.h"
#include "model/printable.h"

namespace {

namespace fs = std::filesystem;
using namespace infer;

constexpr char kUsage[] =
    "usage: infer --check [--manifest FILE] [--json]\n"
    "       infer --write-manifest FILE\n"
    "       infer --version\n"
    "The Windows build checks this machine's NVIDIA driver, CUDA runtime and cuDNN against a\n"
    "VERSIONS.toml (default: the one next to infer.exe), or writes one describing this machine.\n"
    "Exit status: 0 every required item holds (or the manifest was written), 5 one does not,\n"
    "3 the manifest is invalid or cannot be written, 2 bad command line.\n";

fs::path exe_dir() {
  std::wstring p(32768, L'\0');
  p.resize(GetModuleFileNameW(nullptr, p.data(), static_cast<DWORD>(p.size())));
  return fs::path(p).parent_path();
}

manifest::BuildInfo build_info() {
  manifest::BuildInfo b;
  b.compiler = INFER_COMPILER;
  return b;
}

int run(const std::vector<std::string>& args) {
  bool check = false, json = false, version = false;
  std::string manifest_arg, write_arg;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--check") {
      check = true;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--version") {
      version = true;
    } else if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return app::kExitOk;
    } else if (a == "--manifest" && i + 1 < args.size()) {
      manifest_arg = args[++i];
    } else if (a.rfind("--manifest=", 0) == 0) {
      manifest_arg = a.substr(11);
    } else if (a == "--write-manifest" && i + 1 < args.size()) {
      write_arg = args[++i];
    } else {
      std::cerr << "infer: unknown argument '" << printable_utf8(a) << "' (this Windows build has --check, "
                << "--write-manifest and --version; see infer --help)\n";
      return app::kExitUsage;
    }
  }
  if (version) {
    std::cout << "infer (Windows build: environment check only)\n  built with:   " << INFER_COMPILER
              << "\n  GPU backend:  not in this build\n";
    return app::kExitOk;
  }
  if (!write_arg.empty()) {
    const fs::path path = fs::u8path(write_arg);
    try {
      manifest::write_manifest(path, manifest::manifest_text(manifest::probe_machine(build_info()), path, {}));
    } catch (const InputError& e) {
      std::cerr << "infer: " << printable_utf8(e.what()) << '\n';
      return app::kExitInvalidInput;
    }
    std::cout << "infer: wrote " << printable_utf8(write_arg) << " (check it with: infer --check --manifest "
              << printable_utf8(write_arg) << ")\n";
    return app::kExitOk;
  }
  if (!check) {
    std::cerr << kUsage;
    return app::kExitUsage;
  }
  const fs::path path = manifest_arg.empty() ? exe_dir() / "VERSIONS.toml" : fs::u8path(manifest_arg);
  manifest::Manifest m;
  try {
    m = manifest::read_manifest(path);
  } catch (const InputError& e) {
    std::cerr << "infer: " << printable_utf8(e.what()) << '\n';
    return app::kExitInvalidInput;
  }
  manifest::BuildInfo build = build_info();
  build.cudnn_major = manifest::wanted_cudnn_major(m);
  const manifest::Report report = manifest::check(m, manifest::probe_machine(build));
  std::cout << (json ? manifest::to_json(report) : manifest::format_table(report));
  std::cout.flush();
  if (!std::cout) return app::kExitOutput;
  return report.ok ? app::kExitOk : app::kExitEnvironment;
}

}  // namespace

int wmain(int argc, wchar_t** argv) {
  // A probe child (this program started again to load an NVIDIA DLL) runs its job and ends here.
  manifest::run_probe_child_if_asked(argc, argv);
  SetConsoleOutputCP(CP_UTF8);
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.push_back(fs::path(argv[i]).u8string());
  try {
    return run(args);
  } catch (const std::exception& e) {
    std::cerr << "infer: internal error: " << printable_utf8(e.what()) << '\n';
    return app::kExitInternal;
  }
}
