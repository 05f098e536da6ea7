// A oneDNN program: layers [0, count) of a network on m samples, each as a oneDNN primitive on the
// layout oneDNN chooses (channel-blocked where its JIT kernels want it). Per layer:
//   conv2d, linear    convolution_forward / inner_product_forward (a convolution of
//                     winograd_shape() by the Winograd algorithm when asked for and oneDNN takes
//                     it, else the direct one), weights reordered once to
//                     the primitive's layout, a following batch-norm folded (fold.h) and a
//                     following activation that oneDNN has (below) as an eltwise post-op, when the
//                     layer feeds only the next one and both are inside the program; a residual
//                     add after a convolution as a sum post-op into the shortcut's buffer (then
//                     the add's ReLU or the activation after it as the eltwise post-op)
//   batchnorm         batch_normalization_forward with the global statistics, scale and shift
//   relu, pointwise   eltwise_forward (relu, logistic, clip, hardswish, swish, leaky relu)
//   pooling           pooling_forward; ceil mode as a larger right padding (a max ignores it, an
//                     average that excludes padding does not count it); global and divisible
//                     adaptive average pooling as one window per output
//   softmax           softmax_forward over the channels
//   add, mul          binary_forward (a per-channel mul broadcasts); the add's own ReLU, or an
//                     activation oneDNN has after it (ResNet's add then ReLU), as a post-op
//   concat            concat along the channels; upsample: resampling_forward, nearest
//   channel_shuffle   shuffle_forward along the channels, group size C / groups
//   flatten           a reorder to plain NCHW, then the same memory seen as [C*H*W, 1, 1]
//   the rest          (pad, channel_slice, resize (bilinear: oneDNN's linear resampling has no
//                     align_corners), layernorm (oneDNN's normalises the innermost dimension,
//                     the channels only in NHWC), hardsigmoid, an adaptive average pooling that does not
//                     divide, an average pooling that counts padding but whose ceil-mode window
//                     overhangs, a convolution padded by its kernel's extent or more):
//                     the own plain kernel (ops.h), between reorders to and from plain NCHW
// The network input and the program's output are plain NCHW in the caller's buffers.
#include "backends/cpu/onednn_program.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/threads.h"
#include "graph/fold.h"
#include "platform/huge_pages.h"
#include "platform/parallel_jobs.h"

namespace infer::cpu {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using Tag = memory::format_tag;
using Args = std::unordered_map<int, memory>;

constexpr auto kF32 = memory::data_type::f32;
constexpr auto kInference = dnnl::prop_kind::forward_inference;
constexpr int kFolded = 1 << 16;  // marks a constant's key: the parameters with a batch-norm folded in

memory::desc plain(int n, const Dims& d) { return memory::desc({n, d.c, d.h, d.w}, kF32, Tag::nchw); }
memory::desc any(int n, const Dims& d) { return memory::desc({n, d.c, d.h, d.w}, kF32, Tag::any); }

// A desc of `dims` in the format of `like` (plain NCHW or NHWC, or channel blocks of 4, 8 or 16), or
// `otherwise` when `like` is in another.
memory::desc same_format(const memory::desc& like, const memory::dims& dims, const memory::desc& otherwise) {
  for (const Tag tag : {Tag::nchw, Tag::nhwc, Tag::nChw8c, Tag::nChw16c, Tag::nChw4c}) {
    if (like == memory::desc(like.dims(), kF32, tag)) return memory::desc(dims, kF32, tag);
  }
  return otherwise;
}

// Primitive attributes: the user scratchpad (OnednnStorage's), and an eltwise post-op when `alg` is set.
dnnl::primitive_attr attributes(const algorithm* alg = nullptr, float alpha = 0.0f, float beta = 0.0f) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (alg != nullptr) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, *alg, alpha, beta);
    attr.set_post_ops(ops);
  }
  return attr;
}

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

}  // namespace

namespace {

// `bytes` (at least 1), 64-byte aligned and uninitialised; a large one offered to huge pages.
OnednnStorage::Buffer exact_buffer(std::size_t bytes) {
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) throw std::bad_alloc();
  if (rounded >= kLargeBufferBytes) prefer_huge_pages(p, rounded);
  return {std::shared_ptr<void>(p, std::free), rounded};
}

}  // namespace

