// infer.exe --check on Windows machines made of fake NVIDIA DLLs (fakes/, with version resources),
// run under wine: the install guide's failures (a missing cudnn_ops_infer64_8.dll, an older
// cudnn64_9.dll earlier on PATH, a sub-DLL from another folder, CUDA_PATH at a toolkit the driver
// does not support, cuDNN 8 where 9 is needed, a conda copy), a crashing DLL, and a healthy machine
// under a non-ASCII folder. Each test builds its folders, gives infer.exe its own PATH, CUDA_PATH
// and CONDA_PREFIX, and reads the --json report.
//
// The driver's fakes (nvcuda.dll, nvml.dll) are copied into System32 for the test and removed
// after: ctest runs these tests one at a time (RESOURCE_LOCK wine_system32).
#include <windows.h>
// After windows.h.
#include <tlhelp32.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;

const fs::path kFakes = fs::u8path(INFER_FAKE_SCENARIO_DIR);
const std::vector<std::string> kCudnn9Subs = {"cudnn_graph64_9.dll",
                                              "cudnn_ops64_9.dll",
                                              "cudnn_cnn64_9.dll",
                                              "cudnn_adv64_9.dll",
                                              "cudnn_heuristic64_9.dll",
                                              "cudnn_engines_precompiled64_9.dll",
                                              "cudnn_engines_runtime_compiled64_9.dll"};
const std::vector<std::string> kCudnn8Subs = {"cudnn_ops_infer64_8.dll", "cudnn_ops_train64_8.dll",
                                              "cudnn_cnn_infer64_8.dll", "cudnn_cnn_train64_8.dll",
                                              "cudnn_adv_infer64_8.dll", "cudnn_adv_train64_8.dll"};

fs::path system32() {
  wchar_t buf[MAX_PATH];
  const UINT n = GetSystemDirectoryW(buf, MAX_PATH);
  return fs::path(std::wstring(buf, n));
}

// A Windows manifest: what a deployment of the CUDA 13 / cuDNN 9 backend needs.
std::string manifest_text(const std::string& cudnn_version = ">=9.19, <10", const std::string& cuda_major = "13") {
  return "schema = 1\n"
         "[system]\narch = \"x86_64\"\n"
         "[driver]\nrelease = \">=580\"\ncuda = \">=13.0\"\nruntime_compatible = \"required\"\n"
         "[gpu]\ncount = \">=1\"\ncompute_capability = \">=7.5\"\n"
         "[cuda]\nruntime = \"13.*\"\nsingle_copy = \"advisory\"\n"
         "[cudnn]\nversion = \"" +
         cudnn_version + "\"\ncuda_major = \"" + cuda_major +
         "\"\nsublibraries = \"required\"\nsingle_copy = \"advisory\"\n";
}

struct Result {
  DWORD exit_code = 0;
  nlohmann::json report;
  std::string out;
  std::map<std::string, nlohmann::json> items;
  const nlohmann::json& item(const std::string& key) const {
    static const nlohmann::json none = nlohmann::json::object();
    const auto it = items.find(key);
    return it == items.end() ? none : it->second;
  }
  std::string status(const std::string& key) const { return item(key).value("status", "absent"); }
  std::string found(const std::string& key) const { return item(key).value("found", ""); }
  std::string fix(const std::string& key) const { return item(key).value("fix", ""); }
};

// Whether this process runs under wine (ntdll exports wine_get_version there).
bool under_wine() {
  const HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
  return ntdll && GetProcAddress(ntdll, "wine_get_version");
}

class Scenario : public ::testing::Test {
 protected:
  void SetUp() override {
    // Never on a real Windows: the fakes would replace the NVIDIA driver's DLLs in System32.
    if (!under_wine()) GTEST_SKIP() << "copies fake nvcuda.dll and nvml.dll into System32: only under wine";
    install_driver();
    fs::create_directories(dir_.path());
  }
  void TearDown() override {
    if (!under_wine()) return;
    std::error_code ec;
    fs::remove(system32() / "nvcuda.dll", ec);
    fs::remove(system32() / "nvml.dll", ec);
  }

  static void install_driver() {
    fs::copy_file(kFakes / "driver" / "nvcuda.dll", system32() / "nvcuda.dll", fs::copy_options::overwrite_existing);
    fs::copy_file(kFakes / "driver" / "nvml.dll", system32() / "nvml.dll", fs::copy_options::overwrite_existing);
  }

  // A folder of this test.
  fs::path folder(const std::string& utf8_name) {
    const fs::path p = (dir_.path() / fs::u8path(utf8_name)).make_preferred();
    fs::create_directories(p);
    return p;
  }
  // cuDNN `release` ("9.19.0", "9.1.0", "8.9.7") into `to`, without the sub-DLLs in `skip`.
  static void install_cudnn(const fs::path& to, const std::string& release, const std::vector<std::string>& skip = {}) {
    const fs::path from = kFakes / ("cudnn-" + release);
    const bool eight = release.rfind("8.", 0) == 0;
    const std::string front = eight ? "cudnn64_8.dll" : "cudnn64_9.dll";
    fs::copy_file(from / front, to / front, fs::copy_options::overwrite_existing);
    for (const std::string& sub : eight ? kCudnn8Subs : kCudnn9Subs) {
      if (std::find(skip.begin(), skip.end(), sub) == skip.end())
        fs::copy_file(from / "sub.dll", to / sub, fs::copy_options::overwrite_existing);
    }
  }
  static void install_cudart(const fs::path& to) {
    fs::copy_file(kFakes / "cudart-13.0.96" / "cudart64_13.dll", to / "cudart64_13.dll",
                  fs::copy_options::overwrite_existing);
  }

  // Runs infer.exe --check --json with PATH = `path` then System32 and the Windows folder, and
  // the other variables given ("" removes one). INFER_SCENARIO_SHOW=1 prints each report.
  Result check(const std::vector<fs::path>& path, std::map<std::wstring, std::wstring> vars = {},
               const std::string& manifest = manifest_text()) {
    // An empty manifest text: infer.exe's default, the VERSIONS.toml beside it.
    const fs::path manifest_file = dir_.path() / "VERSIONS.toml";
    if (!manifest.empty()) std::ofstream(manifest_file, std::ios::binary) << manifest;
    std::wstring arguments = L"--check --json";
    if (!manifest.empty()) arguments += L" --manifest \"" + manifest_file.wstring() + L"\"";
    Result r = run(path, std::move(vars), arguments);
    if (GetEnvironmentVariableW(L"INFER_SCENARIO_SHOW", nullptr, 0) > 0) std::cout << r.out << '\n';  // to read them
    r.report = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(r.report.is_discarded()) << r.out;
    if (r.report.is_object()) {
      for (const nlohmann::json& i : r.report["items"]) r.items[i.value("item", "")] = i;
    }
    return r;
  }

