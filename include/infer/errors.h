// The errors the library throws, all derived from infer::Error (itself a std::runtime_error).
// Part of the public API (<infer/errors.h>). what() is one line ("<file>: <problem>" for a file's
// errors), except a GpuUnavailableError for Device::Gpu on a machine that fails its manifest check,
// which adds the check's table below its first line.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "infer/export.h"

namespace infer {

// Base of every error the engine throws on purpose.
class INFER_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A file the user gave us (image, model TOML, weights, manifest) cannot be read or is invalid.
// what() is "<file>: <problem>", one line.
class INFER_API InputError : public Error {
 public:
  InputError(const std::string& file, const std::string& problem)
      : Error(file + ": " + problem), file_(file), problem_(problem) {}
  const std::string& file() const { return file_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string file_;
  std::string problem_;
};

// A path the user named is not a regular file: a directory, a FIFO, a device, a socket. Such a
// path is refused without being opened for reading.
class INFER_API NotRegularFileError : public InputError {
 public:
  using InputError::InputError;
};

// The GPU backend cannot be used on this machine: no driver, no device, the backend library or
// one of its dependencies cannot be loaded. what() says why, in one line.
class INFER_API GpuUnavailableError : public Error {
 public:
  using Error::Error;
};

// A CUDA or cuDNN call failed while the GPU backend was in use. what() names the call, the layer
// and the library's own error string.
class INFER_API GpuError : public Error {
 public:
  using Error::Error;
};

// A ClassifierOptions value the library cannot use with this model (a mean with the wrong number
// of channels, a crop size smaller than the input, a batch of 0, k < 1). option(): the member's name
// in ClassifierOptions ("preprocessing.mean", "max_batch"; "k" for the argument of classify());
// problem(): what is wrong with it. what() is "<option>: <problem>".
class INFER_API OptionError : public Error {
 public:
  OptionError(const std::string& option, const std::string& problem)
      : Error(option + ": " + problem), option_(option), problem_(problem) {}
  const std::string& option() const { return option_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string option_;
  std::string problem_;
};

// The model needs more memory for one sample than ClassifierOptions::max_memory allows (a larger
// batch is made smaller instead, with a notice). file(): the model; problem(): the sizes, neutral
// wording. needed() is the bytes of one sample, limit() the limit, breakdown() the parts of needed()
// ("parameters 1.6 MiB, activations 0.5 MiB, workspace 0 B").
class INFER_API MemoryLimitError : public InputError {
 public:
  MemoryLimitError(const std::string& file, const std::string& problem, std::uint64_t needed, std::uint64_t limit,
                   std::string breakdown)
      : InputError(file, problem), needed_(needed), limit_(limit), breakdown_(std::move(breakdown)) {}
  std::uint64_t needed() const { return needed_; }
  std::uint64_t limit() const { return limit_; }
  const std::string& breakdown() const { return breakdown_; }

 private:
  std::uint64_t needed_;
  std::uint64_t limit_;
  std::string breakdown_;
};

}  // namespace infer