OnednnStorage::Buffer OnednnStorage::activation(std::size_t bytes) {
  if (!slab_ && slab_bytes_ > 0) {
    try {
      slab_ = exact_buffer(slab_bytes_).data;
    } catch (const std::bad_alloc&) {
      slab_bytes_ = 0;  // the plan's bound is more than the system gives at once: buffer by buffer
    }
  }
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64;
  if (!slab_ || slab_used_ + rounded > slab_bytes_) return exact_buffer(bytes);
  void* at = static_cast<char*>(slab_.get()) + slab_used_;
  slab_used_ += rounded;
  return {std::shared_ptr<void>(slab_, at), rounded};  // owns a share of the slab
}

OnednnStorage::Buffer OnednnStorage::grow(Buffer& b, std::size_t bytes) {
  if (b.bytes < bytes || !b.data) b = exact_buffer(bytes);
  return b;
}

memory OnednnStorage::new_constant(const memory::desc& desc) {
  const Buffer b = exact_buffer(desc.get_size());
  constant_buffers_[b.data.get()] = b.data;
  return memory(desc, engine_, b.data.get());
}

OnednnStorage::Buffer OnednnStorage::buffer(Key key, std::size_t bytes) {
  Buffer& b = buffers_[key];
  if (b.bytes < bytes || !b.data) b = activation(bytes);
  return b;
}

std::optional<memory> OnednnStorage::find_constant(std::size_t layer, int arg, const memory::desc& desc) const {
  const auto kept = constants_.find({layer, arg});
  if (kept == constants_.end()) return std::nullopt;
  for (const memory& m : kept->second) {
    if (m.get_desc() == desc) return m;
  }
  return std::nullopt;
}

void OnednnStorage::keep_constant(std::size_t layer, int arg, const memory& m) {
  constants_[{layer, arg}].push_back(m);
}

memory::dims convolution_weight_dims(const Layer& layer) {
  const Conv2dAttrs& a = layer.conv();
  const int k = layer.out.c, g = a.groups;
  return g == 1 ? memory::dims{k, layer.in.c, a.kernel_h, a.kernel_w}
                : memory::dims{g, k / g, layer.in.c / g, a.kernel_h, a.kernel_w};
}

dnnl::convolution_forward::desc convolution_desc(const Layer& layer, int m, algorithm alg, const memory::desc& dst) {
  const Conv2dAttrs& a = layer.conv();
  return dnnl::convolution_forward::desc(kInference, alg, any(m, layer.in),
                                         memory::desc(convolution_weight_dims(layer), kF32, Tag::any),
                                         memory::desc({layer.out.c}, kF32, Tag::x), dst, {a.stride_h, a.stride_w},
                                         {a.dilation_h - 1, a.dilation_w - 1}, {a.pad_h, a.pad_w}, {a.pad_h, a.pad_w});
}

OnednnProgram::OnednnProgram(const Network& network, OnednnStorage& storage, dnnl::stream& stream, int m,
                             std::size_t count, bool winograd)
    : network_(network),
      storage_(storage),
      stream_(stream),
      m_(m),
      count_(count),
      winograd_(winograd),
      threads_(onednn_threads()) {
  const std::vector<Layer>& layers = network.layers();
  acts_.resize(count + 1);
  input_ = allocate(0, plain(m, network.input().dims));
  acts_[0] = input_;
  for (std::size_t i = 0; i < count;) i = plan_layer(i);
  // Each thread creates primitives at the pass's OpenMP count, as this one planned them (oneDNN
  // sizes some of a primitive's per-thread work when it creates it).
  const int threads = threads_;
  run_jobs(jobs_, parallel_job_threads(), [threads] { use_openmp_threads_here(threads); });
  jobs_.clear();
  for (const auto& [layer, arg, filled] : new_constants_) storage_.keep_constant(layer, arg, filled);
  new_constants_.clear();
  output_ = memory(plain(m, layers[count - 1].out), storage.engine(), DNNL_MEMORY_NONE);
  if (acts_[count].get_desc() == output_.get_desc()) {
    copy_out_ = true;
  } else {
    output_reorder_ = dnnl::reorder(acts_[count], output_);
  }
}

