// `infer --write-manifest`: a VERSIONS.toml describing this machine, the seed of a new deployment's
// manifest. `infer --check --manifest PATH` passes on the machine that wrote it: what was found
// becomes a required constraint compatible with it; what was not found is written advisory, with
// a comment saying so, so that it is visible and can be made required on the target machines.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "manifest/probe.h"

namespace infer::manifest {

// The manifest text for this machine, schema 2: the machine's items, and one [[backend]], the one
// `machine` was probed for (its build's CUDA major), with backend_note as its comment (how it was
// chosen). model_files (absolute paths) get their SHA-256, written relative to the manifest's
// folder; missing ones are left out with a comment.
std::string manifest_text(const MachineProbe& machine, const std::filesystem::path& manifest_path,
                          const std::vector<std::filesystem::path>& model_files, const std::string& backend_note = "");

// Writes text atomically: a temporary dot-file in the target's folder (".<name>.tmp-<pid>-<n>"),
// fsync, then rename over the target, so a reader sees the old file or the new one, never half of
// one (the manifest, a Node Feature Discovery feature file, `infer --output`'s results). The target
// is path, or where path's symlinks end (the links stay links). A file that is replaced keeps its
// mode (and owner and group where the user may set them); a new one gets 0644 less the umask.
// Throws InputError "<path>: cannot write: ..." when the folder is not writable or the target is
// not a regular file; nothing is left behind then.
void write_file_atomically(const std::filesystem::path& path, const std::string& text);

// The manifest, written so.
inline void write_manifest(const std::filesystem::path& path, const std::string& text) {
  write_file_atomically(path, text);
}

}  // namespace infer::manifest
