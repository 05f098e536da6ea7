// The CPU backend on oneDNN (CpuKernels::Onednn): every layer as a oneDNN primitive on the layout
// oneDNN chooses (channel-blocked where its JIT kernels want it), the CPU analogue of the cuDNN
// backend. The own kernels (cpu_backend.cpp) stay the tests' reference.
//
// A Program runs layers [0, count) on m samples: built the first time (m, count) is asked for and
// kept (primitive creation JIT-compiles kernels: a few ms each), with every activation's memory
// allocated once. Per layer:
//   conv2d, linear    convolution_forward / inner_product_forward (direct algorithm: no Winograd,
//                     whose rounding the tests' bound does not cover), weights reordered once to
//                     the primitive's layout, a following batch-norm folded (fold.h) and a
//                     following activation that oneDNN has (below) as an eltwise post-op, when the
//                     layer feeds only the next one and both are inside the program
//   batchnorm         batch_normalization_forward with the global statistics, scale and shift
//   relu, pointwise   eltwise_forward (relu, logistic, clip, hardswish, swish, leaky relu)
//   pooling           pooling_forward; ceil mode as a larger right padding (a max ignores it, an
//                     average that excludes padding does not count it); global and divisible
//                     adaptive average pooling as one window per output
//   softmax           softmax_forward over the channels
//   add, mul          binary_forward (a per-channel mul broadcasts), an add's ReLU as a post-op
//   concat            concat along the channels; upsample: resampling_forward, nearest
//   flatten           a reorder to plain NCHW, then the same memory seen as [C*H*W, 1, 1]
//   the rest          (pad, hardsigmoid, an adaptive average pooling that does not divide, an
//                     average pooling that counts padding but whose ceil-mode window overhangs):
//                     the own plain kernel, between reorders to and from plain NCHW
// The network input and the program's output are plain NCHW in the caller's buffers.
// Threads: oneDNN's OpenMP runtime (OMP_NUM_THREADS, or every core).
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../errors.h"
#include "../fold.h"
#include "cpu_backend.h"
#include "ops.h"

namespace infer {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using Tag = memory::format_tag;
using Args = std::unordered_map<int, memory>;

constexpr auto kF32 = memory::data_type::f32;
constexpr auto kInference = prop_kind::forward_inference;

memory::desc plain(int n, const Dims& d) { return memory::desc({n, d.c, d.h, d.w}, kF32, Tag::nchw); }
memory::desc any(int n, const Dims& d) { return memory::desc({n, d.c, d.h, d.w}, kF32, Tag::any); }

// The eltwise algorithm and its alpha, beta for a one-input op oneDNN has, or false.
bool eltwise_of(const Layer& layer, algorithm& alg, float& alpha, float& beta) {
  alpha = beta = 0.0f;
  switch (layer.kind) {
    case LayerKind::Relu: alg = algorithm::eltwise_relu; return true;
    case LayerKind::Sigmoid: alg = algorithm::eltwise_logistic; return true;
    case LayerKind::Clip:
      alg = algorithm::eltwise_clip;
      alpha = layer.pointwise().a;
      beta = layer.pointwise().b;
      return true;
    case LayerKind::HardSwish: alg = algorithm::eltwise_hardswish; return true;
    case LayerKind::Silu:
      alg = algorithm::eltwise_swish;
      alpha = 1.0f;
      return true;
    case LayerKind::LeakyRelu:
      alg = algorithm::eltwise_relu;
      alpha = layer.pointwise().a;
      return true;
    default: return false;
  }
}

// One network run of layers [0, count) on m samples.
class Program {
 public:
  Program(const Network& network, const dnnl::engine& engine, dnnl::stream& stream, int m, std::size_t count)
      : network_(network), engine_(engine), stream_(stream), m_(m), count_(count) {
    const std::vector<Layer>& layers = network.layers();
    input_ = memory(plain(m, network.input().dims), engine);
    acts_.resize(count + 1);
    acts_[0] = input_;
    for (std::size_t i = 0; i < count;) i = plan_layer(i);
    output_ = memory(plain(m, layers[count - 1].out), engine, DNNL_MEMORY_NONE);
    const memory& last = acts_[count];
    if (last.get_desc() == output_.get_desc()) {
      copy_out_ = true;
    } else {
      output_reorder_ = dnnl::reorder(last, output_);
    }
  }

