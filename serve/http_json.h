// The HTTP/REST form of the open inference protocol's infer request and response: a JSON object,
// optionally followed by binary tensor data (Triton's binary tensor extension). The JSON part's
// length is the Inference-Header-Content-Length header; tensors whose parameters carry
// "binary_data_size" are read from the bytes after it, in the order of the inputs.
//
// Binary layouts: FP32 is the elements' little-endian bytes, row-major; BYTES is, per element, its
// length as a 4-byte little-endian integer and then its bytes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "serve/tensor_data.h"
#include "serve/tensors.h"

namespace infer::serve {

// Parses an infer request's body. header_length: the Inference-Header-Content-Length value (absent:
// the whole body is JSON). model and version come from the URL; limits from the model. Throws
// ServeError (InvalidArgument) naming the problem; never reads outside `body`, never recurses with the
// client's nesting.
InferRequest parse_infer_request(std::string_view body, std::optional<std::size_t> header_length,
                                 const std::string& model, const std::string& version,
                                 const RequestLimits& limits = {});

// A response body: JSON, then the binary outputs' bytes when any output is binary. header_length is
// the JSON part's length (the Inference-Header-Content-Length to send), 0 when there is no binary part.
struct HttpBody {
  std::string body;
  std::size_t header_length = 0;
};
HttpBody encode_infer_response(const InferResponse& response);

// The protocol's error object: {"error": "<message>"}.
std::string error_json(const std::string& message);

}  // namespace infer::serve
