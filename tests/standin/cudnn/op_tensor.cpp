// cudnnOpTensor: C = op(alpha1 * A, alpha2 * B) + beta * C, B broadcast along its dimensions of 1.
//
// Written from the cuDNN API reference's entries for cudnnOpTensor, cudnnOpTensorOp_t and
// cudnnNanPropagation_t (the quoted sentences below are the reference's). The data type rules are the
// reference's "Supported Datatypes" table restricted to the two types the stand-in computes: A and B
// of one type, FLOAT or HALF; C FLOAT or HALF; opTensorCompType FLOAT. Every value is computed in
// double from the operands as stored and rounded once into C's type (cudnn_internal.h).
#include <cmath>
#include <string>

#include "tests/standin/call_count.h"
#include "tests/standin/cudnn/cudnn_internal.h"

using namespace standin_cudnn;

namespace {

// op(a, b). ADD and MUL are arithmetic: a NaN operand gives NaN whatever opTensorNanOpt says (no
// documented rule turns a NaN sum into a number). MIN and MAX follow opTensorNanOpt, as
// cudnnNanPropagation_t describes it: CUDNN_PROPAGATE_NAN returns NaN when either operand is NaN;
// CUDNN_NOT_PROPAGATE_NAN returns the other operand (NaN only when both are), as fmin / fmax do.
double apply(const OpTensor& o, double a, double b) {
  switch (o.op) {
    case CUDNN_OP_TENSOR_ADD: return a + b;
    case CUDNN_OP_TENSOR_MUL: return a * b;
    case CUDNN_OP_TENSOR_MIN:
    case CUDNN_OP_TENSOR_MAX:
      if (std::isnan(a) || std::isnan(b)) {
        if (o.nan == CUDNN_PROPAGATE_NAN) return std::isnan(a) ? a : b;
        return std::isnan(a) ? b : a;
      }
      if (o.op == CUDNN_OP_TENSOR_MIN) return b < a ? b : a;
      return b > a ? b : a;
    case CUDNN_OP_TENSOR_SQRT:
    case CUDNN_OP_TENSOR_NOT: break;  // refused before anything is enqueued
  }
  return std::nan("");
}

// Whether an operand that aliases C is described exactly as C is: the reference allows in-place
// use of "the same tensor", and the stand-in reads a differently described alias as a misuse.
bool same_tensor(const Tensor& x, const Tensor& c) { return same_dims(x, c) && same_strides(x, c) && x.type == c.type; }

}  // namespace

