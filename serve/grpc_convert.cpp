#include "serve/grpc_convert.h"

#include "serve/serve_error.h"
#include "serve/tensor_data.h"

namespace infer::serve {
namespace {

std::string where_of(const std::string& kind, const std::string& name) {
  std::string printable;
  for (char c : name.substr(0, 64)) printable += (c >= 0x20 && c < 0x7f) ? c : '?';
  return kind + " \"" + printable + "\"";
}

}  // namespace

InferRequest from_proto(const inference::ModelInferRequest& request, const RequestLimits& limits) {
  InferRequest r;
  r.model = request.model_name();
  r.version = request.model_version();
  r.id = request.id();
  if (request.inputs().empty()) throw invalid("request: no inputs");
  const bool raw = !request.raw_input_contents().empty();
  if (raw && request.raw_input_contents_size() != request.inputs_size())
    throw invalid("request: " + std::to_string(request.raw_input_contents_size()) + " raw_input_contents for " +
                  std::to_string(request.inputs_size()) + " inputs");
  for (int i = 0; i < request.inputs_size(); ++i) {
    const auto& in = request.inputs(i);
    InputTensor t;
    t.name = in.name();
    t.datatype = in.datatype();
    const std::string where = where_of("input", t.name);
    t.shape.assign(in.shape().begin(), in.shape().end());
    const std::size_t count = element_count(t.shape, where);
    if (t.datatype != "FP32" && t.datatype != "BYTES")
      throw invalid(where + ": datatype " + where_of("", t.datatype).substr(1) +
                    " is not taken here: FP32 tensors or BYTES images");
    check_element_count(t.datatype, count, limits, where);
    if (raw) {
      if (in.has_contents()) throw invalid(where + ": both contents and raw_input_contents are given");
      read_binary_tensor(t, request.raw_input_contents(i), count, where);
    } else if (t.datatype == "FP32") {
      if (static_cast<std::size_t>(in.contents().fp32_contents_size()) != count)
        throw invalid(where + ": fp32_contents has " + std::to_string(in.contents().fp32_contents_size()) +
                      " elements, its shape says " + std::to_string(count));
      t.fp32.assign(in.contents().fp32_contents().begin(), in.contents().fp32_contents().end());
    } else {
      if (static_cast<std::size_t>(in.contents().bytes_contents_size()) != count)
        throw invalid(where + ": bytes_contents has " + std::to_string(in.contents().bytes_contents_size()) +
                      " elements, its shape says " + std::to_string(count));
      t.bytes.assign(in.contents().bytes_contents().begin(), in.contents().bytes_contents().end());
    }
    r.inputs.push_back(std::move(t));
  }
  for (const auto& out : request.outputs()) {
    RequestedOutput o;
    o.name = out.name();
    o.binary = true;
    const auto k = out.parameters().find("classification");
    if (k != out.parameters().end()) {
      const inference::InferParameter& p = k->second;
      const std::int64_t v = p.has_int64_param() ? p.int64_param()
                             : p.has_uint64_param()
                                 ? static_cast<std::int64_t>(std::min<std::uint64_t>(p.uint64_param(), 1u << 30))
                                 : 0;
      if (v < 1 || v > 1'000'000)
        throw invalid(where_of("output", o.name) + ": classification must be a positive integer");
      o.classification = static_cast<int>(v);
    }
    r.outputs.push_back(std::move(o));
  }
  r.binary_output = true;
  return r;
}

void to_proto(const InferResponse& response, inference::ModelInferResponse& out) {
  out.set_model_name(response.model);
  out.set_model_version(response.version);
  out.set_id(response.id);
  for (const OutputTensor& t : response.outputs) {
    auto* o = out.add_outputs();
    o->set_name(t.name);
    o->set_datatype(t.datatype);
    for (std::int64_t d : t.shape) o->add_shape(d);
    append_binary_tensor(t, *out.add_raw_output_contents());
  }
}

}  // namespace infer::serve
