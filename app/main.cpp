// infer: classify images with a small CNN. The only place that prints to the user and picks the
// exit code (see exit_codes.h); everything below app/ throws typed errors.
#ifndef _WIN32
#include <unistd.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "app/classify.h"
#include "app/entry.h"
#include "app/environment.h"
#include "app/exit_codes.h"
#include "app/interrupt.h"
#include "app/memory_limit.h"
#include "app/options.h"
#include "app/terminal.h"
#include "app/version.h"
#include "infer/classifier.h"
#include "manifest/writer.h"
#include "platform/install_layout.h"
#include "platform/printable.h"

namespace infer::app {
namespace {

namespace fs = std::filesystem;

// The classifier's notices, in the command line's words, on stderr.
void print_notice(const Options& o, const Notice& n) {
  std::string line = n.message;
  switch (n.kind) {
    case Notice::Kind::NoManifest: break;
    case Notice::Kind::CpuFallback: line = cpu_fallback_message(o.precision, n.reason, "--precision"); break;
    case Notice::Kind::BatchReduced: line = batch_reduced_message(n); break;
  }
  std::cerr << "infer: notice: " << printable_utf8(line) << '\n';
}

// --batch, but no more than the images when the inputs name only images (a folder's count is known
// only later): a run of one image plans, allocates and builds for one, not for 64.
int batch_for_inputs(const Options& o) {
  std::error_code ec;
  for (const std::string& input : o.inputs) {
    if (fs::is_directory(arg_path(input), ec)) return o.batch;
  }
  return o.inputs.empty() ? o.batch : static_cast<int>(std::min(o.inputs.size(), static_cast<std::size_t>(o.batch)));
}

// The command line as the Classifier's options: the run's start-up check, model, batch and device.
ClassifierOptions classifier_options(const Options& o) {
  ClassifierOptions c;
  // A backend asked for by name is the GPU or an error: under --device auto too.
  c.device = o.cuda_major != 0 && o.device == Device::Auto ? Device::Gpu : o.device;
  c.cuda_major = o.cuda_major;
  c.precision = o.precision;
  c.max_batch = batch_for_inputs(o);
  c.max_memory = o.max_memory;
  c.verify = !o.no_verify;
  c.manifest = arg_path(o.manifest);
  c.softmax = o.softmax;
  c.preprocessing = o.preprocessing;
  c.autotune = o.autotune;
  c.autotune_cache = arg_path(o.autotune_cache);
  c.notice = [&o](const Notice& n) { print_notice(o, n); };
  if (o.verbose) c.gpu_log = [](const std::string& line) { std::cerr << "infer: " << line << '\n'; };
  return c;
}

// An OptionError names a ClassifierOptions member; the user wrote the option that sets it.
std::string option_flag(const std::string& member) {
  static const std::pair<const char*, const char*> kFlags[] = {{"preprocessing.mean", "--mean"},
                                                               {"preprocessing.std", "--std"},
                                                               {"preprocessing.resize_size", "--resize-size"},
                                                               {"max_batch", "--batch"},
                                                               {"k", "--top-k"}};
  for (const auto& [name, flag] : kFlags) {
    if (member == name) return flag;
  }
  return member;
}

int run(int argc, char** argv) {
  ParseResult parsed = parse_options(argc, argv);
  if (parsed.exit_code) return *parsed.exit_code;
  const Options& o = parsed.options;
  end_runs_on_whole_lines();

  if (o.threads > 0) {
    set_cpu_threads(o.threads);
  } else if (o.inputs.size() == 1 && fs::is_regular_file(arg_path(o.inputs[0]))) {
    // One image: one thread. Starting and waking the OpenMP team costs more than it saves on one
    // image (measured: 20-30 ms for the shipped model on one thread; 30-130 ms on two, bimodal).
    set_cpu_threads(1);
  }
  if (o.version) {
    print_version(std::cout, o.model, stdout_terminal_width());
    return kExitOk;
  }
  if (o.check) return run_check(o, std::cout, std::cerr, stdout_terminal_width());
  if (!o.write_manifest.empty()) return run_write_manifest(o, std::cout, std::cerr);

  // The start-up check (the manifest, the digests of the model files it lists, then the environment
  // unless the CPU was asked for), the model and the backend: the Classifier's.
  if (o.no_verify) {
    std::cerr << "infer: notice: --no-verify: the environment and the model digests are not checked\n";
  }
  std::optional<Classifier> classifier;
  try {
    classifier.emplace(arg_path(o.model), classifier_options(o));
  } catch (const MemoryLimitError& e) {
    std::cerr << "infer: " << printable_utf8(memory_limit_message(e)) << '\n';
    return kExitInvalidInput;
  } catch (const InputError& e) {
    std::cerr << "infer: " << printable_utf8(e.what()) << '\n';
    return kExitInvalidInput;
  } catch (const OptionError& e) {
    std::cerr << "infer: " << option_flag(e.option()) << ": " << e.problem() << "\nRun 'infer --help' for usage.\n";
    return kExitUsage;
  } catch (const GpuUnavailableError& e) {
    std::cerr << "infer: the GPU is unusable (--device gpu): " << e.what() << '\n';
    return kExitGpuUnusable;
  } catch (const GpuError& e) {
    std::cerr << "infer: GPU error: " << e.what() << '\n';
    return kExitGpuUnusable;
  }

  // --output: the results go to a buffer, written to the file in one atomic step when the run ends
  // (about 200 bytes per image), so that a killed run leaves no file and a rerun replaces it whole.
  std::ostringstream buffered;
  std::ostream& results = o.output.empty() ? std::cout : buffered;
  if (!o.output.empty()) {
    const fs::path folder = fs::absolute(arg_path(o.output)).parent_path();
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) {
      std::cerr << "infer: " << printable_utf8(o.output) << ": cannot write: the folder "
                << printable_utf8(folder.u8string()) << " does not exist\n";
      return kExitOutput;
    }
  }
  try {
    const RunCounts counts = classify_all(o, *classifier, results, std::cerr);
    if (!o.output.empty()) {
      try {
        const WholeOutput whole;  // a signal waits until the file is renamed into place (or removed)
        manifest::write_file_atomically(arg_path(o.output), buffered.str());
      } catch (const InputError& e) {
        std::cerr << "infer: " << printable_utf8(e.what()) << '\n';
        return kExitOutput;
      }
    }
    if (counts.failed > 0) {
      std::cerr << "infer: " << counts.failed << " of " << counts.failed + counts.classified << " inputs failed"
                << (counts.classified > 0 ? "; the others were classified\n" : "; none was classified\n");
      return kExitInvalidInput;
    }
  } catch (const GpuError& e) {
    // A failure mid-run never switches devices silently: the results so far were printed.
    std::cout.flush();
    std::cerr << "infer: GPU error during the run: " << e.what() << '\n';
    return kExitGpuUnusable;
  }
  return kExitOk;
}

#ifndef _WIN32
// `infer serve ARGS`: infer-serve ARGS, from this executable's folder, in this process (serve_main.cpp
// says why it is a program of its own). Returns only when it cannot be started.
int exec_serve(char** argv) {
  const fs::path self = executable_path();
  if (self.empty()) {
    std::cerr << "infer serve: cannot find infer-serve: this program's path is unreadable (" << kExecutablePathSource
              << ")\n";
    return kExitInternal;
  }
  const std::string serve = (self.parent_path() / "infer-serve").string();
  argv[1] = const_cast<char*>(serve.c_str());  // its argv[0]; the arguments after "serve" follow
  execv(serve.c_str(), argv + 1);
  std::cerr << "infer serve: cannot start " << printable_utf8(serve) << ": " << std::strerror(errno) << '\n';
  return kExitInternal;
}
#endif

// Every mode's output reaches stdout or the run fails: the last buffered bytes are written here,
// and a write that failed on the way (a full disk, a closed pipe with SIGPIPE ignored) is reported.
int finish_output(int code) {
  errno = 0;
  std::cout.flush();
  if (std::cout) return code;
  const char* why = errno ? std::strerror(errno) : "write failed";
  std::cerr << "infer: cannot write to standard output: " << why << '\n';
  return kExitOutput;
}

}  // namespace

int main_utf8(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "serve") {
#ifdef _WIN32
    std::cerr << "infer serve: not in the Windows build yet (docs/windows.md)\n";
    return kExitUsage;
#else
    return exec_serve(argv);
#endif
  }
  try {
    return finish_output(run(argc, argv));
  } catch (const OutputError& e) {
    std::cerr << "infer: cannot write to standard output: " << e.what() << '\n';
    return kExitOutput;
  } catch (const std::exception& e) {
    std::cerr << "infer: internal error: " << printable_utf8(e.what()) << '\n';
    return kExitInternal;
  }
}

}  // namespace infer::app
