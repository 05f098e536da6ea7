// The CPU backend on oneDNN (CpuKernels::Onednn, the default): the CPU analogue of the cuDNN
// backend. A batch runs in chunks of kChunk samples, one chunk at a time, each through the
// program (onednn_program.h) for its size and layer count, built on first use (creating the
// primitives JIT-compiles them: `infer` on one image builds only the program for one) and kept. oneDNN's OpenMP threads
// split each primitive. Every program takes its buffers from one OnednnStorage (they run one at a time), so memory is
// that of the largest program, not the sum.
//
// NaN: oneDNN's ReLU, clip and max pooling turn a NaN into a number (max(0, NaN) is 0 in its JIT
// kernels), where PyTorch and the plain kernels keep it: a NaN must never become a 0. So a chunk
// whose input holds a value that is not finite, or whose output does (an overflow inside the
// network), is run again on the plain kernels, whose result it then is. A NaN made from finite
// values inside the network (inf - inf after an overflow) that oneDNN then hides, leaving every
// output finite, is not caught: the weights are finite (model_file.h refuses others), so that
// needs a model whose activations overflow float32.
//
// A network oneDNN declines (dnnl::error while creating a primitive) runs on the plain kernels.
//
// oneDNN's primitive cache is turned off, for the process, when the first backend is made. Its
// evictions break the primitives created after them in oneDNN 2.6 (Debian 12's): surveying
// DenseNet-169 then DenseNet-201 at opset 17 in one process, with the default 1024 entries,
// threw std::bad_array_new_length (or std::bad_alloc) from brgemm_kernel_create while creating a
// convolution, every time; with no cache, or one too large to evict, both matched ONNX Runtime.
// The cache gains nothing here: each program keeps the primitives it needs for its life, and a
// process start to first image measured no slower without it (DenseNet-201: 0.38 s against 0.68 s).
//
// Threads: the count someone chose (--threads, OMP_NUM_THREADS) for every pass; when nobody chose
// one, each program size chooses per pass between every core and one thread by their recent times
// (thread_choice.h), with a program built for each: oneDNN fixes a primitive's thread split when it
// creates it.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/memory_plan.h"
#include "backends/cpu/onednn_program.h"
#include "backends/cpu/thread_choice.h"
#include "backends/cpu/threads.h"

namespace infer {
namespace {

using cpu::OnednnProgram;
using cpu::OnednnStorage;
using cpu::ThreadChoice;

std::string isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "SSE4.1";
    case dnnl::cpu_isa::avx: return "AVX";
    case dnnl::cpu_isa::avx2: return "AVX2";
    case dnnl::cpu_isa::avx2_vnni: return "AVX2 VNNI";
    case dnnl::cpu_isa::avx512_core: return "AVX-512";
    case dnnl::cpu_isa::avx512_core_vnni: return "AVX-512 VNNI";
    case dnnl::cpu_isa::avx512_core_bf16: return "AVX-512 BF16";
    case dnnl::cpu_isa::avx512_core_amx: return "AVX-512 AMX";
    default: return "ISA " + std::to_string(static_cast<int>(isa));
  }
}

// Every core when nobody chose a count and there is more than one: the per-pass choice's count
// (0: the chosen count for every pass).
int adaptive_threads() {
  if (cpu::openmp_threads_chosen()) return 0;
  const int procs = cpu::openmp_processors();
  return procs > 1 ? procs : 0;
}

std::string onednn_name() {
  const dnnl_version_t* v = dnnl_version();
  const int adaptive = adaptive_threads();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) + ", " +
         isa_name(dnnl::get_effective_cpu_isa()) + ", " +
         (adaptive > 0 ? cpu::threads_string(adaptive) + " or 1, whichever runs faster now (no --threads given)"
                       : cpu::threads_string(cpu::onednn_threads()));
}

bool all_finite(const float* v, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(v[i])) return false;
  }
  return true;
}

