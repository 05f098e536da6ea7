// The oneDNN backend's parts (onednn_backend.cpp): the memory its programs share, and a program,
// the primitives that run layers [0, count) of a network on m samples.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graph/network.h"
#include "platform/huge_pages.h"

namespace infer::cpu {

// A Conv2d layer's weights as oneDNN dimensions: {out, in, kh, kw}, or {groups, out/groups,
// in/groups, kh, kw} for a grouped convolution.
dnnl::memory::dims convolution_weight_dims(const Layer& layer);
// The descriptor of a Conv2d layer's convolution on m samples by `alg`: source and weights in the
// layouts oneDNN prefers (format_tag::any), a bias, symmetric padding (so that the output size is
// PyTorch's floor division), the destination `dst`. The program, the memory plan and the Winograd
// probe (onednn_backend.cpp) all describe convolutions with it.
dnnl::convolution_forward::desc convolution_desc(const Layer& layer, int m, dnnl::algorithm alg,
                                                 const dnnl::memory::desc& dst);
// The descriptor of a pooling layer (MaxPool, AvgPool, GlobalAvgPool, AdaptiveAvgPool) on m samples
// read in layout `src`, its output in the layout oneDNN prefers; nullopt where the program runs the
// layer with the plain kernels instead (an adaptive pool whose windows differ in size, an average
// that counts padding but whose ceil-mode window overhangs). The program and the memory plan both
// describe poolings with it.
std::optional<dnnl::pooling_forward::desc> pooling_desc(const Layer& layer, int m, const dnnl::memory::desc& src);

// Memory shared by every program of one backend; programs run one at a time, so they share it
// all: one buffer per key (an activation and which copy of it), the weights of each layer in each
// layout a primitive wanted, and one scratchpad for every primitive (oneDNN's user scratchpad
// mode: nothing is allocated while running). A program that needs a larger buffer than the key's
// gets a new one; the programs built before keep theirs alive (shared ownership).
class OnednnStorage {
 public:
  // slab_bytes: what the activations of the largest program may take (the memory plan's bound).
  OnednnStorage(const dnnl::engine& engine, std::size_t slab_bytes) : engine_(engine), slab_bytes_(slab_bytes) {}

  using Key = std::pair<std::size_t, int>;  // (activation index, copy number)
  struct Buffer {
    std::shared_ptr<void> data;
    std::size_t bytes = 0;
  };
  // A buffer of at least `bytes` for `key` (64-byte aligned).
  Buffer buffer(Key key, std::size_t bytes);
  // The scratchpad, at least `bytes`.
  Buffer scratchpad(std::size_t bytes) { return grow(scratchpad_, bytes); }
  // Layer `layer`'s parameter `arg` in the layout `desc`, as a program before this one filled it
  // (keep_constant); nothing when none did. Programs reuse the constants of every layout they share.
  std::optional<dnnl::memory> find_constant(std::size_t layer, int arg, const dnnl::memory::desc& desc) const;
  // A new constant's memory (as buffer()'s) and, once filled, the storage's.
  dnnl::memory new_constant(const dnnl::memory::desc& desc);
  void keep_constant(std::size_t layer, int arg, const dnnl::memory& m);

  const dnnl::engine& engine() const { return engine_; }

 private:
  // The activations' buffers are parts of one slab, allocated at the first and offered to huge pages
  // (platform/huge_pages.h), so that the kernel maps a first pass's activations in a few faults
  // rather than one per 4 KiB page (measured: half of MobileNetV3's first pass at batch 1). Its size
  // is the memory plan's, so the plan still bounds what is allocated; past it, each buffer is
  // allocated on its own, as every constant and the scratchpad are.
  Buffer activation(std::size_t bytes);
  Buffer grow(Buffer& b, std::size_t bytes);