  // Runs infer.exe `arguments` in that environment; its stdout and stderr together in Result::out.
  Result run(const std::vector<fs::path>& path, std::map<std::wstring, std::wstring> vars,
             const std::wstring& arguments, const fs::path& exe = fs::u8path(INFER_EXE)) {
    std::wstring path_value;
    for (const fs::path& p : path) path_value += p.wstring() + L";";
    path_value += system32().wstring() + L";" + system32().parent_path().wstring();
    vars[L"PATH"] = path_value;
    for (const wchar_t* v : {L"CUDA_PATH", L"CONDA_PREFIX", L"VIRTUAL_ENV"}) vars.emplace(v, L"");
    // The environment block: this process's, with `vars` replaced.
    std::map<std::wstring, std::wstring> env;
    if (LPWCH block = GetEnvironmentStringsW()) {
      for (const wchar_t* p = block; *p; p += wcslen(p) + 1) {
        const std::wstring e(p);
        const std::size_t eq = e.find(L'=', 1);
        if (eq != std::wstring::npos) env[e.substr(0, eq)] = e.substr(eq + 1);
      }
      FreeEnvironmentStringsW(block);
    }
    for (auto it = env.begin(); it != env.end();) {  // names compare without case
      bool replaced = false;
      for (const auto& [k, v] : vars) replaced = replaced || _wcsicmp(k.c_str(), it->first.c_str()) == 0;
      it = replaced ? env.erase(it) : std::next(it);
    }
    for (const auto& [k, v] : vars) {
      if (!v.empty()) env[k] = v;
    }
    std::wstring block;
    for (const auto& [k, v] : env) block += k + L"=" + v + L'\0';
    block += L'\0';

    const fs::path out_file = dir_.path() / "out.txt";
    SECURITY_ATTRIBUTES sa{sizeof sa, nullptr, TRUE};
    HANDLE out = CreateFileW(out_file.c_str(), GENERIC_WRITE, FILE_SHARE_READ, &sa, CREATE_ALWAYS,
                             FILE_ATTRIBUTE_NORMAL, nullptr);
    EXPECT_NE(out, INVALID_HANDLE_VALUE);
    const std::wstring line = L"\"" + exe.wstring() + L"\" " + arguments;
    STARTUPINFOW si{};
    si.cb = sizeof si;
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdOutput = out;
    si.hStdError = out;
    si.hStdInput = INVALID_HANDLE_VALUE;
    PROCESS_INFORMATION pi{};
    Result r;
    std::wstring command_line = line;
    const BOOL started =
        CreateProcessW(exe.c_str(), command_line.data(), nullptr, nullptr, TRUE, CREATE_UNICODE_ENVIRONMENT,
                       block.data(), cwd_.empty() ? nullptr : cwd_.c_str(), &si, &pi);
    CloseHandle(out);
    EXPECT_TRUE(started) << "CreateProcessW " << GetLastError();
    if (!started) return r;
    EXPECT_EQ(WaitForSingleObject(pi.hProcess, 60000), WAIT_OBJECT_0);
    GetExitCodeProcess(pi.hProcess, &r.exit_code);
    CloseHandle(pi.hProcess);
    CloseHandle(pi.hThread);
    std::ifstream in(out_file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    r.out = text.str();
    return r;
  }

  // infer.exe installed into a folder of this test as the Windows install lays it out (flat:
  // infer.exe, VERSIONS.toml, weights\, samples\), from the build's bin folder.
  fs::path install_infer(const std::string& utf8_name) {
    const fs::path to = folder(utf8_name);
    const fs::path from = fs::u8path(INFER_EXE).parent_path();
    fs::copy_file(from / "infer.exe", to / "infer.exe");
    fs::copy_file(from / "VERSIONS.toml", to / "VERSIONS.toml");
    fs::copy(from / "weights", to / "weights", fs::copy_options::recursive);
    fs::copy(from / "samples", to / "samples", fs::copy_options::recursive);
    return to;
  }

  // infer.exe installed into `folder` with the stand-in infer_cudnn.dll of `variant` beside it (none
  // when empty), run on a sample with --device gpu and with --device auto.
  struct GpuRuns {
    Result gpu, automatic;
  };
  GpuRuns run_with_gpu_backend(const std::string& folder, const std::string& variant) {
    const fs::path app = install_infer(folder);
    if (!variant.empty()) fs::copy_file(kFakes / variant / "infer_cudnn.dll", app / "infer_cudnn.dll");
    const std::wstring image = L" \"" + (app / "samples" / "bag.png").wstring() + L"\"";
    return {run({}, {}, L"--device gpu --no-verify" + image, app / "infer.exe"),
            run({}, {}, L"--no-verify" + image, app / "infer.exe")};
  }

  infer::test::TempDir dir_;
  fs::path cwd_;  // infer.exe's current folder; empty: this process's
};

std::string show(const Result& r) { return r.out; }

// The baseline: everything in one folder with a non-ASCII name on PATH, the driver in System32.
TEST_F(Scenario, AHealthyMachineUnderANonAsciiFolderPasses) {
  const fs::path bin = folder("données-cuDNN/bin");
  install_cudnn(bin, "9.19.0");
  install_cudart(bin);
  const Result r = check({bin});
  EXPECT_EQ(r.exit_code, 0u) << show(r);
  EXPECT_EQ(r.report.value("ok", false), true) << show(r);
  EXPECT_EQ(r.status("cudnn.version"), "ok") << show(r);
  EXPECT_NE(r.item("cudnn.version").value("source", "").find("données-cuDNN"), std::string::npos) << show(r);
  EXPECT_EQ(r.found("cuda.runtime"), "13.0") << show(r);
  EXPECT_NE(r.found("gpu.compute_capability").find("9.0"), std::string::npos) << show(r);
}

// The manifest shipped beside infer.exe (VERSIONS.windows.toml) holds on a healthy machine.
TEST_F(Scenario, TheShippedWindowsManifestHoldsOnAHealthyMachine) {
  const fs::path bin = folder("cudnn/bin");
  install_cudnn(bin, "9.19.0");
  install_cudart(bin);
  const Result r = check({bin}, {}, "");
  EXPECT_EQ(r.exit_code, 0u) << show(r);
  EXPECT_NE(r.report.value("manifest", "").find("VERSIONS.toml"), std::string::npos) << show(r);
  EXPECT_EQ(r.status("cudnn.sublibraries"), "ok") << show(r);
}

// The guide's failure: cuDNN 8 installed without cudnn_ops_infer64_8.dll.
TEST_F(Scenario, MissingCudnnOpsInfer64_8IsTheRootCause) {
  const fs::path bin = folder("cudnn8/bin");
  install_cudnn(bin, "8.9.7", {"cudnn_ops_infer64_8.dll"});
  install_cudart(bin);
  const Result r = check({bin}, {}, manifest_text(">=8.9, <9", "12"));
  EXPECT_EQ(r.exit_code, 5u) << show(r);
  EXPECT_EQ(r.status("cudnn.version"), "ok") << show(r);
  EXPECT_EQ(r.status("cudnn.sublibraries"), "FAIL") << show(r);
  EXPECT_NE(r.found("cudnn.sublibraries").find("cudnn_ops_infer64_8.dll: missing from"), std::string::npos) << show(r);
  EXPECT_NE(r.fix("cudnn.sublibraries").find("reinstall the complete cuDNN package"), std::string::npos) << show(r);
}

// An older cudnn64_9.dll (9.1, with its own sub-DLLs) earlier on PATH than the 9.19 install.
TEST_F(Scenario, AnOlderCudnnEarlierOnPathIsNamedWithItsVersion) {
  const fs::path old_bin = folder("old/bin"), bin = folder("cudnn/bin");
  install_cudnn(old_bin, "9.1.0");
  install_cudnn(bin, "9.19.0");
  install_cudart(bin);
  const Result r = check({old_bin, bin});
  EXPECT_EQ(r.exit_code, 5u) << show(r);
  EXPECT_EQ(r.status("cudnn.version"), "FAIL") << show(r);
  EXPECT_NE(r.found("cudnn.version").find("9.1.0"), std::string::npos) << show(r);
  EXPECT_NE(r.item("cudnn.version").value("source", "").find((old_bin / "cudnn64_9.dll").u8string()), std::string::npos)
      << show(r);
  EXPECT_NE(r.fix("cudnn.version").find("first on PATH"), std::string::npos) << show(r);
  EXPECT_EQ(r.status("cudnn.single_copy"), "warn") << show(r);
  EXPECT_NE(r.found("cudnn.single_copy").find((bin / "cudnn64_9.dll").u8string()), std::string::npos) << show(r);
  EXPECT_EQ(r.out.find("LD_LIBRARY_PATH"), std::string::npos) << show(r);
}

// A stray cudnn_graph64_9.dll (9.1) in a folder earlier on PATH: cuDNN takes it, not its own.
TEST_F(Scenario, ASubDllFromAnotherFolderIsTheStrayOne) {
  const fs::path stray = folder("tools"), bin = folder("cudnn/bin");
  fs::copy_file(kFakes / "cudnn-9.1.0" / "sub.dll", stray / "cudnn_graph64_9.dll");
  install_cudnn(bin, "9.19.0");
  install_cudart(bin);
  const Result r = check({stray, bin});
  EXPECT_EQ(r.exit_code, 5u) << show(r);
  EXPECT_EQ(r.status("cudnn.sublibraries"), "FAIL") << show(r);
  const std::string found = r.found("cudnn.sublibraries");
  EXPECT_NE(found.find("cudnn_graph64_9.dll: stray 9.1.0 loaded from " + stray.u8string()), std::string::npos)
      << show(r);
  EXPECT_NE(found.find("PATH entry 1"), std::string::npos) << show(r);
  EXPECT_NE(r.fix("cudnn.sublibraries").find("remove " + (stray / "cudnn_graph64_9.dll").u8string()), std::string::npos)
      << show(r);
  // The front answered with the stray graph DLL's version: the version row follows from it.
  EXPECT_EQ(r.item("cudnn.version").value("because", ""), "cudnn.sublibraries") << show(r);
}

// CUDA_PATH at a CUDA 13 toolkit (its bin on PATH, as the installer does) with a driver of the
// 566 branch, which supports CUDA 12.7 only.
TEST_F(Scenario, CudaPathAtAToolkitTheDriverDoesNotSupport) {
  const fs::path toolkit = folder("NVIDIA GPU Computing Toolkit/CUDA/v13.0");
  const fs::path tbin = folder("NVIDIA GPU Computing Toolkit/CUDA/v13.0/bin"), cudnn = folder("cudnn/bin");
  install_cudart(tbin);
  install_cudnn(cudnn, "9.19.0");
  const Result r = check({tbin, cudnn}, {{L"CUDA_PATH", toolkit.wstring()},
                                         {L"CUDA_PATH_V13_0", toolkit.wstring()},
                                         {L"INFER_FAKE_DRIVER_CUDA", L"12070"},
                                         {L"INFER_FAKE_DRIVER_RELEASE", L"566.03"}});
  EXPECT_EQ(r.exit_code, 5u) << show(r);
  EXPECT_EQ(r.status("driver.cuda"), "FAIL") << show(r);
  EXPECT_NE(r.fix("driver.cuda").find("supports CUDA up to 12.7"), std::string::npos) << show(r);
  EXPECT_EQ(r.status("driver.release"), "FAIL") << show(r);
  EXPECT_EQ(r.status("driver.runtime_compatible"), "FAIL") << show(r);
  EXPECT_NE(
      r.found("driver.runtime_compatible").find("driver 566.03 (supports CUDA 12.7); CUDA runtime 13.0 needs >= 580"),
      std::string::npos)
      << show(r);
  EXPECT_NE(r.item("driver.runtime_compatible").value("source", "").find("minor-version-compatibility"),
            std::string::npos)
      << show(r);
  EXPECT_EQ(r.status("cuda.runtime"), "ok") << show(r);
}

// CUDA_PATH names a toolkit whose bin folder is not on PATH: found there, with the PATH line.
TEST_F(Scenario, ARuntimeOnlyUnderCudaPathGetsThePathLine) {
  const fs::path toolkit = folder("CUDA/v13.0"), tbin = folder("CUDA/v13.0/bin"), cudnn = folder("cudnn/bin");
  install_cudart(tbin);
  install_cudnn(cudnn, "9.19.0");
  const Result r = check({cudnn}, {{L"CUDA_PATH", toolkit.wstring()}});
  EXPECT_EQ(r.status("cuda.runtime"), "FAIL") << show(r);
  EXPECT_NE(r.found("cuda.runtime").find("CUDA_PATH"), std::string::npos) << show(r);
  EXPECT_NE(r.fix("cuda.runtime").find("set PATH=" + tbin.u8string() + ";%PATH%"), std::string::npos) << show(r);
}

// Only cuDNN 8 on PATH where the manifest needs 9.
TEST_F(Scenario, Cudnn8WhereNineIsNeededIsNamed) {
  const fs::path bin = folder("cudnn8/bin");
  install_cudnn(bin, "8.9.7");
  install_cudart(bin);
  const Result r = check({bin});
  EXPECT_EQ(r.exit_code, 5u) << show(r);
  EXPECT_EQ(r.status("cudnn.version"), "FAIL") << show(r);
  EXPECT_NE(r.found("cudnn.version").find("found cudnn64_8.dll (8.9.7.29) at " + (bin / "cudnn64_8.dll").u8string()),
            std::string::npos)
      << show(r);
  EXPECT_NE(r.fix("cudnn.version").find("cannot replace it: install cuDNN 9"), std::string::npos) << show(r);
}

// cuDNN only in a conda environment's Library\bin, which is not on PATH.
TEST_F(Scenario, ACondaCopyOffPathGetsThePathLine) {
  const fs::path conda = folder("miniconda3/envs/dl"), lib = folder("miniconda3/envs/dl/Library/bin");
  const fs::path cudart = folder("cuda/bin");
  install_cudnn(lib, "9.19.0");
  install_cudart(cudart);
  const Result r = check({cudart}, {{L"CONDA_PREFIX", conda.wstring()}});
  EXPECT_EQ(r.status("cudnn.version"), "FAIL") << show(r);
  EXPECT_NE(r.found("cudnn.version").find("conda env"), std::string::npos) << show(r);
  EXPECT_NE(r.found("cudnn.version").find("9.19.0.56"), std::string::npos) << show(r);
  EXPECT_NE(r.fix("cudnn.version").find("set PATH=" + lib.u8string() + ";%PATH%"), std::string::npos) << show(r);
}

// A conda copy earlier on PATH shadows the system one: named on single_copy.
TEST_F(Scenario, ACondaCopyOnPathShadowingAnotherIsNamed) {
  const fs::path conda = folder("miniconda3/envs/dl"), lib = folder("miniconda3/envs/dl/Library/bin");
  const fs::path system = folder("cudnn/bin");
  install_cudnn(lib, "9.19.0");
  install_cudnn(system, "9.19.0");
  install_cudart(system);
  const Result r = check({lib, system}, {{L"CONDA_PREFIX", conda.wstring()}});
  EXPECT_EQ(r.status("cudnn.version"), "ok") << show(r);
  EXPECT_EQ(r.status("cudnn.single_copy"), "warn") << show(r);
  EXPECT_NE(r.found("cudnn.single_copy").find("loaded " + (lib / "cudnn64_9.dll").u8string()), std::string::npos)
      << show(r);
}

// A cudnn64_9.dll that faults when called: infer.exe survives and names the DLL.
TEST_F(Scenario, ACrashingCudnnIsNamedAndInferSurvives) {
  const fs::path bin = folder("cudnn/bin");
  install_cudnn(bin, "9.19.0");
  install_cudart(bin);
  const Result r = check({bin}, {{L"INFER_FAKE_CRASH", L"cudnn64_9.dll"}});
  EXPECT_EQ(r.exit_code, 5u) << show(r);
  EXPECT_EQ(r.status("cudnn.version"), "FAIL") << show(r);
  EXPECT_NE(r.found("cudnn.version").find("crashed with an access violation (0xC0000005) in"), std::string::npos)
      << show(r);
  EXPECT_NE(r.found("cudnn.version").find("cudnn64_9.dll"), std::string::npos) << show(r);
}

// A cudnn64_9.dll that is not a DLL (a text file, as a failed download leaves) earlier on PATH:
// LoadLibraryExW's error 193 comes back as the file and what it is, and the check goes on.
TEST_F(Scenario, ACudnnThatIsNotADllIsNamedWithWhatItIs) {
  const fs::path junk = folder("junk"), bin = folder("cudnn/bin");
  std::ofstream(junk / "cudnn64_9.dll", std::ios::binary) << "version https://git-lfs.github.com/spec/v1\n";
  install_cudnn(bin, "9.19.0");
  install_cudart(bin);
  const Result r = check({junk, bin});
  EXPECT_EQ(r.exit_code, 5u) << show(r);
  EXPECT_EQ(r.status("cudnn.version"), "FAIL") << show(r);
  EXPECT_NE(r.found("cudnn.version").find("not a DLL for this program: " + (junk / "cudnn64_9.dll").u8string()),
            std::string::npos)
      << show(r);
  EXPECT_NE(r.fix("cudnn.version").find("remove " + junk.u8string() + " from PATH (it is PATH entry 1"),
            std::string::npos)
      << show(r);
  EXPECT_EQ(r.status("cuda.runtime"), "ok") << show(r);
}

// No driver in System32: the driver is the root cause, in Windows' words.
TEST_F(Scenario, NoDriverInSystem32IsTheRootCause) {
  TearDown();
  const fs::path bin = folder("cudnn/bin");
  install_cudnn(bin, "9.19.0");
  install_cudart(bin);
  const Result r = check({bin});
  EXPECT_EQ(r.exit_code, 5u) << show(r);
  EXPECT_EQ(r.status("driver.cuda"), "FAIL") << show(r);
  EXPECT_NE(r.found("driver.cuda").find("nvcuda.dll not found in System32"), std::string::npos) << show(r);
  EXPECT_EQ(r.item("gpu.count").value("because", ""), "driver.cuda") << show(r);
}

// ---- issue 31: what an independent set of fake DLLs found wrong ------------------------------

// A cudnn64_9.dll whose DllMain returns FALSE (error 1114) or faults (error 998): the file is
// named with what it did, not reported as missing.
TEST_F(Scenario, ACudnnWhoseDllMainFailsIsNamedWithWhatItDid) {
  const fs::path bin = folder("cudnn/bin");
  install_cudnn(bin, "9.19.0");
  install_cudart(bin);
  fs::copy_file(kFakes / "cudnn-dllmain" / "cudnn64_9.dll", bin / "cudnn64_9.dll",
                fs::copy_options::overwrite_existing);
  for (const auto& [mode, code] : {std::pair<std::wstring, std::string>{L"fail", "1114"}, {L"fault", "998"}}) {
    SCOPED_TRACE(fs::path(mode).u8string());
    const Result r = check({bin}, {{L"INFER_FAKE_DLLMAIN", mode}});
    EXPECT_EQ(r.exit_code, 5u) << show(r);
    EXPECT_EQ(r.status("cudnn.version"), "FAIL") << show(r);
    const std::string found = r.found("cudnn.version");
    EXPECT_EQ(found.find("not found"), std::string::npos) << show(r);
    EXPECT_NE(found.find((bin / "cudnn64_9.dll").u8string()), std::string::npos) << show(r);
    EXPECT_NE(found.find("DllMain"), std::string::npos) << show(r);
    EXPECT_NE(found.find("error " + code), std::string::npos) << show(r);
    EXPECT_EQ(r.fix("cudnn.version").find("install cuDNN"), std::string::npos) << show(r);
    EXPECT_NE(r.fix("cudnn.version").find("reinstall " + (bin / "cudnn64_9.dll").u8string()), std::string::npos)
        << show(r);
  }
}

// The CUDA runtime only in a virtualenv's NVIDIA wheel, laid out as the real one
// (site-packages\nvidia\cu13\bin\x86_64): found there, with the PATH line.
TEST_F(Scenario, ARuntimeInAVenvWheelIsFoundInItsX86_64Folder) {
  const fs::path venv = folder("venv"), wheel = folder("venv/Lib/site-packages/nvidia/cu13/bin/x86_64");
  const fs::path bin = folder("cudnn/bin");
  install_cudart(wheel);
  install_cudnn(bin, "9.19.0");
  const Result r = check({bin}, {{L"VIRTUAL_ENV", venv.wstring()}});
  EXPECT_EQ(r.status("cuda.runtime"), "FAIL") << show(r);
  EXPECT_NE(r.found("cuda.runtime").find("cudart64_13.dll 13.0.96.0 is in " + wheel.u8string()), std::string::npos)
      << show(r);
  EXPECT_NE(r.found("cuda.runtime").find("virtualenv"), std::string::npos) << show(r);
  EXPECT_NE(r.fix("cuda.runtime").find("set PATH=" + wheel.u8string() + ";%PATH%"), std::string::npos) << show(r);
}

// cuDNN only in a conda env that is not activated (%USERPROFILE%\miniconda3\envs\a): named as a
// copy the loader will not use, with the way to use it.
TEST_F(Scenario, AnInactiveCondaEnvIsNamedWithHowToUseIt) {
  const fs::path home = folder("home"), env = folder("home/miniconda3/envs/a");
  const fs::path lib = folder("home/miniconda3/envs/a/Library/bin"), cudart = folder("cuda/bin");
  install_cudnn(lib, "9.19.0");
  install_cudart(cudart);
  const Result r =
      check({cudart}, {{L"USERPROFILE", home.wstring()}, {L"ProgramData", folder("programdata").wstring()}});
  EXPECT_EQ(r.status("cudnn.version"), "FAIL") << show(r);
  const std::string found = r.found("cudnn.version");
  EXPECT_NE(found.find("9.19.0.56 is in " + lib.u8string()), std::string::npos) << show(r);
  EXPECT_NE(found.find("not activated"), std::string::npos) << show(r);
  EXPECT_NE(r.fix("cudnn.version").find("conda activate " + env.u8string()), std::string::npos) << show(r);
  EXPECT_NE(r.fix("cudnn.version").find("set PATH=" + lib.u8string() + ";%PATH%"), std::string::npos) << show(r);
}

// CUDA_PATH at a v13.0 folder that does not exist, only CUDA_PATH_V12_4 set: both are named.
TEST_F(Scenario, ACudaPathAtAMissingFolderIsNamed) {
  const fs::path cudnn = folder("cudnn/bin"), v12 = folder("CUDA/v12.4/bin").parent_path();
  const fs::path v13 = dir_.path() / "CUDA" / "v13.0";
  install_cudnn(cudnn, "9.19.0");
  const Result r = check({cudnn}, {{L"CUDA_PATH", v13.wstring()}, {L"CUDA_PATH_V12_4", v12.wstring()}});
  EXPECT_EQ(r.status("cuda.runtime"), "FAIL") << show(r);
  const std::string found = r.found("cuda.runtime");
  EXPECT_NE(found.find("CUDA_PATH (" + v13.u8string() + ")"), std::string::npos) << show(r);
  EXPECT_NE(found.find("does not exist"), std::string::npos) << show(r);
  EXPECT_NE(found.find("CUDA_PATH_V12_4 (" + v12.u8string() + ")"), std::string::npos) << show(r);
}

// A PATH entry in quotes: the loader keeps them and never searches the folder; the fix is to
// remove them, naming the entry.
TEST_F(Scenario, AQuotedPathEntryIsNamedWithItsQuotes) {
  const fs::path bin = folder("cudnn 9/bin"), cudart = folder("cuda/bin");
  install_cudnn(bin, "9.19.0");
  install_cudart(cudart);
  const Result r = check({fs::path(L"\"" + bin.wstring() + L"\""), cudart});
  EXPECT_EQ(r.status("cudnn.version"), "FAIL") << show(r);
  EXPECT_NE(r.found("cudnn.version").find("9.19.0.56 is in " + bin.u8string()), std::string::npos) << show(r);
  const std::string fix = r.fix("cudnn.version");
  EXPECT_NE(fix.find("remove the quotes"), std::string::npos) << show(r);
  EXPECT_NE(fix.find("PATH entry 1 (\"" + bin.u8string() + "\")"), std::string::npos) << show(r);
  EXPECT_EQ(fix.find("install cuDNN"), std::string::npos) << show(r);
}

// cuDNN 9.1 in the current folder, 9.19 on PATH: the current folder comes before PATH in the
// search order, so "put it first on PATH" cannot help; the fix removes the stray copy or runs
// infer elsewhere.
TEST_F(Scenario, AnOlderCudnnInTheCurrentFolderGetsAFixThatWorks) {
  const fs::path here = folder("work"), bin = folder("cudnn/bin");
  install_cudnn(here, "9.1.0");
  install_cudnn(bin, "9.19.0");
  install_cudart(bin);
  cwd_ = here;
  const Result r = check({bin});
  EXPECT_EQ(r.status("cudnn.version"), "FAIL") << show(r);
  EXPECT_NE(r.found("cudnn.version").find("9.1.0"), std::string::npos) << show(r);
  const std::string fix = r.fix("cudnn.version");
  EXPECT_EQ(fix.find("first on PATH"), std::string::npos) << show(r);
  EXPECT_NE(fix.find((here / "cudnn64_9.dll").u8string()), std::string::npos) << show(r);
  EXPECT_NE(fix.find("the current folder"), std::string::npos) << show(r);
  EXPECT_NE(fix.find("run infer from another folder"), std::string::npos) << show(r);
}

// nvml.dll's nvmlInit_v2 never returns: the rows nvcuda.dll answers stay (the driver's CUDA, the
// GPUs), and NVML's hang is on the release row alone.
TEST_F(Scenario, AnNvmlThatHangsLeavesTheRowsNvcudaAnswers) {
  const fs::path bin = folder("cudnn/bin");
  install_cudnn(bin, "9.19.0");
  install_cudart(bin);
  const Result r = check({bin}, {{L"INFER_FAKE_HANG", L"nvml.dll"}, {L"INFER_PROBE_TIMEOUT_MS", L"3000"}});
  EXPECT_EQ(r.exit_code, 5u) << show(r);
  EXPECT_EQ(r.status("driver.cuda"), "ok") << show(r);
  EXPECT_EQ(r.found("driver.cuda").rfind("13.0", 0), 0u) << show(r);
  EXPECT_EQ(r.status("gpu.count"), "ok") << show(r);
  EXPECT_EQ(r.status("gpu.compute_capability"), "ok") << show(r);
  EXPECT_EQ(r.status("driver.runtime_compatible"), "ok") << show(r);
  EXPECT_EQ(r.status("driver.release"), "FAIL") << show(r);
  EXPECT_NE(r.found("driver.release").find("nvml.dll"), std::string::npos) << show(r);
  EXPECT_NE(r.found("driver.release").find("did not finish within 3000 ms while nvmlInit_v2"), std::string::npos)
      << show(r);
}

// A 0-byte nvcuda.dll in System32: diagnosed, and no fix says to remove System32 from PATH (the
// CUDA runtime loads nvcuda.dll from System32 only).
TEST_F(Scenario, AnEmptyNvcudaNeverGetsRemoveSystem32FromPath) {
  std::ofstream(system32() / "nvcuda.dll", std::ios::binary | std::ios::trunc).close();
  const fs::path bin = folder("cudnn/bin");
  install_cudnn(bin, "9.19.0");
  install_cudart(bin);
  const Result r = check({bin});
  EXPECT_EQ(r.exit_code, 5u) << show(r);
  EXPECT_EQ(r.status("driver.cuda"), "FAIL") << show(r);
  EXPECT_NE(r.found("driver.cuda").find("nvcuda.dll"), std::string::npos) << show(r);
  for (const auto& [key, item] : r.items) {
    EXPECT_EQ(item.value("fix", "").find("from PATH"), std::string::npos) << key << "\n" << show(r);
  }
  EXPECT_NE(r.fix("driver.cuda").find("NVIDIA driver"), std::string::npos) << show(r);
}

// How many processes run `exe` (a file name), after waiting up to 2 s for them to end.
int processes_running(const std::wstring& exe) {
  int n = 0;
  for (int attempt = 0; attempt < 20; ++attempt) {
    n = 0;
    const HANDLE snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
    PROCESSENTRY32W e{};
    e.dwSize = sizeof e;
    for (BOOL more = Process32FirstW(snapshot, &e); more; more = Process32NextW(snapshot, &e))
      n += _wcsicmp(e.szExeFile, exe.c_str()) == 0;
    CloseHandle(snapshot);
    if (n == 0) break;
    Sleep(100);
  }
  return n;
}

// A cudnnGetVersion that starts a long-lived helper inheriting handles (bInheritHandles=TRUE)
// cannot hold --check past its deadline: the helper is ended with the probe, whether cuDNN returns
// (the check goes on) or waits for it (a timeout on the cuDNN row).
TEST_F(Scenario, AHelperProcessStartedByALibraryCannotHoldTheCheck) {
  const fs::path bin = folder("cudnn/bin");
  install_cudnn(bin, "9.19.0");
  install_cudart(bin);
  const std::wstring helper = L"\"" + (kFakes / "helper" / "infer_fake_sleeper.exe").wstring() + L"\" 40";
  for (const bool wait : {false, true}) {
    SCOPED_TRACE(wait ? "cudnnGetVersion waits for its helper" : "cudnnGetVersion returns");
    const auto start = std::chrono::steady_clock::now();
    const Result r = check({bin}, {{L"INFER_FAKE_HELPER", helper},
                                   {L"INFER_FAKE_HELPER_WAIT", wait ? L"1" : L""},
                                   {L"INFER_PROBE_TIMEOUT_MS", L"3000"}});
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start);
    EXPECT_LT(seconds.count(), 20) << "the helper lives 40 s\n" << show(r);
    EXPECT_EQ(processes_running(L"infer_fake_sleeper.exe"), 0) << "the helper outlived the probe";
    if (wait) {
      EXPECT_EQ(r.status("cudnn.version"), "FAIL") << show(r);
      EXPECT_NE(r.found("cudnn.version").find("did not finish within 3000 ms while cudnnGetVersion"), std::string::npos)
          << show(r);
    } else {
      EXPECT_EQ(r.status("cudnn.version"), "ok") << show(r);
      EXPECT_EQ(r.exit_code, 0u) << show(r);
    }
  }
}