thread_local int t_last_pass_threads = 0;  // cpu::last_onednn_pass_threads()

// The calling thread's OpenMP count, put back when this goes (the per-pass choice sets it).
class OpenmpCountKept {
 public:
  OpenmpCountKept() : count_(cpu::onednn_threads()) {}
  ~OpenmpCountKept() { cpu::use_openmp_threads_here(count_); }
  OpenmpCountKept(const OpenmpCountKept&) = delete;
  OpenmpCountKept& operator=(const OpenmpCountKept&) = delete;

 private:
  int count_;
};

class OnednnBackend final : public Backend {
 public:
  OnednnBackend(const Network& network, int max_batch, bool winograd)
      : cache_off_(turn_off_primitive_cache()),
        network_(network),
        max_batch_(max_batch),
        winograd_(winograd),
        engine_(dnnl::engine::kind::cpu, 0),
        stream_(engine_),
        storage_(engine_, activation_bytes(network, std::min(max_batch, kChunk))) {
    if (max_batch < 1) throw std::invalid_argument("max_batch must be at least 1");
    chunk_ = std::min(max_batch, kChunk);
  }

  std::string description() const override {
    const bool any = std::any_of(network_.layers().begin(), network_.layers().end(), winograd_shape);
    return "cpu: " + onednn_name() + (winograd_ && any && onednn_has_winograd() ? ", Winograd 3x3" : "");
  }
  const char* device() const override { return "cpu"; }
  int max_batch() const override { return max_batch_; }
  std::size_t layer_count() const override { return network_.layers().size(); }
  std::size_t output_size() const override { return network_.output_dims().size(); }

  void forward(const float* input, int n, float* output, std::size_t layer_count) override {
    check_forward_arguments(n, layer_count);
    const OpenmpCountKept kept;   // a pass at one thread leaves the caller's own OpenMP code as it was
    cpu::apply_openmp_threads();  // this thread may not be the one that set the count
    const std::size_t in_size = network_.input().dims.size();
    const std::size_t out_size = network_.layers()[layer_count - 1].out.size();
    for (int first = 0; first < n; first += chunk_) {
      const int m = std::min(chunk_, n - first);
      const float* x = input + static_cast<std::size_t>(first) * in_size;
      float* y = output + static_cast<std::size_t>(first) * out_size;
      if (all_finite(x, static_cast<std::size_t>(m) * in_size) && run_program(x, m, y, layer_count) &&
          all_finite(y, static_cast<std::size_t>(m) * out_size)) {
        continue;
      }
      plain().forward(x, m, y, layer_count);  // NaN semantics, or no program (see the top of this file)
    }
  }

 private:
  // Once per process, before any primitive is created (the top of this file says why).
  static bool turn_off_primitive_cache() {
    static const bool done = [] {
      dnnl::set_primitive_cache_capacity(0);
      return true;
    }();
    return done;
  }

  // Samples per program run: enough for oneDNN's threads to split the work, few enough for a
  // chunk's activations to stay in the caches (measured: 16 beat 8 and 64 on the shipped model).
  static constexpr int kChunk = 2 * kCpuChunk;

  // The memory plan's bound on a program's activations for a chunk of m samples (the storage's slab).
  static std::size_t activation_bytes(const Network& network, int m) {
    const std::uint64_t bytes = plan_memory(network).sample_bytes * static_cast<std::uint64_t>(std::max(m, 1));
    return static_cast<std::size_t>(std::min<std::uint64_t>(bytes, std::uint64_t{1} << 40));
  }

