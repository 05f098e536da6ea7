// The parts of probe_machine() (probe.cpp): each library family is probed by one or more child
// bodies (run all at once by platform/isolated.h), whose records are read back into MachineProbe.
// Internal to manifest/.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "platform/isolated.h"
#include "manifest/probe.h"

namespace infer::manifest::detail {

// A child body and what reads its result back, in the checking process. A job without a body
// runs no child: its read gets an empty result.
struct Job {
  ChildBody body;
  std::function<void(const IsolatedResult&, MachineProbe&)> read;
};

// ---- In the child. ----
// dlopen(name) with RTLD_NOW, announced as a step; records "<prefix>path" (the link map's name),
// "<prefix>dlerror" and "<prefix>standin". Returns the handle or nullptr.
void* child_open(const ChildChannel& ch, const std::string& name, const std::string& prefix = "");
// The link map name of a loaded object whose file name is `file_name`, or "".
std::string loaded_object(const std::string& file_name);

// ---- In the checking process. ----
// Fills lib from a child that ran child_open(soname): loaded, path, error, broken (not a library,
// crashed, hung), output.
void read_library(const IsolatedResult& r, const std::string& soname, LibraryProbe& lib);
// "/x/libcudnn.so.9 crashed ..." style text for a child that did not finish, naming `file` when the
// child could not tell which file it was in.
std::string broken_text(const IsolatedResult& r, const std::string& file);

// The jobs of each family. The runtime jobs need the build's majors (m.build).
std::vector<Job> driver_jobs();
std::vector<Job> cudart_jobs(const MachineProbe& m);
std::vector<Job> cudnn_jobs(const MachineProbe& m);
// After every job was read: what needs several results at once (driver releases, visible GPUs,
// which copies are the loaded ones).
void finish_driver(MachineProbe& m);
void finish_runtime(MachineProbe& m);

}  // namespace infer::manifest::detail