  void run(const float* input, float* output) {
    // Copied in: views (flatten, an inner product's [m, c]) keep the address they were made with.
    std::memcpy(input_.get_data_handle(), input, input_.get_desc().get_size());
    for (const auto& step : steps_) step();
    if (copy_out_) {
      std::memcpy(output, acts_[count_].get_data_handle(), output_.get_desc().get_size());
    } else {
      output_.set_data_handle(output);
      output_reorder_.execute(stream_, acts_[count_], output_);
    }
    stream_.wait();
  }

 private:
  // Plans layer i (and the layers fused into it); returns the next layer to plan.
  std::size_t plan_layer(std::size_t i) {
    const Layer& layer = network_.layers()[i];
    algorithm alg{};
    float alpha = 0.0f, beta = 0.0f;
    switch (layer.kind) {
      case LayerKind::Conv2d:
      case LayerKind::Linear: return plan_convolution(i);
      case LayerKind::BatchNorm: plan_batchnorm(i); return i + 1;
      case LayerKind::MaxPool:
      case LayerKind::AvgPool:
      case LayerKind::GlobalAvgPool:
      case LayerKind::AdaptiveAvgPool: plan_pooling(i); return i + 1;
      case LayerKind::Softmax: {
        const memory::desc src = source(i).get_desc();
        const dnnl::softmax_forward::primitive_desc pd({kInference, src, 1}, engine_);
        add_primitive(i, dnnl::softmax_forward(pd), {{DNNL_ARG_SRC, source(i)}}, pd.dst_desc());
        return i + 1;
      }
      case LayerKind::Flatten: plan_flatten(i); return i + 1;
      case LayerKind::Add:
      case LayerKind::Mul: plan_binary(i); return i + 1;
      case LayerKind::Concat: {
        std::vector<memory::desc> srcs;
        Args args;
        for (std::size_t k = 0; k < layer.sources.size(); ++k) {
          srcs.push_back(source(i, k).get_desc());
          args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(k)] = source(i, k);
        }
        const dnnl::concat::primitive_desc pd(1, srcs, engine_);
        add_primitive(i, dnnl::concat(pd), std::move(args), pd.dst_desc());
        return i + 1;
      }
      case LayerKind::Upsample: {
        const dnnl::resampling_forward::primitive_desc pd(
            {kInference, algorithm::resampling_nearest, source(i).get_desc(), any(m_, layer.out)}, engine_);
        add_primitive(i, dnnl::resampling_forward(pd), {{DNNL_ARG_SRC, source(i)}}, pd.dst_desc());
        return i + 1;
      }
      case LayerKind::Relu:
      INFER_CASE_POINTWISE_OPS
        if (eltwise_of(layer, alg, alpha, beta)) {
          const dnnl::eltwise_forward::primitive_desc pd({kInference, alg, source(i).get_desc(), alpha, beta}, engine_);
          add_primitive(i, dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, source(i)}}, pd.dst_desc());
          return i + 1;
        }
        plan_plain(i);
        return i + 1;
      case LayerKind::Pad: plan_plain(i); return i + 1;
    }
    throw std::logic_error("onednn backend: unknown layer kind");
  }

  const memory& source(std::size_t i, std::size_t k = 0) const { return acts_[network_.layers()[i].sources[k]]; }

  // A primitive writing a new memory of `dst` as layer i's output (activation i + 1).
  void add_primitive(std::size_t i, dnnl::primitive p, Args args, const memory::desc& dst) {
    acts_[i + 1] = memory(dst, engine_);
    args[DNNL_ARG_DST] = acts_[i + 1];
    steps_.push_back([this, p = std::move(p), args = std::move(args)] { p.execute(stream_, args); });
  }

  // `from` in the layout `desc`: the memory itself, or a new one filled by a reorder at run time.
  memory in_layout(const memory& from, const memory::desc& desc) {
    if (from.get_desc() == desc) return from;
    memory to(desc, engine_);
    dnnl::reorder r(from, to);
    steps_.push_back([this, r, src = memory(from), to]() mutable { r.execute(stream_, src, to); });
    return to;
  }

  // Weights given in the plain layout `given`, reordered once into the primitive's `wanted`.
  memory constant(const std::vector<float>& values, const memory::desc& given, const memory::desc& wanted) {
    memory src(given, engine_, const_cast<float*>(values.data()));
    memory dst(wanted, engine_);
    dnnl::reorder(src, dst).execute(stream_, src, dst);
    stream_.wait();
    return dst;
  }

  // Conv2d or Linear at i, with a folded batch-norm and a ReLU when they follow inside the program.
  std::size_t plan_convolution(std::size_t i) {
    const std::vector<Layer>& layers = network_.layers();
    const Layer& layer = layers[i];
    const bool fold = i + 1 < count_ && batchnorm_foldable(layers, i + 1);
    std::size_t last = fold ? i + 1 : i;
    // The activation after it (ReLU, clip as ReLU6, hardswish, SiLU, ...) as an eltwise post-op.
    algorithm act{};
    float act_alpha = 0.0f, act_beta = 0.0f;
    const bool fuse_act = last + 1 < count_ && feeds_only_next(layers, last) &&
                          eltwise_of(layers[last + 1], act, act_alpha, act_beta);
    if (fuse_act) ++last;
    FoldedParams p = fold ? fold_batchnorm(layer, layers[i + 1]) : FoldedParams{layer.params.weight, layer.params.bias};
    const int k = layer.out.c;
    if (p.bias.empty()) p.bias.assign(static_cast<std::size_t>(k), 0.0f);
    dnnl::primitive_attr attr;
    if (fuse_act) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, act, act_alpha, act_beta);
      attr.set_post_ops(ops);
    }
    const memory::desc bias_md({k}, kF32, Tag::x);
    const memory& x = source(i);
    if (layer.kind == LayerKind::Linear) {
      const int c = static_cast<int>(layer.in.size());
      const memory::desc src({m_, c}, kF32, Tag::any);
      const dnnl::inner_product_forward::primitive_desc pd(
          {kInference, src, memory::desc({k, c}, kF32, Tag::any), bias_md, memory::desc({m_, k}, kF32, Tag::any)}, attr,
          engine_);
      const memory src_mem = in_layout(flat_view(x, c), pd.src_desc());
      const memory w = constant(p.weight, memory::desc({k, c}, kF32, Tag::oi), pd.weights_desc());
      const memory b = constant(p.bias, bias_md, bias_md);
      weights_.push_back(w);
      weights_.push_back(b);
      acts_[last + 1] = memory(pd.dst_desc(), engine_);
      // The output [m, k] seen as [m, k, 1, 1] by the next layers (nc and nchw with 1x1 are the same bytes).
      const memory dst = acts_[last + 1];
      steps_.push_back([this, prim = dnnl::inner_product_forward(pd), src_mem, w, b, dst] {
        prim.execute(stream_, {{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, dst}});
      });
      if (pd.dst_desc() == memory::desc({m_, k}, kF32, Tag::nc)) {
        acts_[last + 1] = memory(plain(m_, layer.out), engine_, dst.get_data_handle());
        keep_.push_back(dst);
      } else {
        memory as_plain(memory::desc({m_, k}, kF32, Tag::nc), engine_);
        dnnl::reorder r(dst, as_plain);
        steps_.push_back([this, r, src = memory(dst), as_plain]() mutable { r.execute(stream_, src, as_plain); });
        acts_[last + 1] = memory(plain(m_, layer.out), engine_, as_plain.get_data_handle());
        keep_.push_back(as_plain);
      }
      for (std::size_t j = i + 1; j <= last; ++j) acts_[j] = acts_[last + 1];
      return last + 1;
    }
    const Conv2dAttrs& a = layer.conv();
    const int g = a.groups;
    const memory::dims w_dims = g == 1 ? memory::dims{k, layer.in.c, a.kernel_h, a.kernel_w}
                                       : memory::dims{g, k / g, layer.in.c / g, a.kernel_h, a.kernel_w};
    const memory::desc w_plain(w_dims, kF32, g == 1 ? Tag::oihw : Tag::goihw);
    const memory::desc w_any(w_dims, kF32, Tag::any);
    const dnnl::convolution_forward::primitive_desc pd(
        {kInference, algorithm::convolution_direct, any(m_, layer.in), w_any, bias_md, any(m_, layer.out),
         {a.stride_h, a.stride_w}, {a.dilation_h - 1, a.dilation_w - 1}, {a.pad_h, a.pad_w}, {a.pad_h, a.pad_w}},
        attr, engine_);
    const memory src_mem = in_layout(x, pd.src_desc());
    const memory w = constant(p.weight, w_plain, pd.weights_desc());
    const memory b = constant(p.bias, bias_md, bias_md);
    weights_.push_back(w);
    weights_.push_back(b);
    acts_[last + 1] = memory(pd.dst_desc(), engine_);
    const memory dst = acts_[last + 1];
    steps_.push_back([this, prim = dnnl::convolution_forward(pd), src_mem, w, b, dst] {
      prim.execute(stream_, {{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, dst}});
    });
    for (std::size_t j = i + 1; j <= last; ++j) acts_[j] = dst;  // not read: nothing else reads them
    return last + 1;
  }

  // x as [m, c] (plain: flatten's output is), for an inner product.
  memory flat_view(const memory& x, int c) {
    const memory::desc want({m_, c}, kF32, Tag::nc);
    const memory::desc x_plain = memory::desc({m_, c, 1, 1}, kF32, Tag::nchw);
    if (x.get_desc() == x_plain || x.get_desc() == want) return memory(want, engine_, x.get_data_handle());
    memory as_plain(x_plain, engine_);
    dnnl::reorder r(x, as_plain);
    steps_.push_back([this, r, src = memory(x), as_plain]() mutable { r.execute(stream_, src, as_plain); });
    keep_.push_back(as_plain);
    return memory(want, engine_, as_plain.get_data_handle());
  }

  void plan_batchnorm(std::size_t i) {
    const Layer& layer = network_.layers()[i];
    const memory& x = source(i);
    const auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                       dnnl::normalization_flags::use_shift;
    const dnnl::batch_normalization_forward::primitive_desc pd(
        {kInference, x.get_desc(), static_cast<float>(layer.batchnorm().epsilon), flags}, engine_);
    const memory::desc c_md({layer.in.c}, kF32, Tag::x);
    Args args{{DNNL_ARG_SRC, x}};
    const std::pair<int, const std::vector<float>*> params[] = {{DNNL_ARG_MEAN, &layer.params.running_mean},
                                                                {DNNL_ARG_VARIANCE, &layer.params.running_var},
                                                                {DNNL_ARG_SCALE, &layer.params.weight},
                                                                {DNNL_ARG_SHIFT, &layer.params.bias}};
    for (const auto& [arg, values] : params) {
      const memory mem = constant(*values, c_md, c_md);
      weights_.push_back(mem);
      args[arg] = mem;
    }
    add_primitive(i, dnnl::batch_normalization_forward(pd), std::move(args), pd.dst_desc());
  }

  void plan_pooling(std::size_t i) {
    const Layer& layer = network_.layers()[i];
    Pool2dAttrs a;
    algorithm alg = algorithm::pooling_avg_include_padding;
    if (layer.kind == LayerKind::GlobalAvgPool) {
      a.kernel_h = a.stride_h = layer.in.h;
      a.kernel_w = a.stride_w = layer.in.w;
    } else if (layer.kind == LayerKind::AdaptiveAvgPool) {
      const AdaptivePoolAttrs& ad = layer.adaptive();
      if (layer.in.h % ad.out_h != 0 || layer.in.w % ad.out_w != 0) return plan_plain(i);
      a.kernel_h = a.stride_h = layer.in.h / ad.out_h;
      a.kernel_w = a.stride_w = layer.in.w / ad.out_w;
    } else {
      a = layer.pool();
      if (layer.kind == LayerKind::MaxPool) {
        alg = algorithm::pooling_max;
      } else if (!a.count_include_pad) {
        alg = algorithm::pooling_avg_exclude_padding;
      }
    }
    // The right padding that gives the network's output size with oneDNN's floor division: the
    // padding itself, or more for a ceil-mode window that overhangs.
    const int pr_h = std::max(a.pad_h, (layer.out.h - 1) * a.stride_h + a.kernel_h - layer.in.h - a.pad_h);
    const int pr_w = std::max(a.pad_w, (layer.out.w - 1) * a.stride_w + a.kernel_w - layer.in.w - a.pad_w);
    // A ceil-mode overhang beyond the padding: an average that counts padding must not count it.
    if (alg == algorithm::pooling_avg_include_padding && (pr_h > a.pad_h || pr_w > a.pad_w)) return plan_plain(i);
    const dnnl::pooling_forward::primitive_desc pd(
        {kInference, alg, source(i).get_desc(), any(m_, layer.out), {a.stride_h, a.stride_w}, {a.kernel_h, a.kernel_w},
         {a.pad_h, a.pad_w}, {pr_h, pr_w}},
        engine_);
    add_primitive(i, dnnl::pooling_forward(pd), {{DNNL_ARG_SRC, source(i)}}, pd.dst_desc());
  }

  void plan_flatten(std::size_t i) {
    const Layer& layer = network_.layers()[i];
    const memory x = in_layout(source(i), plain(m_, layer.in));
    acts_[i + 1] = memory(plain(m_, layer.out), engine_, x.get_data_handle());
    keep_.push_back(x);
  }

  void plan_binary(std::size_t i) {
    const Layer& layer = network_.layers()[i];
    const memory& a = source(i, 0);
    const memory& b = source(i, 1);
    dnnl::primitive_attr attr;
    if (layer.kind == LayerKind::Add && layer.add().relu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
    const algorithm alg = layer.kind == LayerKind::Add ? algorithm::binary_add : algorithm::binary_mul;
    const dnnl::binary::primitive_desc pd({alg, a.get_desc(), b.get_desc(), a.get_desc()}, attr, engine_);
    add_primitive(i, dnnl::binary(pd), {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}}, pd.dst_desc());
  }

  // The own plain kernel between reorders (ops.h): inputs to plain NCHW, the output plain NCHW.
  void plan_plain(std::size_t i) {
    const Layer& layer = network_.layers()[i];
    const memory x = in_layout(source(i), plain(m_, layer.in));
    acts_[i + 1] = memory(plain(m_, layer.out), engine_);
    const memory y = acts_[i + 1];
    const int m = m_;
    steps_.push_back([this, &layer, x, y, m] {
      stream_.wait();
      const float* in = static_cast<const float*>(x.get_data_handle());
      float* out = static_cast<float*>(y.get_data_handle());
      switch (layer.kind) {
        case LayerKind::Pad: cpu::pad_forward(layer, in, m, out); return;
        case LayerKind::AvgPool: cpu::avgpool_forward(layer, in, m, out); return;
        case LayerKind::AdaptiveAvgPool: cpu::adaptive_avgpool_forward(layer, in, m, out); return;
        default: cpu::pointwise_forward(layer, in, m, out); return;
      }
    });
  }

  const Network& network_;
  const dnnl::engine& engine_;
  dnnl::stream& stream_;
  int m_;
  std::size_t count_;
  memory input_;   // the input, plain NCHW, copied from the caller's
  memory output_;  // the caller's output, plain NCHW (handle set per run)
  std::vector<memory> acts_;     // activation a: the input (0) or layer a - 1's output
  std::vector<memory> weights_;  // reordered weights and parameters
  std::vector<memory> keep_;     // memories that views alias
  std::vector<std::function<void()>> steps_;
  dnnl::reorder output_reorder_;
  bool copy_out_ = false;
};

