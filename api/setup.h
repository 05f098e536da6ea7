// Setting a Classifier up, as the command line does: the manifest and the model digests, the
// preprocessing overrides, the batch within the memory limit, and the device policy.
#pragma once

#include <memory>
#include <mutex>
#include <optional>

#include "backends/backend.h"
#include "formats/model_file.h"
#include "infer/classifier.h"
#include "manifest/manifest.h"
#include "manifest/probe.h"
#include "manifest/report.h"

namespace infer::api {

// What this library was compiled with: CUDA and cuDNN of the GPU module of a CUDA major (0: the
// newest built; empty strings when this build has no module of that major).
manifest::BuildInfo build_info(int cuda_major = 0);
// The same, with the cuDNN major the manifest asks for where the build has no cuDNN of its own to
// say it (the Windows build probes cudnn64_8.dll or cudnn64_9.dll accordingly).
manifest::BuildInfo build_info(const manifest::Manifest& m);

// The environment check as every path runs it: a schema 1 manifest with manifest::check against
// the probe of the CUDA 13 backend's build, schema 2 with manifest::check_backends, each backend
// against the probe of its own build. forced_major (12, 13) checks that backend's section only
// (a manifest without one fails, naming it); 0 checks all.
manifest::Report check_manifest(const manifest::Manifest& m, int forced_major, bool model_files);

// The manifest to check against, or nothing (options.verify off, or no manifest named and none
// shipped: then a NoManifest notice). Throws InputError when the manifest is invalid or a named one
// is missing.
std::optional<manifest::Manifest> manifest_to_verify(const ClassifierOptions& options);

// `model` (empty: the shipped one) loaded; with a manifest, each file it lists checked against its
// SHA-256 (InputError naming both digests when one differs).
LoadedModel load_verified_model(const std::filesystem::path& model, const manifest::Manifest* manifest);

// The model's input with options.preprocessing applied. Throws OptionError.
InputSpec effective_input(const PreprocessingOverrides& overrides, const InputSpec& model);

// options.max_batch, or the largest batch within options.max_memory (a BatchReduced notice). Throws
// OptionError for max_batch < 1, MemoryLimitError when one sample is over the limit.
int batch_within_memory_limit(const ClassifierOptions& options, const LoadedModel& model);

// The backend for options.device. Device::Auto falls back to the CPU (a CpuFallback notice) when
// the manifest check fails or the GPU backend cannot be set up; Device::Gpu throws
// GpuUnavailableError or GpuError instead. The network must outlive the backend.
std::unique_ptr<Backend> choose_backend(const ClassifierOptions& options, const Network& network, int batch,
                                        const manifest::Manifest* manifest);

// Held while a Classifier is built and while the environment is checked or written: the probe's
// cache and the child processes of isolated.h (the probe, the GPU module's trial load) are not for
// two threads at once.
std::mutex& setup_mutex();

// Calls options.notice, if set.
void notify(const ClassifierOptions& options, const Notice& notice);

}  // namespace infer::api
