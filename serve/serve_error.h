// The error a request gets: a kind that each protocol maps to its own status (http_status.h,
// and gRPC's codes), and a message for the client, one line.
#pragma once

#include <string>

#include "infer/errors.h"

namespace infer::serve {

enum class ErrorKind {
  InvalidArgument,  // malformed request, wrong datatype or shape, an image that does not decode: HTTP 400
  NotFound,         // unknown model or version: HTTP 404
  TooLarge,         // the request body is over --max-request-bytes: HTTP 413
  Unavailable,      // the model's queue is full, or the server is draining: HTTP 503
  Internal,         // the backend failed (GpuError): HTTP 500
};

class ServeError : public Error {
 public:
  ServeError(ErrorKind kind, const std::string& message) : Error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

inline ServeError invalid(const std::string& message) { return {ErrorKind::InvalidArgument, message}; }

// A port cannot be listened on (in use, not permitted, an address that is not this machine's).
class ListenError : public Error {
 public:
  using Error::Error;
};

}  // namespace infer::serve