  // Runs the program for m samples and `count` layers, at the chosen thread count or at the one
  // the per-pass choice picks (timing the pass for it); false when there is no program.
  bool run_program(const float* x, int m, float* y, std::size_t count) {
    const int many = adaptive_threads();
    ThreadChoice* choice = many == 0 ? nullptr : &choices_.try_emplace(std::make_pair(m, count), many).first->second;
    // The chosen count (applied by forward()), or the per-pass choice's, set before program():
    // oneDNN splits the work by it when it creates a primitive.
    const int threads = choice ? choice->next() : cpu::onednn_threads();
    if (choice) cpu::use_openmp_threads_here(threads);
    OnednnProgram* p = program(m, count, threads);
    if (p == nullptr) return false;
    const auto start = std::chrono::steady_clock::now();
    p->run(x, y);
    if (choice) choice->record(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    t_last_pass_threads = threads;
    return true;
  }

  // The program for m samples, `count` layers and `threads` OpenMP threads, the calling thread's
  // count (a program built at another count is another program: a later Classifier may change the
  // process's count); null when oneDNN declined to create one of its primitives (a shape or
  // parameter outside what its implementations take): the plain kernels, which run every network
  // the validator accepts, then run those passes.
  OnednnProgram* program(int m, std::size_t count, int threads) {
    const auto key = std::make_tuple(m, count, threads);
    auto it = programs_.find(key);
    if (it == programs_.end()) {
      std::unique_ptr<OnednnProgram> p;
      try {
        p = std::make_unique<OnednnProgram>(network_, storage_, stream_, m, count, winograd_);
      } catch (const dnnl::error&) {
        p = nullptr;
      }
      it = programs_.emplace(key, std::move(p)).first;
    }
    return it->second.get();
  }

  Backend& plain() {
    if (!plain_) plain_ = make_plain_backend(network_, chunk_);
    return *plain_;
  }

  bool cache_off_;  // first: the cache is off before anything of oneDNN's is made
  const Network& network_;
  int max_batch_;
  bool winograd_;
  int chunk_ = 1;
  std::unique_ptr<Backend> plain_;  // built the first time a chunk is not finite
  dnnl::engine engine_;
  dnnl::stream stream_;
  OnednnStorage storage_;
  std::map<std::tuple<int, std::size_t, int>, std::unique_ptr<OnednnProgram>> programs_;
  std::map<std::pair<int, std::size_t>, ThreadChoice> choices_;  // per (m, count), without a chosen count
};

}  // namespace

std::string cpu_libraries() {
  return onednn_name() + "; plain kernels: " + cpu::gemm_library() + ", " + cpu::threads_string(cpu::gemm_threads());
}

bool onednn_available() { return true; }

int cpu::last_onednn_pass_threads() { return t_last_pass_threads; }

std::unique_ptr<Backend> make_onednn_backend(const Network& network, int max_batch, bool winograd) {
  return std::make_unique<OnednnBackend>(network, max_batch, winograd);
}


std::vector<WinogradMemory> onednn_winograd_memory(const Layer& layer, int max_m) {
  if (!onednn_has_winograd() || !winograd_shape(layer)) return {};
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  std::vector<WinogradMemory> out(static_cast<std::size_t>(std::max(max_m, 1)));
  std::vector<dnnl::memory::desc> layouts;
  WinogradMemory so_far;
  for (int m = 1; m <= max_m; ++m) {
    try {
      const dnnl::memory::desc dst({m, layer.out.c, layer.out.h, layer.out.w}, dnnl::memory::data_type::f32,
                                   dnnl::memory::format_tag::any);
      const dnnl::convolution_forward::primitive_desc pd(
          cpu::convolution_desc(layer, m, dnnl::algorithm::convolution_winograd, dst), attr, engine);
      so_far.scratchpad = std::max<std::uint64_t>(so_far.scratchpad, pd.scratchpad_desc().get_size());
      if (std::find(layouts.begin(), layouts.end(), pd.weights_desc()) == layouts.end()) {
        layouts.push_back(pd.weights_desc());
        so_far.weights += pd.weights_desc().get_size();
      }
    } catch (const dnnl::error&) {
      // Declined for this m: the program runs the direct algorithm, which the plan counts anyway.
    }
    out[static_cast<std::size_t>(m - 1)] = so_far;
  }
  return out;
}