// No cudart64_13.dll anywhere: cuda.runtime is the root cause; driver.runtime_compatible follows
// from it and names the Windows file.
TEST_F(Scenario, NoRuntimeAnywhereIsTheRootCauseOfRuntimeCompatible) {
  const fs::path bin = folder("cudnn/bin");
  install_cudnn(bin, "9.19.0");
  const Result r = check({bin});
  EXPECT_EQ(r.status("cuda.runtime"), "FAIL") << show(r);
  EXPECT_EQ(r.item("driver.runtime_compatible").value("because", ""), "cuda.runtime") << show(r);
  const std::string source = r.item("driver.runtime_compatible").value("source", "");
  EXPECT_EQ(source.find("libcudart"), std::string::npos) << show(r);
  EXPECT_NE(source.find("cudart64_13.dll"), std::string::npos) << show(r);
}

// --write-manifest on a healthy machine, into a non-ASCII folder: the file passes --check there,
// and has no Linux-only item.
TEST_F(Scenario, AWrittenManifestPassesOnTheMachineThatWroteIt) {
  const fs::path bin = folder("cudnn/bin"), out = folder("déploiement");
  install_cudnn(bin, "9.19.0");
  install_cudart(bin);
  const fs::path file = out / "VERSIONS.toml";
  const Result written = run({bin}, {}, L"--write-manifest \"" + file.wstring() + L"\"");
  ASSERT_EQ(written.exit_code, 0u) << written.out;
  EXPECT_NE(written.out.find("infer: wrote " + file.u8string()), std::string::npos) << written.out;
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("version = \">=9.19.0, <10\""), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find("glibc"), std::string::npos) << text.str();
  const Result r = run({bin}, {}, L"--check --manifest \"" + file.wstring() + L"\"");
  EXPECT_EQ(r.exit_code, 0u) << r.out;
  EXPECT_EQ(fs::directory_iterator(out) == fs::directory_iterator(), false);
  int files = 0;
  for (const auto& e : fs::directory_iterator(out)) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1) << "a temporary file was left beside the manifest";
}