extern "C" {

// cudnnOpTensor(): C = op(alpha1 * A, alpha2 * B) + beta * C; beta = 0 never reads C.
//   BAD_PARAM: handle or opTensorDesc NULL or unset; a tensor descriptor NULL or unset; different
//   numbers of dimensions; a dimension of A that differs from C's, or of B that is neither C's nor 1;
//   A and B of different data types, or DOUBLE on one side of C only ("If the data type of the
//   destination tensor C is double, then the data type of the input tensors also must be double");
//   B == C while A != C ("If the input tensor B is the same tensor as the destination tensor C, then
//   the input tensor A also must be the same tensor as the destination tensor C"); an operand that
//   aliases C with other dimensions, strides or data type (the stand-in's reading of "same tensor").
//   NOT_SUPPORTED: more than 5 dimensions; opTensorCompType other than FLOAT for FLOAT / HALF data
//   ("opTensorCompType is not set as stated above"); CUDNN_OP_TENSOR_SQRT and CUDNN_OP_TENSOR_NOT,
//   and data types other than FLOAT and HALF (the stand-in computes none of these).
cudnnStatus_t cudnnOpTensor(cudnnHandle_t handle, const cudnnOpTensorDescriptor_t opTensorDesc, const void* alpha1,
                            const cudnnTensorDescriptor_t aDesc, const void* A, const void* alpha2,
                            const cudnnTensorDescriptor_t bDesc, const void* B, const void* beta,
                            const cudnnTensorDescriptor_t cDesc, void* C) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnOpTensor";
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "handle is NULL");
  if (opTensorDesc == nullptr || !opTensorDesc->value.set) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "opTensorDesc is NULL or not set");
  }
  const OpTensor o = opTensorDesc->value;
  if (o.op == CUDNN_OP_TENSOR_SQRT || o.op == CUDNN_OP_TENSOR_NOT) {
    return fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                std::string(o.op == CUDNN_OP_TENSOR_SQRT ? "CUDNN_OP_TENSOR_SQRT" : "CUDNN_OP_TENSOR_NOT") +
                    " is not implemented by the stand-in (ADD, MUL, MIN and MAX are)");
  }
  const struct {
    cudnnTensorDescriptor_t desc;
    const char* name;
  } descs[] = {{aDesc, "aDesc"}, {bDesc, "bDesc"}, {cDesc, "cDesc"}};
  for (const auto& d : descs) {
    if (d.desc == nullptr || !d.desc->value.set) return check_tensor(call, d.desc, d.name);  // BAD_PARAM
  }
  const Tensor at = aDesc->value, bt = bDesc->value, ct = cDesc->value;
  if (at.nb > 5 || bt.nb > 5 || ct.nb > 5) {
    return fail(CUDNN_STATUS_NOT_SUPPORTED, call, "more than 5 dimensions (cDesc " + describe(ct) + ")");
  }
  if (at.nb != ct.nb || bt.nb != ct.nb) {
    return fail(CUDNN_STATUS_BAD_PARAM, call,
                "aDesc, bDesc and cDesc have " + std::to_string(at.nb) + ", " + std::to_string(bt.nb) + " and " +
                    std::to_string(ct.nb) + " dimensions; they must have as many");
  }
  if (!same_dims(at, ct)) {
    return fail(CUDNN_STATUS_BAD_PARAM, call,
                "aDesc " + describe(at) + " must have the dimensions of cDesc " + describe(ct));
  }
  for (int i = 0; i < ct.nb; ++i) {
    if (bt.dim[i] != ct.dim[i] && bt.dim[i] != 1) {
      return fail(CUDNN_STATUS_BAD_PARAM, call,
                  "dimension " + std::to_string(i) + " of B is " + std::to_string(bt.dim[i]) + "; it must be 1 or " +
                      std::to_string(ct.dim[i]) + " (C's)");
    }
  }
  if (at.type != bt.type) {
    return fail(CUDNN_STATUS_BAD_PARAM, call,
                "aDesc " + describe(at) + " and bDesc " + describe(bt) + " must have the same data type");
  }
  if ((at.type == CUDNN_DATA_DOUBLE) != (ct.type == CUDNN_DATA_DOUBLE)) {
    return fail(
        CUDNN_STATUS_BAD_PARAM, call,
        "DOUBLE data must be DOUBLE in A, B and C alike (aDesc " + describe(at) + ", cDesc " + describe(ct) + ")");
  }
  if (cudnnStatus_t s = check_tensor(call, aDesc, "aDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  if (cudnnStatus_t s = check_tensor(call, cDesc, "cDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  if (o.compute != CUDNN_DATA_FLOAT) {
    return fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                "opTensorCompType is " + std::to_string(o.compute) +
                    "; FLOAT and HALF data take CUDNN_DATA_FLOAT (cudnnSetOpTensorDescriptor)");
  }
  if (B == C && A != C) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "B is C (in place) but A is not; B == C needs A == C as well");
  }
  if (A == C && !same_tensor(at, ct)) {
    return fail(CUDNN_STATUS_BAD_PARAM, call,
                "A is C (in place) but aDesc " + describe(at) + " differs from cDesc " + describe(ct));
  }
  if (B == C && !same_tensor(bt, ct)) {
    return fail(CUDNN_STATUS_BAD_PARAM, call,
                "B is C (in place) but bDesc " + describe(bt) + " differs from cDesc " + describe(ct));
  }
  const double a1 = host_scalar(call, alpha1, "alpha1");
  const double a2 = host_scalar(call, alpha2, "alpha2");
  const double b = host_scalar(call, beta, "beta");
  const int e = standin::enqueue(
      stream_of(handle), call, {{A, extent_bytes(at), "A"}, {B, extent_bytes(bt), "B"}, {C, extent_bytes(ct), "C"}},
      [o, at, bt, ct, A, B, C, a1, a2, b] {
        // Both operands are read before C is written: in-place use sees the prior values.
        const std::vector<float> av = load(at, A), bv = load(bt, B);
        std::vector<double> out(av.size());
        int index[CUDNN_DIM_MAX] = {};  // C's (and A's) logical index of element i
        for (std::size_t i = 0; i < out.size(); ++i) {
          std::size_t j = 0;  // B's element for that index, in B's logical order
          for (int d = 0; d < bt.nb; ++d) {
            j = j * static_cast<std::size_t>(bt.dim[d]) + (bt.dim[d] == 1 ? 0 : static_cast<std::size_t>(index[d]));
          }
          out[i] = apply(o, a1 * static_cast<double>(av[i]), a2 * static_cast<double>(bv[j]));
          for (int d = ct.nb - 1; d >= 0; --d) {
            if (++index[d] < ct.dim[d]) break;
            index[d] = 0;
          }
        }
        store_blend(ct, C, out.data(), 1.0, b);
      });
  return e == 0 ? CUDNN_STATUS_SUCCESS : cuda_failure(e, call);
}

}  // extern "C"