  dnnl::engine engine_;
  std::map<Key, Buffer> buffers_;
  Buffer scratchpad_;
  std::map<std::pair<std::size_t, int>, std::vector<dnnl::memory>> constants_;
  std::map<const void*, std::shared_ptr<void>> constant_buffers_;  // new_constant()'s, by address
  std::shared_ptr<void> slab_;                                     // the slab allocate() takes from
  std::size_t slab_bytes_ = 0, slab_used_ = 0;
};

class OnednnProgram {
 public:
  // Builds every primitive (oneDNN JIT-compiles them) and takes its buffers from `storage`: the
  // layers are planned in order (each primitive's descriptor, its buffers), then the primitives are
  // created and the weights reordered on every processor (platform/parallel_jobs.h). Throws dnnl::error when
  // oneDNN cannot create one.
  // winograd: convolutions of winograd_shape() (cpu_backend.h) as oneDNN's Winograd algorithm
  // where it takes them (the direct algorithm where it declines).
  OnednnProgram(const Network& network, OnednnStorage& storage, dnnl::stream& stream, int m, std::size_t count,
                bool winograd);

  // m samples of plain NCHW input in, layer count - 1's output for them out, plain NCHW.
  void run(const float* input, float* output);

 private:
  std::size_t plan_layer(std::size_t i);
  std::size_t plan_convolution(std::size_t i);
  std::optional<std::size_t> residual_input(std::size_t conv, std::size_t last) const;
  void plan_batchnorm(std::size_t i);
  void plan_pooling(std::size_t i);
  void plan_flatten(std::size_t i);
  std::size_t plan_binary(std::size_t i);
  void plan_hard_sigmoid(std::size_t i);
  void plan_plain(std::size_t i);

  const dnnl::memory& source(std::size_t i, std::size_t k = 0) const;
  // A new memory of `desc` for activation a (its next copy).
  dnnl::memory allocate(std::size_t a, const dnnl::memory::desc& desc);
  // Runs the primitive of `pd` (created by a build job) with `args`, its scratchpad added, writing
  // pd's destination as layer i's output.
  void add_primitive(std::size_t i, const dnnl::primitive_desc_base& pd, std::unordered_map<int, dnnl::memory> args);
  void add_call(const dnnl::primitive_desc_base& pd, std::unordered_map<int, dnnl::memory> args);
  // Layer i's parameter `arg` in the layout `wanted`: the storage's, or a new memory, then `fill` is
  // set: a build job must fill it, and the storage keeps it once the program is built.
  dnnl::memory constant(std::size_t i, int arg, const dnnl::memory::desc& wanted, bool& fill);
  // Fills the new constants w and b of the convolution or inner product at i (from its weights in
  // the plain layout `w_given`), with the batch-norm at i + 1 folded in when `fold`: a build job.
  void fill_weights(std::size_t i, bool fold, const dnnl::memory::desc& w_given, const dnnl::memory& w, bool fill_w,
                    const dnnl::memory& b, bool fill_b);
  // Activation a's memory `from` in the layout `desc`: itself, or a copy reordered at run time.
  dnnl::memory in_layout(std::size_t a, const dnnl::memory& from, const dnnl::memory::desc& desc);

  const Network& network_;
  OnednnStorage& storage_;
  dnnl::stream& stream_;
  int m_;
  std::size_t count_;
  bool winograd_;
  dnnl::memory input_;                 // plain NCHW, the caller's input copied in
  dnnl::memory output_;                // the caller's output, plain NCHW (its handle set per run)
  std::vector<dnnl::memory> acts_;     // activation a: the input (0) or layer a - 1's output
  std::map<std::size_t, int> copies_;  // per activation, the buffers taken so far
  std::vector<std::shared_ptr<void>> held_;
  std::vector<std::function<void()>> steps_;
  std::vector<dnnl::primitive> primitives_;  // what steps_ run, one per add_call, made by the build jobs
  std::vector<std::function<void()>> jobs_;  // the build's work after the planning (emptied when done)
  std::vector<std::tuple<std::size_t, int, dnnl::memory>> new_constants_;  // for the storage, once filled
  int threads_ = 1;                                                        // the pass's OpenMP count
  dnnl::reorder output_reorder_;
  bool copy_out_ = false;
};

}  // namespace infer::cpu