void OnednnProgram::run(const float* input, float* output) {
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

const memory& OnednnProgram::source(std::size_t i, std::size_t k) const {
  return acts_[network_.layers()[i].sources[k]];
}

memory OnednnProgram::allocate(std::size_t a, const memory::desc& desc) {
  const OnednnStorage::Buffer b = storage_.buffer({a, copies_[a]++}, desc.get_size());
  held_.push_back(b.data);
  return memory(desc, storage_.engine(), b.data.get());
}

void OnednnProgram::add_call(const dnnl::primitive_desc_base& pd, Args args) {
  const memory::desc scratchpad = pd.scratchpad_desc();
  const OnednnStorage::Buffer pad = storage_.scratchpad(scratchpad.get_size());
  held_.push_back(pad.data);
  args[DNNL_ARG_SCRATCHPAD] = memory(scratchpad, storage_.engine(), pad.data.get());
  const std::size_t slot = primitives_.size();
  primitives_.emplace_back();
  jobs_.push_back([this, slot, pd] { primitives_[slot] = dnnl::primitive(pd.get()); });
  steps_.push_back([this, slot, args = std::move(args)] { primitives_[slot].execute(stream_, args); });
}

void OnednnProgram::add_primitive(std::size_t i, const dnnl::primitive_desc_base& pd, Args args) {
  acts_[i + 1] = allocate(i + 1, pd.dst_desc());
  args[DNNL_ARG_DST] = acts_[i + 1];
  add_call(pd, std::move(args));
}

memory OnednnProgram::constant(std::size_t i, int arg, const memory::desc& wanted, bool& fill) {
  if (const std::optional<memory> kept = storage_.find_constant(i, arg, wanted)) {
    fill = false;
    return *kept;
  }
  fill = true;
  const memory made = storage_.new_constant(wanted);
  new_constants_.emplace_back(i, arg, made);
  return made;
}

memory OnednnProgram::in_layout(std::size_t a, const memory& from, const memory::desc& desc) {
  if (from.get_desc() == desc) return from;
  memory to = allocate(a, desc);
  add_call(dnnl::reorder::primitive_desc(from, to, attributes()), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
  return to;
}

// Layer last + 1 as a residual add the convolution `conv` (ending at `last`) may fold in: an add that
// reads last's output (read by nothing else) and another activation z that neither the convolution
// nor any layer after the add reads, through any activation sharing its buffer (the program's own
// buffer, which the sum may then overwrite). Returns z.
std::optional<std::size_t> OnednnProgram::residual_input(std::size_t conv, std::size_t last) const {
  const std::vector<Layer>& layers = network_.layers();
  const std::size_t add = last + 1;
  if (add >= count_ || layers[add].kind != LayerKind::Add || layers[last].readers != 1) return std::nullopt;
  const std::size_t own = last + 1, a = layers[add].sources[0], b = layers[add].sources[1];
  if ((a == own) == (b == own)) return std::nullopt;
  const std::size_t z = a == own ? b : a;
  if (z == layers[conv].sources[0]) return std::nullopt;
  // Neither z nor an activation in the same buffer (a flatten's view, the layers fused into z's
  // step) may be read after the add.
  const void* buffer = acts_[z].get_data_handle();
  for (std::size_t j = add + 1; j < count_; ++j) {
    for (std::size_t s : layers[j].sources) {
      if (s <= conv && acts_[s].get_data_handle() == buffer) return std::nullopt;
    }
  }
  return z;
}

// Plans layer i (and the layers fused into it); returns the next layer to plan.
std::size_t OnednnProgram::plan_layer(std::size_t i) {
  const Layer& layer = network_.layers()[i];
  const dnnl::engine& engine = storage_.engine();
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
      const dnnl::softmax_forward::primitive_desc pd({kInference, source(i).get_desc(), 1}, attributes(), engine);
      add_primitive(i, pd, {{DNNL_ARG_SRC, source(i)}});
      return i + 1;
    }
    case LayerKind::Flatten: plan_flatten(i); return i + 1;
    case LayerKind::Add:
    case LayerKind::Mul: return plan_binary(i);
    case LayerKind::Concat: {
      std::vector<memory::desc> srcs;
      Args args;
      for (std::size_t k = 0; k < layer.sources.size(); ++k) {
        srcs.push_back(source(i, k).get_desc());
        args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(k)] = source(i, k);
      }
      const dnnl::concat::primitive_desc pd(1, srcs, engine, attributes());
      add_primitive(i, pd, std::move(args));
      return i + 1;
    }
    case LayerKind::Upsample: {
      const dnnl::resampling_forward::primitive_desc pd(
          {kInference, algorithm::resampling_nearest, source(i).get_desc(), any(m_, layer.out)}, attributes(), engine);
      add_primitive(i, pd, {{DNNL_ARG_SRC, source(i)}});
      return i + 1;
    }
    case LayerKind::ChannelShuffle: {
      // oneDNN's shuffle sees the axis as [C / G, G] and transposes it, G its group_size: ours,
      // [groups, k] to [k, groups], is its shuffle with G = k = C / groups.
      const int k = layer.in.c / layer.channel_shuffle().groups;
      const dnnl::shuffle_forward::primitive_desc pd({kInference, source(i).get_desc(), 1, k}, engine, attributes());
      add_primitive(i, pd, {{DNNL_ARG_SRC, source(i)}});
      return i + 1;
    }
    case LayerKind::Relu:
      INFER_CASE_POINTWISE_OPS
      if (eltwise_of(layer, alg, alpha, beta)) {
        const dnnl::eltwise_forward::primitive_desc pd({kInference, alg, source(i).get_desc(), alpha, beta},
                                                       attributes(), engine);
        add_primitive(i, pd, {{DNNL_ARG_SRC, source(i)}});
        return i + 1;
      }
      if (layer.kind == LayerKind::HardSigmoid) {
        plan_hard_sigmoid(i);
        return i + 1;
      }
      plan_plain(i);
      return i + 1;
    case LayerKind::Pad:
    case LayerKind::ChannelSlice:
    case LayerKind::Resize:
    case LayerKind::LayerNorm: plan_plain(i); return i + 1;
  }
  throw std::logic_error("onednn program: unknown layer kind");
}

