// Typed errors thrown by the engine. Only app/ turns them into messages and exit codes.
#pragma once

#include <stdexcept>
#include <string>

namespace infer {

// Base of every error the engine throws on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A file the user gave us (image, model TOML, weights, manifest) cannot be read or is invalid.
// what() is "<file>: <problem>", one line.
class InputError : public Error {
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
// path is refused without being opened for reading (input_file.h).
class NotRegularFileError : public InputError {
 public:
  using InputError::InputError;
};

// A network description that is inconsistent (shapes that do not chain, a weight of the wrong
// shape). Thrown while building a Network; the model loader rethrows it as an InputError.
class ModelError : public Error {
 public:
  using Error::Error;
};

// The GPU backend cannot be used on this machine: no driver, no device, the backend library or
// one of its dependencies cannot be loaded. what() says why, in one line.
class GpuUnavailableError : public Error {
 public:
  using Error::Error;
};

// A CUDA or cuDNN call failed while the GPU backend was in use. what() names the call, the layer
// and the library's own error string.
class GpuError : public Error {
 public:
  using Error::Error;
};

}  // namespace infer