class OnednnBackend final : public Backend {
 public:
  OnednnBackend(const Network& network, int max_batch)
      : network_(network), max_batch_(max_batch), engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    if (max_batch < 1) throw std::invalid_argument("max_batch must be at least 1");
    chunk_ = std::min(max_batch, kChunk);
  }

  std::string description() const override {
    const dnnl_version_t* v = dnnl_version();
    return "cpu: oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
           std::to_string(v->patch) + " (" + isa_name() + ")";
  }
  const char* device() const override { return "cpu"; }
  int max_batch() const override { return max_batch_; }
  std::size_t layer_count() const override { return network_.layers().size(); }
  std::size_t output_size() const override { return network_.output_dims().size(); }

  void forward(const float* input, int n, float* output, std::size_t layer_count) override {
    if (n < 1 || n > max_batch_) throw std::invalid_argument("batch size out of range");
    if (layer_count < 1 || layer_count > network_.layers().size()) throw std::invalid_argument("layer_count out of range");
    const std::size_t in_size = network_.input().dims.size();
    const std::size_t out_size = network_.layers()[layer_count - 1].out.size();
    for (int first = 0; first < n; first += chunk_) {
      const int m = std::min(chunk_, n - first);
      program(m, layer_count).run(input + static_cast<std::size_t>(first) * in_size,
                                  output + static_cast<std::size_t>(first) * out_size);
    }
  }

 private:
  // Samples per primitive call: enough for oneDNN's threads to split the batch, few enough for a
  // chunk's activations to stay in the caches.
  static constexpr int kChunk = 16;

  static std::string isa_name() {
    switch (dnnl::get_effective_cpu_isa()) {
      case dnnl::cpu_isa::sse41: return "SSE4.1";
      case dnnl::cpu_isa::avx: return "AVX";
      case dnnl::cpu_isa::avx2: return "AVX2";
      case dnnl::cpu_isa::avx2_vnni: return "AVX2 VNNI";
      case dnnl::cpu_isa::avx512_core: return "AVX-512";
      case dnnl::cpu_isa::avx512_core_vnni: return "AVX-512 VNNI";
      case dnnl::cpu_isa::avx512_core_bf16: return "AVX-512 BF16";
      case dnnl::cpu_isa::avx512_core_amx: return "AVX-512 AMX";
      default: return "ISA " + std::to_string(static_cast<int>(dnnl::get_effective_cpu_isa()));
    }
  }

  Program& program(int m, std::size_t count) {
    const auto key = std::make_pair(m, count);
    auto it = programs_.find(key);
    if (it == programs_.end()) {
      try {
        it = programs_.emplace(key, std::make_unique<Program>(network_, engine_, stream_, m, count)).first;
      } catch (const dnnl::error& e) {
        throw ModelError(std::string("oneDNN cannot run this network: ") + e.what() + "; use --cpu-kernels own");
      }
    }
    return *it->second;
  }

  const Network& network_;
  int max_batch_;
  int chunk_ = 1;
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::map<std::pair<int, std::size_t>, std::unique_ptr<Program>> programs_;
};

}  // namespace

std::unique_ptr<Backend> make_onednn_backend(const Network& network, int max_batch) {
  return std::make_unique<OnednnBackend>(network, max_batch);
}

}  // namespace infer