// Conv2d or Linear at i, with a folded batch-norm and an activation when they follow inside the program.
std::size_t OnednnProgram::plan_convolution(std::size_t i) {
  const std::vector<Layer>& layers = network_.layers();
  const dnnl::engine& engine = storage_.engine();
  const Layer& layer = layers[i];
  // Padding as large as the kernel's extent (a window that can lie wholly in the padding): some of
  // oneDNN's implementations then work (and allocate) in proportion to the padding; the plain
  // im2col kernel's work is the output's taps. Such layers are rare outside hostile models.
  if (layer.kind == LayerKind::Conv2d) {
    const Conv2dAttrs& a = layer.conv();
    if (a.pad_h >= (a.kernel_h - 1) * a.dilation_h + 1 || a.pad_w >= (a.kernel_w - 1) * a.dilation_w + 1) {
      plan_plain(i);
      return i + 1;
    }
  }
  const bool fold = i + 1 < count_ && batchnorm_foldable(layers, i + 1);
  std::size_t last = fold ? i + 1 : i;
  // A residual add next (ResNet's shortcut): a candidate for a sum post-op into its other input z.
  const std::optional<std::size_t> residual = layer.kind == LayerKind::Conv2d ? residual_input(i, last) : std::nullopt;
  const bool z = residual.has_value();
  const std::size_t zi = residual.value_or(0);
  const std::size_t add = last + 1;  // the add layer, when z is set
  if (z) last = add;
  // The activation after it: the add's own ReLU, or a layer oneDNN has an eltwise algorithm for.
  algorithm act = algorithm::eltwise_relu;
  float act_alpha = 0.0f, act_beta = 0.0f;
  bool fuse_act = z && layers[add].add().relu;
  if (!fuse_act && last + 1 < count_ && feeds_only_next(layers, last) &&
      eltwise_of(layers[last + 1], act, act_alpha, act_beta)) {
    fuse_act = true;
    ++last;
  }
  const int k = layer.out.c;
  const dnnl::primitive_attr attr = fuse_act ? attributes(&act, act_alpha, act_beta) : attributes();
  const memory::desc bias_md({k}, kF32, Tag::x);
  const memory& x = source(i);
  // The folded parameters are kept apart from the layer's own (a program that stops before the
  // batch-norm uses those).
  const int w_key = DNNL_ARG_WEIGHTS | (fold ? kFolded : 0);
  const int b_key = DNNL_ARG_BIAS | (fold ? kFolded : 0);
  if (layer.kind == LayerKind::Linear) {
    const int c = static_cast<int>(layer.in.size());
    const dnnl::inner_product_forward::primitive_desc pd(
        {kInference, memory::desc({m_, c}, kF32, Tag::any), memory::desc({k, c}, kF32, Tag::any), bias_md,
         memory::desc({m_, k}, kF32, Tag::nc)},
        attr, engine);
    // The input as [m, c]: flatten's output (or any [c, 1, 1] activation) in plain NCHW is that.
    const std::size_t a = layer.sources[0];
    const memory flat = in_layout(a, x, memory::desc({m_, c, 1, 1}, kF32, Tag::nchw));
    const memory src =
        in_layout(a, memory(memory::desc({m_, c}, kF32, Tag::nc), engine, flat.get_data_handle()), pd.src_desc());
    bool fill_w = false, fill_b = false;
    const memory w = constant(i, w_key, pd.weights_desc(), fill_w);
    const memory b = constant(i, b_key, bias_md, fill_b);
    fill_weights(i, fold, memory::desc({k, c}, kF32, Tag::oi), w, fill_w, b, fill_b);
    // The output [m, k] (nc) is [m, k, 1, 1] (nchw): the same bytes.
    const memory dst = allocate(last + 1, pd.dst_desc());
    add_call(pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, dst}});
    acts_[last + 1] = memory(plain(m_, layer.out), engine, dst.get_data_handle());
  } else {
    const int g = layer.conv().groups;
    const memory::dims w_dims = convolution_weight_dims(layer);
    const bool winograd = winograd_ && winograd_shape(layer);
    const auto conv_pd = [&](const memory::desc& dst, const dnnl::primitive_attr& at) {
      const auto desc = [&](algorithm alg) { return convolution_desc(layer, m_, alg, dst); };
      if (winograd) {
        try {
          return dnnl::convolution_forward::primitive_desc(desc(algorithm::convolution_winograd), at, engine);
        } catch (const dnnl::error&) {
          // Not on this ISA, or not with these post-ops: the direct algorithm.
        }
      }
      return dnnl::convolution_forward::primitive_desc(desc(algorithm::convolution_direct), at, engine);
    };
    dnnl::convolution_forward::primitive_desc pd = conv_pd(any(m_, layer.out), z ? attributes() : attr);
    // The add as oneDNN's sum post-op: the convolution accumulates into z's own buffer (z is read
    // by nothing after the add), when z already has the layout the convolution writes. Otherwise
    // the add runs as its own primitive, and the convolution stops before it.
    bool sum = false;
    if (z && pd.dst_desc() == acts_[zi].get_desc()) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      if (fuse_act) ops.append_eltwise(1.0f, act, act_alpha, act_beta);
      dnnl::primitive_attr sum_attr = attributes();
      sum_attr.set_post_ops(ops);
      pd = conv_pd(acts_[zi].get_desc(), sum_attr);
      sum = true;
    } else if (z) {
      pd = conv_pd(any(m_, layer.out), attributes());
      last = add - 1;
    }
    const memory src = in_layout(layer.sources[0], x, pd.src_desc());
    bool fill_w = false, fill_b = false;
    const memory w = constant(i, w_key, pd.weights_desc(), fill_w);
    const memory b = constant(i, b_key, bias_md, fill_b);
    fill_weights(i, fold, memory::desc(w_dims, kF32, g == 1 ? Tag::oihw : Tag::goihw), w, fill_w, b, fill_b);
    acts_[last + 1] = sum ? acts_[zi] : allocate(last + 1, pd.dst_desc());
    add_call(pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, acts_[last + 1]}});
  }
  for (std::size_t j = i + 1; j <= last; ++j) acts_[j] = acts_[last + 1];  // fused: nothing else reads them
  return last + 1;
}

