// Tensor data in its binary forms, shared by both transports: HTTP's binary tensor extension and
// gRPC's raw_input_contents / raw_output_contents use the same layouts.
//   FP32   the elements' little-endian bytes, row-major
//   BYTES  per element, its length as a 4-byte little-endian integer, then its bytes
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "serve/tensors.h"

namespace infer::serve {

// Tensors of more dimensions than this are refused (the models here take 4 or 2).
constexpr std::size_t kMaxTensorRank = 8;

// What one request may hold, from the model it is for (ServedModel::limits): a tensor whose shape
// says more elements is refused before its data is read or copied, and JSON with more values than
// the tensors could hold is refused while it is parsed, so that a request costs memory in proportion
// to what the model can run, not to what the client declares.
struct RequestLimits {
  std::size_t fp32_elements = std::size_t{1} << 40;   // an FP32 input's elements
  std::size_t bytes_elements = std::size_t{1} << 40;  // a BYTES input's elements
};

// "[1, 3, 224, 224]": a shape in a message.
std::string shape_text(const std::vector<std::int64_t>& shape);

// Throws ServeError (InvalidArgument) naming `where` when `count` elements of `datatype` are over the limits.
void check_element_count(const std::string& datatype, std::size_t count, const RequestLimits& limits,
                         const std::string& where);

// The number of elements of a shape: at most kMaxTensorRank sizes, none negative, their product at
// most 2^40. Throws ServeError (InvalidArgument) naming `where` otherwise.
std::size_t element_count(const std::vector<std::int64_t>& shape, const std::string& where);

// Fills t.fp32 or t.bytes (by t.datatype) from `data`, which must hold exactly `count` elements.
// Throws ServeError (InvalidArgument) naming `where`; never reads outside `data`.
void read_binary_tensor(InputTensor& t, std::string_view data, std::size_t count, const std::string& where);

// Appends an output's elements in binary.
void append_binary_tensor(const OutputTensor& t, std::string& out);

}  // namespace infer::serve