// An existing manifest is replaced whole (ReplaceFileW); a folder as the target is refused with
// exit 3, naming it, and leaves nothing behind.
TEST_F(Scenario, WritingReplacesAFileAndRefusesAFolder) {
  const fs::path out = folder("deploy"), bin = folder("cudnn/bin");
  install_cudnn(bin, "9.19.0");
  install_cudart(bin);
  const fs::path file = out / "VERSIONS.toml";
  std::ofstream(file, std::ios::binary) << std::string(100000, '#');  // longer than the new text
  const Result replaced = run({bin}, {}, L"--write-manifest \"" + file.wstring() + L"\"");
  ASSERT_EQ(replaced.exit_code, 0u) << replaced.out;
  EXPECT_LT(fs::file_size(file), 100000u);
  const fs::path dir = folder("deploy/a folder");
  const Result refused = run({bin}, {}, L"--write-manifest \"" + dir.wstring() + L"\"");
  EXPECT_EQ(refused.exit_code, 3u) << refused.out;
  EXPECT_NE(refused.out.find(dir.u8string() + ": cannot write: " + dir.u8string() + " is a directory"),
            std::string::npos)
      << refused.out;
  int entries = 0;
  for (const auto& e : fs::directory_iterator(out)) entries += e.path().filename().u8string().rfind(".", 0) == 0;
  EXPECT_EQ(entries, 0) << "a temporary file was left behind";
}