void OnednnProgram::fill_weights(std::size_t i, bool fold, const memory::desc& w_given, const memory& w, bool fill_w,
                                 const memory& b, bool fill_b) {
  if (!fill_w && !fill_b) return;
  jobs_.push_back([this, i, fold, w_given, w, fill_w, b, fill_b] {
    const std::vector<Layer>& layers = network_.layers();
    const Layer& layer = layers[i];
    const auto k = static_cast<std::size_t>(layer.out.c);
    const FoldedParams folded = fold ? fold_batchnorm(layer, layers[i + 1]) : FoldedParams{};
    const std::vector<float>& weight = fold ? folded.weight : layer.params.weight;
    const std::vector<float>& bias = fold ? folded.bias : layer.params.bias;
    dnnl::stream stream(storage_.engine());  // this thread's: a stream is not shared between threads
    if (fill_w) {
      memory given(w_given, storage_.engine(), const_cast<float*>(weight.data()));  // the reorder only reads it
      memory to = w;
      dnnl::reorder(given, to).execute(stream, given, to);
      stream.wait();
    }
    if (fill_b) {
      float* to = static_cast<float*>(b.get_data_handle());
      if (bias.empty()) {
        std::fill(to, to + k, 0.0f);
      } else {
        std::copy(bias.begin(), bias.end(), to);
      }
    }
  });
}

