// Reading and writing strided FLOAT / HALF tensors; layout predicates used by the support rules.
#include <cstring>
#include <sstream>

#include "tests/standin/cudnn/cudnn_internal.h"
#include "tests/standin/half.h"

namespace standin_cudnn {

std::size_t element_size(cudnnDataType_t type) {
  switch (type) {
    case CUDNN_DATA_FLOAT: return 4;
    case CUDNN_DATA_HALF: return 2;
    default: return 0;
  }
}

bool computable(cudnnDataType_t type) { return element_size(type) != 0; }

std::int64_t element_count(const Tensor& t) {
  std::int64_t n = 1;
  for (int i = 0; i < t.nb; ++i) n *= t.dim[i];
  return n;
}

std::size_t extent_bytes(const Tensor& t) {
  std::int64_t last = 0;
  for (int i = 0; i < t.nb; ++i) last += (t.dim[i] - 1) * t.stride[i];
  return static_cast<std::size_t>(last + 1) * element_size(t.type);
}

bool same_dims(const Tensor& a, const Tensor& b) {
  if (a.nb != b.nb) return false;
  for (int i = 0; i < a.nb; ++i) {
    if (a.dim[i] != b.dim[i]) return false;
  }
  return true;
}

bool same_strides(const Tensor& a, const Tensor& b) {
  if (a.nb != b.nb) return false;
  for (int i = 0; i < a.nb; ++i) {
    if (a.stride[i] != b.stride[i]) return false;
  }
  return true;
}

bool is_packed_nchw(const Tensor& t) {
  return t.nb == 4 && t.stride[3] == 1 && t.stride[2] == t.dim[3] && t.stride[1] == std::int64_t{t.dim[2]} * t.dim[3] &&
         t.stride[0] == std::int64_t{t.dim[1]} * t.dim[2] * t.dim[3];
}

bool is_packed_nhwc(const Tensor& t) {
  return t.nb == 4 && t.stride[1] == 1 && t.stride[3] == t.dim[1] && t.stride[2] == std::int64_t{t.dim[3]} * t.dim[1] &&
         t.stride[0] == std::int64_t{t.dim[1]} * t.dim[2] * t.dim[3];
}

bool is_hw_packed(const Tensor& t) { return t.nb == 4 && t.stride[3] == 1 && t.stride[2] == t.dim[3]; }

std::string describe(const Tensor& t) {
  std::ostringstream s;
  s << (t.type == CUDNN_DATA_HALF    ? "HALF"
        : t.type == CUDNN_DATA_FLOAT ? "FLOAT"
                                     : "type " + std::to_string(t.type))
    << " [";
  for (int i = 0; i < t.nb; ++i) s << (i ? "," : "") << t.dim[i];
  s << "] strides [";
  for (int i = 0; i < t.nb; ++i) s << (i ? "," : "") << t.stride[i];
  s << "]";
  return s.str();
}

std::vector<std::int64_t> offsets(const Tensor& t) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(element_count(t)));
  int index[CUDNN_DIM_MAX] = {};
  const int last = t.nb - 1;
  std::size_t i = 0;
  while (i < out.size()) {
    std::int64_t base = 0;
    for (int d = 0; d < last; ++d) base += index[d] * t.stride[d];
    for (int k = 0; k < t.dim[last]; ++k) out[i++] = base + k * t.stride[last];
    for (int d = last - 1; d >= 0; --d) {  // odometer over the outer dimensions
      if (++index[d] < t.dim[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

std::vector<float> load(const Tensor& t, const void* base) {
  const std::vector<std::int64_t> at = offsets(t);
  std::vector<float> out(at.size());
  if (t.type == CUDNN_DATA_HALF) {
    const auto* p = static_cast<const std::uint16_t*>(base);
    for (std::size_t i = 0; i < at.size(); ++i) out[i] = standin::half_to_float(p[at[i]]);
  } else {
    const auto* p = static_cast<const float*>(base);
    for (std::size_t i = 0; i < at.size(); ++i) out[i] = p[at[i]];
  }
  return out;
}

void store_blend(const Tensor& t, void* base, const double* result, double alpha, double beta) {
  const std::vector<std::int64_t> at = offsets(t);
  if (t.type == CUDNN_DATA_HALF) {
    auto* p = static_cast<std::uint16_t*>(base);
    for (std::size_t i = 0; i < at.size(); ++i) {
      double v = alpha * result[i];
      if (beta != 0.0) v += beta * static_cast<double>(standin::half_to_float(p[at[i]]));
      p[at[i]] = standin::half_from_double(v);
    }
  } else {
    auto* p = static_cast<float*>(base);
    for (std::size_t i = 0; i < at.size(); ++i) {
      double v = alpha * result[i];
      if (beta != 0.0) v += beta * static_cast<double>(p[at[i]]);
      p[at[i]] = static_cast<float>(v);
    }
  }
}

double host_scalar(const char* call, const void* p, const char* arg) {
  standin::require_host(call, p, arg);
  float v = 0.0f;
  std::memcpy(&v, p, sizeof v);
  return static_cast<double>(v);
}

cudnnStatus_t check_tensor(const char* call, cudnnTensorDescriptor_t desc, const char* arg) {
  if (desc == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, std::string(arg) + " is NULL");
  if (!desc->value.set) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, std::string(arg) + " was created but never set");
  }
  if (!computable(desc->value.type)) {
    return fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                std::string(arg) + " has data type " + std::to_string(desc->value.type) +
                    "; the stand-in computes with CUDNN_DATA_FLOAT and CUDNN_DATA_HALF only");
  }
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace standin_cudnn