std::uint64_t onednn_scratchpad_memory(const Layer& layer, int max_m) {
  const bool pooling = layer.kind == LayerKind::MaxPool || layer.kind == LayerKind::AvgPool ||
                       layer.kind == LayerKind::GlobalAvgPool || layer.kind == LayerKind::AdaptiveAvgPool;
  if (layer.kind != LayerKind::Conv2d && layer.kind != LayerKind::Linear && !pooling) return 0;
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  using dnnl::memory;
  const auto scratchpad = [&](int m) -> std::uint64_t {
    try {
      if (layer.kind == LayerKind::Linear) {
        const memory::dim c = static_cast<memory::dim>(layer.in.size()), k = layer.out.c;
        const dnnl::inner_product_forward::primitive_desc pd(
            {dnnl::prop_kind::forward_inference, memory::desc({m, c}, memory::data_type::f32, memory::format_tag::any),
             memory::desc({k, c}, memory::data_type::f32, memory::format_tag::any),
             memory::desc({k}, memory::data_type::f32, memory::format_tag::x),
             memory::desc({m, k}, memory::data_type::f32, memory::format_tag::nc)},
            attr, engine);
        return pd.scratchpad_desc().get_size();
      }
      if (pooling) {
        // Its input comes in the layout the layer before wrote: plain NCHW, or blocked by 16
        // channels (AVX-512) or 8 (AVX2). Some poolings transpose a plain input through their
        // scratchpad: the largest of the three.
        std::uint64_t largest = 0;
        for (const memory::format_tag tag :
             {memory::format_tag::nchw, memory::format_tag::nChw16c, memory::format_tag::nChw8c}) {
          const memory::desc src({m, layer.in.c, layer.in.h, layer.in.w}, memory::data_type::f32, tag);
          const std::optional<dnnl::pooling_forward::desc> desc = cpu::pooling_desc(layer, m, src);
          if (!desc) return 0;  // the plain kernels run it: no scratchpad of oneDNN's
          try {
            const dnnl::pooling_forward::primitive_desc pd(*desc, attr, engine);
            largest = std::max<std::uint64_t>(largest, pd.scratchpad_desc().get_size());
          } catch (const dnnl::error&) {
            // Not for this layout here: the others still count.
          }
        }
        return largest;
      }
      const memory::desc dst({m, layer.out.c, layer.out.h, layer.out.w}, memory::data_type::f32,
                             memory::format_tag::any);
      const dnnl::convolution_forward::primitive_desc pd(
          cpu::convolution_desc(layer, m, dnnl::algorithm::convolution_direct, dst), attr, engine);
      return pd.scratchpad_desc().get_size();
    } catch (const dnnl::error&) {
      return 0;  // declined: the program runs the layer with the plain kernels, whose im2col the plan counts
    }
  };
  return std::max(scratchpad(1), max_m > 1 ? scratchpad(max_m) : 0);
}

bool onednn_has_winograd() {
  static const bool has = [] {
    // A small convolution of the accepted shape (16 to 16 channels, 3x3, 8x8, padding 1) on two
    // samples, asked for by algorithm: oneDNN declines (throws) where it has no Winograd kernel.
    Layer probe;
    probe.kind = LayerKind::Conv2d;
    Conv2dAttrs a;
    a.out_channels = 16;
    a.kernel_h = a.kernel_w = 3;
    a.pad_h = a.pad_w = 1;
    probe.attrs = a;
    probe.in = probe.out = Dims{16, 8, 8};
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    try {
      const dnnl::memory::desc dst({2, 16, 8, 8}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
      const dnnl::convolution_forward::primitive_desc pd(
          cpu::convolution_desc(probe, 2, dnnl::algorithm::convolution_winograd, dst), engine);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return has;
}

}  // namespace infer