void OnednnProgram::plan_batchnorm(std::size_t i) {
  const Layer& layer = network_.layers()[i];
  const memory& x = source(i);
  const auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                     dnnl::normalization_flags::use_shift;
  const dnnl::batch_normalization_forward::primitive_desc pd(
      {kInference, x.get_desc(), static_cast<float>(layer.batchnorm().epsilon), flags}, attributes(),
      storage_.engine());
  const memory::desc c_md({layer.in.c}, kF32, Tag::x);
  Args args{{DNNL_ARG_SRC, x}};
  const std::pair<int, const std::vector<float>*> params[] = {{DNNL_ARG_MEAN, &layer.params.running_mean},
                                                              {DNNL_ARG_VARIANCE, &layer.params.running_var},
                                                              {DNNL_ARG_SCALE, &layer.params.weight},
                                                              {DNNL_ARG_SHIFT, &layer.params.bias}};
  // Read where they are: the network outlives its programs, and the primitive only reads them.
  for (const auto& [arg, values] : params)
    args[arg] = memory(c_md, storage_.engine(), const_cast<float*>(values->data()));
  add_primitive(i, pd, std::move(args));
}

std::optional<dnnl::pooling_forward::desc> pooling_desc(const Layer& layer, int m, const memory::desc& src) {
  Pool2dAttrs a;
  algorithm alg = algorithm::pooling_avg_include_padding;
  if (layer.kind == LayerKind::GlobalAvgPool) {
    a.kernel_h = a.stride_h = layer.in.h;
    a.kernel_w = a.stride_w = layer.in.w;
  } else if (layer.kind == LayerKind::AdaptiveAvgPool) {
    const AdaptivePoolAttrs& ad = layer.adaptive();
    if (layer.in.h % ad.out_h != 0 || layer.in.w % ad.out_w != 0) return std::nullopt;
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
  // An average that counts padding must not count a ceil-mode overhang, which oneDNN would.
  if (alg == algorithm::pooling_avg_include_padding && (pr_h > a.pad_h || pr_w > a.pad_w)) return std::nullopt;
  return dnnl::pooling_forward::desc(kInference, alg, src, any(m, layer.out), {a.stride_h, a.stride_w},
                                     {a.kernel_h, a.kernel_w}, {a.pad_h, a.pad_w}, {pr_h, pr_w});
}

void OnednnProgram::plan_pooling(std::size_t i) {
  const Layer& layer = network_.layers()[i];
  const std::optional<dnnl::pooling_forward::desc> desc = pooling_desc(layer, m_, source(i).get_desc());
  if (!desc) return plan_plain(i);
  const dnnl::pooling_forward::primitive_desc pd(*desc, attributes(), storage_.engine());
  add_primitive(i, pd, {{DNNL_ARG_SRC, source(i)}});
}

void OnednnProgram::plan_flatten(std::size_t i) {
  const Layer& layer = network_.layers()[i];
  const memory x = in_layout(layer.sources[0], source(i), plain(m_, layer.in));
  acts_[i + 1] = memory(plain(m_, layer.out), storage_.engine(), x.get_data_handle());
}

// Add or mul at i, with the add's own ReLU, or the activation oneDNN has that follows it inside the
// program (ResNet's add then ReLU), as an eltwise post-op.
std::size_t OnednnProgram::plan_binary(std::size_t i) {
  const std::vector<Layer>& layers = network_.layers();
  const Layer& layer = layers[i];
  const memory& a = source(i, 0);
  // The second input in the first's layout: oneDNN's binary kernels take inputs of one layout, and
  // only its reference kernel mixes them. Measured: ResNet-18's adds of a Winograd output,
  // channel-blocked, and a shortcut in NHWC took 5x the convolutions' time; MobileNetV3's
  // squeeze-and-excitation scale (channel-blocked features times N x C x 1 x 1 in NCHW) took 87% of
  // a batch-1 pass, 8x ONNX Runtime's whole pass. A per-channel (or other broadcast) second input
  // gets the first's format, where that format is one of the common ones.
  const memory& given_b = source(i, 1);
  const memory::dims b_dims = given_b.get_desc().dims();
  const memory b = b_dims == a.get_desc().dims()
                       ? in_layout(layer.sources[1], given_b, a.get_desc())
                       : in_layout(layer.sources[1], given_b, same_format(a.get_desc(), b_dims, given_b.get_desc()));
  algorithm act = algorithm::eltwise_relu;
  float act_alpha = 0.0f, act_beta = 0.0f;
  std::size_t last = i;
  bool fuse_act = layer.kind == LayerKind::Add && layer.add().relu;
  if (!fuse_act && i + 1 < count_ && feeds_only_next(layers, i) &&
      eltwise_of(layers[i + 1], act, act_alpha, act_beta)) {
    fuse_act = true;
    last = i + 1;
  }
  const algorithm alg = layer.kind == LayerKind::Add ? algorithm::binary_add : algorithm::binary_mul;
  const dnnl::binary::primitive_desc pd({alg, a.get_desc(), b.get_desc(), a.get_desc()},
                                        fuse_act ? attributes(&act, act_alpha, act_beta) : attributes(),
                                        storage_.engine());
  add_primitive(last, pd, {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}});
  if (last != i) acts_[i + 1] = acts_[last + 1];  // fused: nothing else reads it
  return last + 1;
}

