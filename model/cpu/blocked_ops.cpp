// Max pooling, per-channel affine (batch-norm), ReLU and layout changes on the channel-blocked
// layout (blocked.h). The element-wise kernels work on whole 16-channel vectors.

#include <algorithm>
#include <limits>

#include "avx512.h"
#include "blocked.h"

namespace infer::cpu {

INFER_AVX512 void maxpool_blocked(const Pool2dAttrs& a, const BlockedShape& in_shape, const float* in,
                                  const BlockedShape& out_shape, float* out) {
  const __m512 nan = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
  for (int block = 0; block < out_shape.blocks; ++block) {
    for (int oy = 0; oy < out_shape.h; ++oy) {
      const int y0 = oy * a.stride_h - a.pad_h;
      const int y_lo = std::max(y0, 0), y_hi = std::min(y0 + a.kernel_h, in_shape.h);
      for (int ox = 0; ox < out_shape.w; ++ox) {
        const int x0 = ox * a.stride_w - a.pad_w;
        const int x_lo = std::max(x0, 0), x_hi = std::min(x0 + a.kernel_w, in_shape.w);
        __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());  // padding never wins
        __mmask16 has_nan = 0;
        for (int y = y_lo; y < y_hi; ++y) {
          const float* row = in + in_shape.at(block, y, 0);
          for (int x = x_lo; x < x_hi; ++x) {
            const __m512 v = _mm512_loadu_ps(row + x * kLanes);
            has_nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
            m = _mm512_max_ps(m, v);
          }
        }
        // NaN propagates, as in the plain kernel, PyTorch and cuDNN.
        _mm512_storeu_ps(out + out_shape.at(block, oy, ox), _mm512_mask_mov_ps(m, has_nan, nan));
      }
    }
  }
}

INFER_AVX512 void affine_blocked(const std::vector<float>& scale, const std::vector<float>& shift, bool relu,
                                 const BlockedShape& in_shape, const float* in, const BlockedShape& out_shape,
                                 float* out) {
  const __m512 zero = _mm512_setzero_ps();
  for (int block = 0; block < in_shape.blocks; ++block) {
    const __m512 s = _mm512_loadu_ps(scale.data() + block * kLanes);
    const __m512 t = _mm512_loadu_ps(shift.data() + block * kLanes);
    for (int y = 0; y < in_shape.h; ++y) {
      const float* x = in + in_shape.at(block, y, 0);
      float* o = out + out_shape.at(block, y, 0);
      for (int i = 0; i < in_shape.w; ++i) {
        __m512 v = _mm512_fmadd_ps(_mm512_loadu_ps(x + i * kLanes), s, t);
        if (relu) v = _mm512_max_ps(zero, v);  // NaN propagates (second operand)
        _mm512_storeu_ps(o + i * kLanes, v);
      }
    }
  }
}

INFER_AVX512 void relu_blocked(const BlockedShape& in_shape, const float* in, const BlockedShape& out_shape,
                               float* out) {
  const __m512 zero = _mm512_setzero_ps();
  for (int block = 0; block < in_shape.blocks; ++block) {
    for (int y = 0; y < in_shape.h; ++y) {
      const float* x = in + in_shape.at(block, y, 0);
      float* o = out + out_shape.at(block, y, 0);
      for (int i = 0; i < in_shape.w; ++i) _mm512_storeu_ps(o + i * kLanes, _mm512_max_ps(zero, _mm512_loadu_ps(x + i * kLanes)));
    }
  }
}

void to_blocked(const float* nchw, int channels, const BlockedShape& shape, float* out) {
  for (int c = 0; c < channels; ++c) {
    const int block = c / shape.cb, lane = c % shape.cb;
    for (int y = 0; y < shape.h; ++y) {
      const float* src = nchw + (static_cast<std::size_t>(c) * shape.h + y) * shape.w;
      float* dst = out + shape.at(block, y, 0) + lane;
      for (int x = 0; x < shape.w; ++x) dst[static_cast<std::size_t>(x) * shape.cb] = src[x];
    }
  }
}

void from_blocked(const BlockedShape& shape, const float* in, int channels, float* nchw) {
  for (int c = 0; c < channels; ++c) {
    const int block = c / shape.cb, lane = c % shape.cb;
    for (int y = 0; y < shape.h; ++y) {
      const float* src = in + shape.at(block, y, 0) + lane;
      float* dst = nchw + (static_cast<std::size_t>(c) * shape.h + y) * shape.w;
      for (int x = 0; x < shape.w; ++x) dst[x] = src[static_cast<std::size_t>(x) * shape.cb];
    }
  }
}

}  // namespace infer::cpu
