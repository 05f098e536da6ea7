// A request and its response on the open inference protocol (KServe v2), as both transports
// (HTTP/REST: http_json.h; gRPC) hand them to a model (served_model.h): parsed, owned, checked for
// form but not yet against the model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace infer::serve {

// One input tensor. The protocol's datatypes are names ("FP32", "BYTES", "INT64", ...); a model
// takes FP32 or BYTES, and says so by name for any other.
struct InputTensor {
  std::string name;
  std::string datatype;
  std::vector<std::int64_t> shape;
  std::vector<float> fp32;         // FP32: the elements, row-major
  std::vector<std::string> bytes;  // BYTES: one string per element (an encoded image)
};

// An output the client asked for: by name, as scores or as the classification extension's
// "score:index[:label]" strings (classification > 0: that many per sample), binary or in JSON.
struct RequestedOutput {
  std::string name;
  int classification = 0;
  bool binary = false;
};

struct InferRequest {
  std::string model;
  std::string version;  // empty: the model's only version
  std::string id;       // echoed in the response
  std::vector<InputTensor> inputs;
  std::vector<RequestedOutput> outputs;  // empty: every output, binary as binary_output says
  bool binary_output = false;            // HTTP's "binary_data_output" request parameter
};

struct OutputTensor {
  std::string name;
  std::string datatype;  // "FP32" or "BYTES"
  std::vector<std::int64_t> shape;
  std::vector<float> fp32;
  std::vector<std::string> bytes;
  bool binary = false;  // HTTP: sent after the JSON header rather than in it
};

struct InferResponse {
  std::string model;
  std::string version;
  std::string id;
  std::vector<OutputTensor> outputs;
};

}  // namespace infer::serve