// NVIDIA's own files, from the PyPI wheels (the windows_fetch_real_* tests fetch them first).
fs::path real_dll(const std::string& wheel, const std::string& member) {
  const DWORD n = GetEnvironmentVariableW(L"INFER_REAL_WHEEL_DIR", nullptr, 0);
  std::wstring root(n, L'\0');
  root.resize(GetEnvironmentVariableW(L"INFER_REAL_WHEEL_DIR", root.data(), n));
  return fs::path(root) / fs::u8path(wheel) / fs::u8path(member).make_preferred();
}
const char kCudnnWheel[] = "nvidia-cudnn-cu13-9.19.0.56-win_amd64";

// NVIDIA's cudnn64_9.dll and cudnn_graph64_9.dll and cudart64_13.dll, with fakes for the five
// sub-DLLs the check does not call (together 330 MB): the versions come from NVIDIA's code.
TEST_F(Scenario, TheRealCudnn64_9FromTheWheelIsProbed) {
  const fs::path front = real_dll(kCudnnWheel, "nvidia/cudnn/bin/cudnn64_9.dll");
  ASSERT_TRUE(fs::exists(front)) << front.u8string() << " missing: the windows_fetch_real_nvidia_dlls test fetches it";
  const fs::path bin = folder("real/bin");
  install_cudnn(bin, "9.19.0");  // then NVIDIA's files over the fakes
  fs::copy_file(front, bin / "cudnn64_9.dll", fs::copy_options::overwrite_existing);
  fs::copy_file(real_dll(kCudnnWheel, "nvidia/cudnn/bin/cudnn_graph64_9.dll"), bin / "cudnn_graph64_9.dll",
                fs::copy_options::overwrite_existing);
  fs::copy_file(real_dll("nvidia-cuda-runtime-13.0.96-win_amd64", "nvidia/cu13/bin/x86_64/cudart64_13.dll"),
                bin / "cudart64_13.dll");
  const Result r = check({bin});
  EXPECT_EQ(r.status("cudnn.version"), "ok") << show(r);
  EXPECT_EQ(r.found("cudnn.version").rfind("9.19.0", 0), 0u) << show(r);
  EXPECT_EQ(r.status("cudnn.cuda_major"), "ok") << show(r);
  EXPECT_NE(r.found("cudnn.cuda_major").find("built with CUDA 13."), std::string::npos) << show(r);
  EXPECT_EQ(r.status("cuda.runtime"), "ok") << show(r);
  EXPECT_EQ(r.found("cuda.runtime"), "13.0") << show(r);
  EXPECT_EQ(r.status("cudnn.sublibraries"), "ok") << show(r);
}

