// The gRPC form of the open inference protocol's infer request and response (inference.proto),
// to and from the transport-neutral ones (tensors.h). Input data comes from raw_input_contents (one
// entry per input, tensor_data.h's layouts: what tritonclient sends) or from each input's typed
// contents; outputs go out as raw_output_contents, as Triton sends them.
#pragma once

#include "inference.pb.h"
#include "serve/tensor_data.h"
#include "serve/tensors.h"

namespace infer::serve {

// Throws ServeError (InvalidArgument) naming the problem; limits from the model (tensor_data.h).
InferRequest from_proto(const inference::ModelInferRequest& request, const RequestLimits& limits);
void to_proto(const InferResponse& response, inference::ModelInferResponse& out);

}  // namespace infer::serve