// HardSigmoid, clamp(a x + b, 0, 1), which oneDNN 2.6 lacks: its linear eltwise, then its clip in
// place, in the input's layout. PyTorch exports hardswish below opset 14 as x * HardSigmoid(x):
// through the plain kernel, between reorders to NCHW and back, MobileNetV3's took half a batch-1
// pass. (Only finite values reach a program: see the top of onednn_backend.cpp.)
void OnednnProgram::plan_hard_sigmoid(std::size_t i) {
  const PointwiseAttrs& p = network_.layers()[i].pointwise();
  const dnnl::engine& engine = storage_.engine();
  const dnnl::eltwise_forward::primitive_desc linear(
      {kInference, algorithm::eltwise_linear, source(i).get_desc(), p.a, p.b}, attributes(), engine);
  add_primitive(i, linear, {{DNNL_ARG_SRC, source(i)}});
  const dnnl::eltwise_forward::primitive_desc clip({kInference, algorithm::eltwise_clip, linear.dst_desc(), 0.0f, 1.0f},
                                                   attributes(), engine);
  add_call(clip, {{DNNL_ARG_SRC, acts_[i + 1]}, {DNNL_ARG_DST, acts_[i + 1]}});
}

// The own plain kernel between reorders (ops.h): the input to plain NCHW, the output plain NCHW.
void OnednnProgram::plan_plain(std::size_t i) {
  const Layer& layer = network_.layers()[i];
  const memory x = in_layout(layer.sources[0], source(i), plain(m_, layer.in));
  acts_[i + 1] = allocate(i + 1, plain(m_, layer.out));
  const memory y = acts_[i + 1];
  const int m = m_;
  float* scratch = nullptr;  // a convolution's im2col matrix of one sample
  if (layer.kind == LayerKind::Conv2d) {
    const OnednnStorage::Buffer b = storage_.scratchpad(conv2d_scratch_size(layer) * sizeof(float));
    held_.push_back(b.data);
    scratch = static_cast<float*>(b.data.get());
  }
  steps_.push_back([this, &layer, x, y, m, scratch] {
    stream_.wait();  // the primitives before it have written x
    const float* in = static_cast<const float*>(x.get_data_handle());
    float* out = static_cast<float*>(y.get_data_handle());
    switch (layer.kind) {
      case LayerKind::Conv2d: conv2d_forward(layer, in, m, out, scratch); return;
      case LayerKind::Pad: pad_forward(layer, in, m, out); return;
      case LayerKind::ChannelSlice: channel_slice_forward(layer, in, m, out); return;
      case LayerKind::Resize: resize_forward(layer, in, m, out); return;
      case LayerKind::LayerNorm: layernorm_forward(layer, in, m, out); return;
      case LayerKind::AvgPool: avgpool_forward(layer, in, m, out); return;
      case LayerKind::AdaptiveAvgPool: adaptive_avgpool_forward(layer, in, m, out); return;
      default: pointwise_forward(layer, in, m, out); return;
    }
  });
}

}  // namespace infer::cpu
