#include "serve/http_json.h"

#include <algorithm>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "serve/serve_error.h"
#include "serve/tensor_data.h"

namespace infer::serve {
namespace {

using nlohmann::json;

// The datatypes of the protocol (KServe v2 "Tensor Data Types"), for telling an unsupported one
// from a misspelled one.
bool is_protocol_datatype(const std::string& t) {
  static const char* const kTypes[] = {"BOOL",  "UINT8", "UINT16", "UINT32", "UINT64", "INT8",  "INT16",
                                       "INT32", "INT64", "FP16",   "FP32",   "FP64",   "BYTES", "BF16"};
  for (const char* k : kTypes) {
    if (t == k) return true;
  }
  return false;
}

std::string json_quoted(const std::string& s) {
  // A name from the client, in a message: JSON-escaped, so that it cannot break the message's line.
  return json(s).dump(-1, ' ', true, json::error_handler_t::replace);
}

const json* member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string string_member(const json& object, const char* key, const std::string& where, bool required) {
  const json* v = member(object, key);
  if (!v) {
    if (required) throw invalid(where + ": \"" + key + "\" is missing");
    return {};
  }
  if (!v->is_string()) throw invalid(where + ": \"" + key + "\" must be a string");
  return v->get<std::string>();
}

bool bool_parameter(const json* parameters, const char* key, const std::string& where) {
  if (!parameters) return false;
  const json* v = member(*parameters, key);
  if (!v) return false;
  if (!v->is_boolean()) throw invalid(where + ": parameter \"" + key + "\" must be true or false");
  return v->get<bool>();
}

const json* parameters_of(const json& object, const std::string& where) {
  const json* p = member(object, "parameters");
  if (p && !p->is_object()) throw invalid(where + ": \"parameters\" must be an object");
  return p;
}

// The shape as a list of integers, and its element count (tensor_data.h's rules).
std::vector<std::int64_t> parse_shape(const json& tensor, const std::string& where, std::size_t& count) {
  const json* s = member(tensor, "shape");
  if (!s) throw invalid(where + ": \"shape\" is missing");
  if (!s->is_array() || s->size() > kMaxTensorRank)
    throw invalid(where + ": \"shape\" must be a list of at most " + std::to_string(kMaxTensorRank) + " sizes");
  std::vector<std::int64_t> shape;
  for (const json& d : *s) {
    // The value's type, not its text: dump() recurses into whatever nesting the client sent.
    if (!d.is_number_integer())
      throw invalid(where + ": \"shape\" must hold non-negative integers, found " + std::string(d.type_name()));
    if (d.get<std::int64_t>() < 0)
      throw invalid(where + ": \"shape\" must hold non-negative integers, found " +
                    std::to_string(d.get<std::int64_t>()));
    shape.push_back(d.get<std::int64_t>());
  }
  count = element_count(shape, where);
  return shape;
}

// Flattens JSON data (flat, or nested as the shape) into `out` with `take`, depth-first; nesting
// deeper than the shape's rank is refused.
template <typename Take>
void flatten(const json& data, std::size_t depth, std::size_t max_depth, const std::string& where, Take&& take) {
  if (!data.is_array()) {
    take(data);
    return;
  }
  if (depth >= max_depth) throw invalid(where + ": \"data\" is nested deeper than its shape");
  for (const json& v : data) flatten(v, depth + 1, max_depth, where, take);
}

void read_json_data(InputTensor& t, const json& data, std::size_t count, const std::string& where) {
  if (!data.is_array()) throw invalid(where + ": \"data\" must be a list");
  const std::size_t depth = std::max<std::size_t>(t.shape.size(), 1);
  if (t.datatype == "FP32") {
    t.fp32.reserve(count);  // within the model's limits (check_element_count)
    flatten(data, 0, depth, where, [&](const json& v) {
      if (!v.is_number()) throw invalid(where + ": FP32 data must be numbers, found " + v.type_name());
      if (t.fp32.size() == count)
        throw invalid(where + ": \"data\" has more elements than its shape's " + std::to_string(count));
      t.fp32.push_back(v.get<float>());
    });
    if (t.fp32.size() != count)
      throw invalid(where + ": \"data\" has " + std::to_string(t.fp32.size()) + " elements, its shape says " +
                    std::to_string(count));
  } else {
    flatten(data, 0, depth, where, [&](const json& v) {
      if (!v.is_string()) throw invalid(where + ": BYTES data must be strings, found " + v.type_name());
      if (t.bytes.size() == count)
        throw invalid(where + ": \"data\" has more elements than its shape's " + std::to_string(count));
      t.bytes.push_back(v.get<std::string>());
    });
    if (t.bytes.size() != count)
      throw invalid(where + ": \"data\" has " + std::to_string(t.bytes.size()) + " elements, its shape says " +
                    std::to_string(count));
  }
}

}  // namespace

InferRequest parse_infer_request(std::string_view body, std::optional<std::size_t> header_length,
                                 const std::string& model, const std::string& version, const RequestLimits& limits) {
  const std::size_t json_size = header_length.value_or(body.size());
  if (json_size > body.size())
    throw invalid("Inference-Header-Content-Length is " + std::to_string(json_size) + " but the body has " +
                  std::to_string(body.size()) + " bytes");
  // Every JSON value costs tens of bytes parsed, a few in the text: the count is bounded by what the
  // model's tensors hold, plus room for the request's own fields, and checked as the parser goes.
  const std::size_t max_values = limits.fp32_elements + limits.bytes_elements + 4096;
  std::size_t values = 0;
  const json::parser_callback_t count_values = [&](int, json::parse_event_t event, json&) {
    if (event == json::parse_event_t::value && ++values > max_values)
      throw invalid("the request's JSON has more values than the model's batch holds (" + std::to_string(max_values) +
                    ")");
    return true;
  };
  const json doc =
      json::parse(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(json_size), count_values, false);
  if (doc.is_discarded()) throw invalid("the request is not valid JSON");
  if (!doc.is_object()) throw invalid("the request must be a JSON object");

  InferRequest r;
  r.model = model;
  r.version = version;
  r.id = string_member(doc, "id", "request", false);
  r.binary_output = bool_parameter(parameters_of(doc, "request"), "binary_data_output", "request");

  const json* inputs = member(doc, "inputs");
  if (!inputs || !inputs->is_array() || inputs->empty()) throw invalid("request: \"inputs\" must be a non-empty list");
  std::string_view binary = body.substr(json_size);
  for (const json& in : *inputs) {
    if (!in.is_object()) throw invalid("request: each input must be an object");
    InputTensor t;
    t.name = string_member(in, "name", "input", true);
    const std::string where = "input " + json_quoted(t.name);
    t.datatype = string_member(in, "datatype", where, true);
    std::size_t count = 0;
    t.shape = parse_shape(in, where, count);
    if (!is_protocol_datatype(t.datatype)) throw invalid(where + ": unknown datatype " + json_quoted(t.datatype));
    if (t.datatype != "FP32" && t.datatype != "BYTES")
      throw invalid(where + ": datatype " + t.datatype + " is not taken here: FP32 tensors or BYTES images");
    check_element_count(t.datatype, count, limits, where);
    const json* params = parameters_of(in, where);
    const json* size = params ? member(*params, "binary_data_size") : nullptr;
    const json* data = member(in, "data");
    if (size) {
      if (data) throw invalid(where + ": both \"data\" and binary_data_size are given");
      if (!size->is_number_integer() || size->get<std::int64_t>() < 0)
        throw invalid(where + ": binary_data_size must be a non-negative integer");
      const auto n = static_cast<std::uint64_t>(size->get<std::int64_t>());
      if (n > binary.size())
        throw invalid(where + ": binary_data_size is " + std::to_string(n) + " but only " +
                      std::to_string(binary.size()) + " bytes of binary data are left");
      read_binary_tensor(t, binary.substr(0, n), count, where);
      binary.remove_prefix(n);
    } else if (data) {
      read_json_data(t, *data, count, where);
    } else {
      throw invalid(where + ": neither \"data\" nor binary_data_size is given");
    }
    r.inputs.push_back(std::move(t));
  }
  if (!binary.empty())
    throw invalid("request: " + std::to_string(binary.size()) + " bytes of binary data are not claimed by any input");

  if (const json* outputs = member(doc, "outputs")) {
    if (!outputs->is_array()) throw invalid("request: \"outputs\" must be a list");
    for (const json& out : *outputs) {
      if (!out.is_object()) throw invalid("request: each output must be an object");
      RequestedOutput o;
      o.name = string_member(out, "name", "output", true);
      const std::string where = "output " + json_quoted(o.name);
      const json* params = parameters_of(out, where);
      const json* b = params ? member(*params, "binary_data") : nullptr;
      o.binary = b ? bool_parameter(params, "binary_data", where) : r.binary_output;
      if (const json* k = params ? member(*params, "classification") : nullptr) {
        if (!k->is_number_integer() || k->get<std::int64_t>() < 1 || k->get<std::int64_t>() > 1'000'000)
          throw invalid(where + ": classification must be a positive integer");
        o.classification = static_cast<int>(k->get<std::int64_t>());
      }
      r.outputs.push_back(std::move(o));
    }
  }
  return r;
}

HttpBody encode_infer_response(const InferResponse& response) {
  json doc = {{"model_name", response.model}, {"model_version", response.version}};
  if (!response.id.empty()) doc["id"] = response.id;
  json outputs = json::array();
  std::string binary;
  for (const OutputTensor& t : response.outputs) {
    json o = {{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}};
    if (t.binary) {
      const std::size_t before = binary.size();
      append_binary_tensor(t, binary);
      o["parameters"] = {{"binary_data_size", binary.size() - before}};
    } else if (t.datatype == "FP32") {
      o["data"] = t.fp32;
    } else {
      o["data"] = t.bytes;
    }
    outputs.push_back(std::move(o));
  }
  doc["outputs"] = std::move(outputs);
  HttpBody out;
  // Labels come from model files: invalid UTF-8 in one is replaced, not thrown on.
  out.body = doc.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!binary.empty() ||
      std::any_of(response.outputs.begin(), response.outputs.end(), [](const OutputTensor& t) { return t.binary; })) {
    out.header_length = out.body.size();
    out.body += binary;
  }
  return out;
}

std::string error_json(const std::string& message) {
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace infer::serve