// NVIDIA's front without its graph DLL ends the process inside cudnnGetVersion (in a probe child
// under wine: a fail-fast, 0xC0000409; issue 15 saw exit code 9 when run otherwise): infer.exe
// survives, and the missing DLL is the root cause.
TEST_F(Scenario, TheRealCudnn64_9WithoutItsGraphDllIsDiagnosed) {
  const fs::path front = real_dll(kCudnnWheel, "nvidia/cudnn/bin/cudnn64_9.dll");
  ASSERT_TRUE(fs::exists(front)) << front.u8string() << " missing: the windows_fetch_real_nvidia_dlls test fetches it";
  const fs::path bin = folder("real/bin");
  install_cudnn(bin, "9.19.0", {"cudnn_graph64_9.dll"});
  fs::copy_file(front, bin / "cudnn64_9.dll", fs::copy_options::overwrite_existing);
  install_cudart(bin);
  const Result r = check({bin});
  EXPECT_EQ(r.exit_code, 5u) << show(r);
  EXPECT_EQ(r.status("cudnn.sublibraries"), "FAIL") << show(r);
  EXPECT_NE(r.found("cudnn.sublibraries").find("cudnn_graph64_9.dll: missing from"), std::string::npos) << show(r);
  EXPECT_NE(r.found("cudnn.version").find("while cudnnGetVersion"), std::string::npos) << show(r);
  EXPECT_EQ(r.item("cudnn.version").value("because", ""), "cudnn.sublibraries") << show(r);
}

