// Fully connected layer with AVX-512F for the few samples of one chunk: out[m, O] = in[m, I] x W^T + b.
//
// The weights are packed once as [O/48 groups][I][48] (zero-padded), so one tile keeps MS x NB
// accumulators (at most 8 samples x 3 vectors of 16 outputs = 24 registers) and, per input
// feature, loads NB weight vectors and broadcasts one input per sample. Each weight is read once
// per chunk. OpenBLAS 0.3.21 does not know this CPU and its fallback kernel was 14% of the time.

#include <algorithm>
#include <stdexcept>

#include "avx512.h"
#include "blocked.h"

namespace infer::cpu {
namespace {

constexpr int kGroupVectors = 3;
constexpr int kGroupOutputs = kGroupVectors * kLanes;

template <int MS, int NB>
INFER_AVX512 void linear_tile(const float* x, int in, const float* w, const float* bias, float* y, int out, int outputs) {
  __m512 acc[MS][NB];
  for (int nb = 0; nb < NB; ++nb) {
    const __m512 b = _mm512_loadu_ps(bias + nb * kLanes);
    for (int s = 0; s < MS; ++s) acc[s][nb] = b;
  }
  for (int i = 0; i < in; ++i, w += kGroupOutputs) {
    __m512 wv[NB];
    for (int nb = 0; nb < NB; ++nb) wv[nb] = _mm512_loadu_ps(w + nb * kLanes);
    for (int s = 0; s < MS; ++s) {
      const __m512 xv = _mm512_set1_ps(x[static_cast<std::size_t>(s) * in + i]);
      for (int nb = 0; nb < NB; ++nb) acc[s][nb] = _mm512_fmadd_ps(xv, wv[nb], acc[s][nb]);
    }
  }
  for (int nb = 0; nb < NB; ++nb) {
    const int left = outputs - nb * kLanes;  // outputs of this group still to store
    const __mmask16 mask = left >= kLanes ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
    for (int s = 0; s < MS; ++s) _mm512_mask_storeu_ps(y + static_cast<std::size_t>(s) * out + nb * kLanes, mask, acc[s][nb]);
  }
}

template <int MS>
void linear_group(const float* x, int in, const float* w, const float* bias, float* y, int out, int outputs) {
  const int nb = (outputs + kLanes - 1) / kLanes;
  if (nb == 3) linear_tile<MS, 3>(x, in, w, bias, y, out, outputs);
  else if (nb == 2) linear_tile<MS, 2>(x, in, w, bias, y, out, outputs);
  else linear_tile<MS, 1>(x, in, w, bias, y, out, outputs);
}

using GroupFn = void (*)(const float*, int, const float*, const float*, float*, int, int);
constexpr GroupFn kGroups[] = {linear_group<1>, linear_group<2>, linear_group<3>, linear_group<4>,
                               linear_group<5>, linear_group<6>, linear_group<7>, linear_group<8>};
constexpr int kMaxTileSamples = 8;

}  // namespace

PackedLinear pack_linear(const Layer& layer) {
  PackedLinear p;
  p.in = layer.in.c;
  p.out = layer.out.c;
  const int groups = (p.out + kGroupOutputs - 1) / kGroupOutputs;
  p.weight.assign(static_cast<std::size_t>(groups) * p.in * kGroupOutputs, 0.0f);
  p.bias.assign(static_cast<std::size_t>(groups) * kGroupOutputs, 0.0f);
  for (int o = 0; o < p.out; ++o) {
    const std::size_t base = static_cast<std::size_t>(o / kGroupOutputs) * p.in * kGroupOutputs + o % kGroupOutputs;
    for (int i = 0; i < p.in; ++i) {
      p.weight[base + static_cast<std::size_t>(i) * kGroupOutputs] = layer.params.weight[static_cast<std::size_t>(o) * p.in + i];
    }
    if (layer.linear().bias) p.bias[static_cast<std::size_t>(o)] = layer.params.bias[static_cast<std::size_t>(o)];
  }
  return p;
}

void linear_packed(const PackedLinear& l, const float* in, int n, float* out) {
  for (int s0 = 0; s0 < n; s0 += kMaxTileSamples) {
    const int ms = std::min(kMaxTileSamples, n - s0);
    const float* x = in + static_cast<std::size_t>(s0) * l.in;
    float* y = out + static_cast<std::size_t>(s0) * l.out;
    for (int o0 = 0; o0 < l.out; o0 += kGroupOutputs) {
      const float* w = l.weight.data() + static_cast<std::size_t>(o0 / kGroupOutputs) * l.in * kGroupOutputs;
      kGroups[ms - 1](x, l.in, w, l.bias.data() + o0, y + o0, l.out, std::min(kGroupOutputs, l.out - o0));
    }
  }
}

}  // namespace infer::cpu
