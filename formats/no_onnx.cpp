// ONNX import in a build without protobuf (the Windows build): an ONNX model is recognised
// (onnx_model.h, looks_like_onnx) and refused with the way out.
#include "infer/errors.h"
#include "formats/onnx_model.h"

namespace infer {

std::vector<OnnxOp> onnx_ops() { return {}; }

OnnxModel read_onnx(const std::filesystem::path& path) {
  throw InputError(path.u8string(),
                   "is an ONNX model, which this build cannot read (it was built without protobuf, as the "
                   "Windows build is); use the Linux build, or export the model in infer's own format "
                   "(a model TOML and safetensors, docs/deploy-your-model.md)");
}

}  // namespace infer