// ---- infer.exe classifying (the CPU backend: plain kernels on the portable sgemm) -------------

// "ankle-boot.png" -> "Ankle boot": the bundled samples are named after their class.
std::string class_of_sample(const std::string& file) {
  static const std::map<std::string, std::string> kClasses = {
      {"ankle-boot", "Ankle boot"}, {"bag", "Bag"},         {"dress", "Dress"},     {"photo-sneaker", "Sneaker"},
      {"pullover", "Pullover"},     {"sneaker", "Sneaker"}, {"trouser", "Trouser"}, {"Stiefel-ü", "Ankle boot"}};
  const auto it = kClasses.find(fs::u8path(file).stem().u8string());
  return it == kClasses.end() ? "" : it->second;
}

// The --json lines of a run, by file.
std::map<std::string, nlohmann::json> results_by_file(const std::string& out) {
  std::map<std::string, nlohmann::json> by_file;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("file")) by_file[j.value("file", "")] = j;
  }
  return by_file;
}

// infer.exe installed under a non-ASCII folder finds its model and manifest beside itself, reads
// images from another non-ASCII folder, and names every one of them in UTF-8.
TEST_F(Scenario, InferExeClassifiesTheSamplesFromNonAsciiFolders) {
  const fs::path app = install_infer("Programme ü 日本/infer");
  const fs::path pictures = folder("Bilder ñ");
  fs::copy_file(app / "samples" / "ankle-boot.png", pictures / fs::u8path("Stiefel-ü.png"));
  const Result r = run({}, {},
                       L"--json \"" + (app / "samples").wstring() + L"\" \"" +
                           (pictures / fs::u8path("Stiefel-ü.png")).wstring() + L"\"",
                       app / "infer.exe");
  EXPECT_EQ(r.exit_code, 0u) << show(r);
  const std::map<std::string, nlohmann::json> results = results_by_file(r.out);
  EXPECT_EQ(results.size(), 8u) << show(r);  // the 7 samples and the copy
  for (const auto& [file, j] : results) {
    SCOPED_TRACE(file);
    EXPECT_EQ(j.value("device", ""), "cpu");
    ASSERT_TRUE(j["top"].is_array() && !j["top"].empty()) << j.dump();
    EXPECT_EQ(j["top"][0].value("label", ""), class_of_sample(file)) << j.dump();
    const double p = j["top"][0].value("prob", -1.0);
    EXPECT_GT(p, 0.5);
    EXPECT_LE(p, 1.0);
  }
  EXPECT_EQ(results.count((pictures / fs::u8path("Stiefel-ü.png")).u8string()), 1u) << show(r);
  // No NVIDIA driver here: the start-up check says why the CPU runs.
  EXPECT_NE(r.out.find("infer: notice: running on the CPU"), std::string::npos) << show(r);
}

// The shipped VERSIONS.toml lists the model's files by SHA-256 (BCrypt's): a changed weights file is
// refused at start-up, naming it and both digests.
TEST_F(Scenario, AChangedWeightsFileIsRefusedByItsDigest) {
  const fs::path app = install_infer("tampered");
  std::ofstream(app / "weights" / "fashion.safetensors", std::ios::binary | std::ios::app) << '\0';
  const Result r = run({}, {}, L"--device cpu \"" + (app / "samples" / "bag.png").wstring() + L"\"", app / "infer.exe");
  EXPECT_EQ(r.exit_code, 3u) << show(r);
  EXPECT_NE(r.out.find((app / "weights" / "fashion.safetensors").u8string() + ": SHA-256 is "), std::string::npos)
      << show(r);
  EXPECT_NE(r.out.find("d0c34036c61ef03d004b137ea030d69d69b40516daf0b4266301f0b601c11b22"), std::string::npos)
      << show(r);
}

// A damaged image is one line naming it; the others are still classified (exit 3 at the end).
TEST_F(Scenario, OneBadImageDoesNotStopTheOthers) {
  const fs::path pictures = folder("bad");
  const fs::path samples = fs::u8path(INFER_EXE).parent_path() / "samples";
  fs::copy_file(samples / "bag.png", pictures / "bag.png");
  std::string png;
  {
    std::ifstream in(samples / "dress.png", std::ios::binary);
    png.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(pictures / "truncated.png", std::ios::binary) << png.substr(0, png.size() / 2);
  const Result r = run({}, {}, L"--device cpu \"" + pictures.wstring() + L"\"");
  EXPECT_EQ(r.exit_code, 3u) << show(r);
  EXPECT_NE(r.out.find((pictures / "bag.png").u8string() + ": Bag"), std::string::npos) << show(r);
  EXPECT_NE(r.out.find((pictures / "truncated.png").u8string() + ": "), std::string::npos) << show(r);
  EXPECT_NE(r.out.find("1 of 2 inputs failed; the others were classified"), std::string::npos) << show(r);
}

// A root-relative path (/work/.../bag.png: no drive letter) is an image, not a Windows-style
// /option (CLI11's default on Windows before options.cpp turned it off).
TEST_F(Scenario, ARootRelativeImagePathIsNotTakenForAnOption) {
  const fs::path image = fs::u8path(INFER_EXE).parent_path() / "samples" / "bag.png";
  ASSERT_EQ(image.u8string().front(), '/') << image.u8string();
  const Result r = run({}, {}, L"--device cpu \"" + image.wstring() + L"\"");
  EXPECT_EQ(r.exit_code, 0u) << show(r);
  EXPECT_NE(r.out.find(": Bag "), std::string::npos) << show(r);
}

// An argument with an unpaired UTF-16 surrogate (legal in a Windows file name, not convertible to
// UTF-8) is one input that cannot be read, not a crash; the next one is still classified.
TEST_F(Scenario, AnArgumentWithAnUnpairedSurrogateIsOneBadInput) {
  const fs::path image = folder("ok") / "bag.png";
  fs::copy_file(fs::u8path(INFER_EXE).parent_path() / "samples" / "bag.png", image);
  const std::wstring odd = (dir_.path() / L"odd-\xD800.png").wstring();
  const Result r = run({}, {}, L"--device cpu \"" + odd + L"\" \"" + image.wstring() + L"\"");
  EXPECT_EQ(r.exit_code, 3u) << show(r);
  EXPECT_NE(r.out.find("odd-\xEF\xBF\xBD.png"), std::string::npos) << show(r);  // U+FFFD in its place
  EXPECT_NE(r.out.find(image.u8string() + ": Bag"), std::string::npos) << show(r);
}

// This build has no protobuf: an ONNX model is recognised and refused with the way out.
TEST_F(Scenario, AnOnnxModelIsRefusedSayingWhy) {
  const fs::path model = dir_.path() / "model.onnx";
  std::ofstream(model, std::ios::binary) << std::string("\x08\x08\x12\x07pytorch", 11);
  const fs::path image = fs::u8path(INFER_EXE).parent_path() / "samples" / "bag.png";
  const Result r =
      run({}, {}, L"--device cpu --no-verify --model \"" + model.wstring() + L"\" \"" + image.wstring() + L"\"");
  EXPECT_EQ(r.exit_code, 3u) << show(r);
  EXPECT_NE(r.out.find(model.u8string() + ": is an ONNX model, which this build cannot read"), std::string::npos)
      << show(r);
}

// ---- the GPU backend's loader (gpu_library_windows.cpp), with stand-ins for infer_cudnn.dll ------

// None beside infer.exe: --device gpu says so (exit 4); --device auto runs on the CPU.
TEST_F(Scenario, WithoutTheGpuBackendDllTheGpuIsRefusedAndAutoRunsOnTheCpu) {
  const GpuRuns runs = run_with_gpu_backend("no-gpu-backend", "");
  const Result& gpu = runs.gpu;
  EXPECT_EQ(gpu.exit_code, 4u) << show(gpu);
  EXPECT_NE(gpu.out.find("infer_cudnn.dll (the GPU backend) was not found"), std::string::npos) << show(gpu);
  const Result& aut = runs.automatic;
  EXPECT_EQ(aut.exit_code, 0u) << show(aut);
  EXPECT_NE(aut.out.find(": Bag "), std::string::npos) << show(aut);
}

// A backend that loads and finds no device: its own message, from its create().
TEST_F(Scenario, TheGpuBackendDllIsLoadedAndItsRefusalReported) {
  const GpuRuns runs = run_with_gpu_backend("fake-gpu-backend", "gpu-plugin");
  const Result& gpu = runs.gpu;
  EXPECT_EQ(gpu.exit_code, 4u) << show(gpu);
  EXPECT_NE(gpu.out.find("fake GPU backend: no CUDA device here"), std::string::npos) << show(gpu);
  const Result& aut = runs.automatic;
  EXPECT_EQ(aut.exit_code, 0u) << show(aut);
  EXPECT_NE(aut.out.find("running on the CPU: fake GPU backend: no CUDA device here"), std::string::npos) << show(aut);
}

// A backend DLL that crashes in the trial (as cudnnGetVersion does beside a foreign
// cudnn_graph64_9.dll) ends the trial child, not infer.exe; the report names the step.
TEST_F(Scenario, AGpuBackendDllThatCrashesEndsOnlyTheTrialChild) {
  const GpuRuns runs = run_with_gpu_backend("crashing-gpu-backend", "gpu-plugin-crash");
  const Result& gpu = runs.gpu;
  EXPECT_EQ(gpu.exit_code, 4u) << show(gpu);
  EXPECT_NE(gpu.out.find("loading the GPU backend crashed"), std::string::npos) << show(gpu);
  EXPECT_NE(gpu.out.find("while asking the CUDA runtime and cuDNN their versions"), std::string::npos) << show(gpu);
  const Result& aut = runs.automatic;
  EXPECT_EQ(aut.exit_code, 0u) << show(aut);
  EXPECT_NE(aut.out.find(": Bag "), std::string::npos) << show(aut);
}

// An infer_cudnn.dll built with MSVC beside a mingw-built infer.exe: the network's C++ types differ
// between the two standard libraries, so the DLL is refused before the network is handed over.
TEST_F(Scenario, AGpuBackendDllOfAnotherCxxLibraryIsRefused) {
  const GpuRuns runs = run_with_gpu_backend("msvc-gpu-backend", "gpu-plugin-msvc");
  const Result& gpu = runs.gpu;
  EXPECT_EQ(gpu.exit_code, 4u) << show(gpu);
  EXPECT_NE(gpu.out.find("was built with Microsoft's STL (MSVC), this program with libstdc++"), std::string::npos)
      << show(gpu);
  const Result& aut = runs.automatic;
  EXPECT_EQ(aut.exit_code, 0u) << show(aut);
  EXPECT_NE(aut.out.find(": Bag "), std::string::npos) << show(aut);
}

}  // namespace
