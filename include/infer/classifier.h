// infer's public C++ API: classify images with a CNN model on the GPU (cuDNN) or the CPU.
//
//   infer::Classifier classifier("model.onnx");            // or a model TOML; empty: the shipped model
//   for (const infer::Prediction& p : classifier.classify("cat.png", 3))
//     std::cout << p.label << ' ' << p.score << '\n';
//
// Errors are thrown, as the types of <infer/errors.h>: setting up throws InputError (the model, the
// manifest, a model file whose SHA-256 the manifest contradicts), OptionError, GpuUnavailableError
// and GpuError (Device::Gpu only; Device::Auto falls back to the CPU with a notice instead). After
// that, one image's InputError is thrown by classify(path) and returned, not thrown, by
// classify_batch(paths), so that one bad image does not stop the others; GpuError (the GPU failing
// mid-run) is always thrown. The library prints nothing: notices go to ClassifierOptions::notice.
//
// Threads. A Classifier is movable, not copyable, and not thread-safe (but for preprocess(), which
// says so): give each thread its own, or lock. A moved-from Classifier may only be destroyed or
// assigned to. Building one (and check_environment) probes NVIDIA's libraries in a child process
// (fork), under one lock for the whole process: build Classifiers while no other thread is inside
// the library, e.g. before starting the threads that classify.
//
// Memory. The backend's buffers (weights, activations, workspace, for max_batch() images) are
// allocated when the Classifier is built, once; classifying allocates only each image's decoded
// pixels and the results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "infer/device.h"
#include "infer/errors.h"
#include "infer/export.h"
#include "infer/preprocessing.h"
#include "infer/version.h"

namespace infer {

// Something the program may want to tell its user while a Classifier is set up. message is the
// whole notice in one line; the other members carry its parts, for a program that words it itself.
struct Notice {
  enum class Kind {
    NoManifest,    // verify, no manifest named, none shipped at `path`: environment and digests unchecked
    CpuFallback,   // Device::Auto runs on the CPU, because of `reason`
    BatchReduced,  // max_batch (`requested_batch`) would need `needed` bytes, over `limit`: runs `batch`
  };
  Kind kind = Kind::NoManifest;
  std::string message;
  std::filesystem::path path;
  std::string reason;
  int requested_batch = 0;
  int batch = 0;
  std::uint64_t needed = 0;
  std::uint64_t limit = 0;
};

// A CpuFallback notice's words: "running on the CPU: <reason>", or where `precision` is not Fp32
// "running on the CPU in fp32 (<setting> <precision_name> needs the GPU): <reason>". Notice::message
// names the setting as ClassifierOptions does ("precision"); a program may name it as its user sets
// it (the infer command: "--precision").
INFER_API std::string cpu_fallback_message(Precision precision, const std::string& reason,
                                           const std::string& setting = "precision");

struct ClassifierOptions {
  Device device = Device::Auto;
  Precision precision = Precision::Fp32;  // Tf32 and Fp16 need the GPU; the CPU runs Fp32 regardless
  int max_batch = 64;                     // images per backend call; buffers are sized for it
  // The memory the model may plan for (parameters, activations, workspace at max_batch); a larger
  // batch is made smaller with a BatchReduced notice. 0: no limit.
  std::uint64_t max_memory = std::uint64_t{4} << 30;
  // CPU threads (oneDNN's OpenMP and OpenBLAS), a setting of the whole process: n > 0 sets it (the
  // last Classifier built with n > 0 decides); 0 leaves it as it is (at first: oneDNN runs each
  // batch on every core or on one, whichever ran the recent batches faster; docs/how-it-works.md).
  int threads = 0;
  // Check the environment manifest first: the model files it lists must match their SHA-256, and
  // (unless Device::Cpu) the machine must match it for the GPU to be used.
  bool verify = true;
  std::filesystem::path manifest;  // empty: the VERSIONS.toml installed with the library
  // A model that does not end with a softmax layer gives raw scores; true applies a softmax to them.
  bool softmax = false;
  PreprocessingOverrides preprocessing;
  // GPU: the backend's CUDA major, 12 or 13 (one module each); 0 takes the INFER_CUDA environment
  // variable when set, else the newest that the driver, the GPU and the manifest allow.
  int cuda_major = 0;
  bool autotune = false;                            // GPU: measure convolution algorithms once, cache them
  std::filesystem::path autotune_cache;             // empty: the default cache file
  std::function<void(const Notice&)> notice;        // called during construction; empty: ignored
  std::function<void(const std::string&)> gpu_log;  // the GPU backend's choices, one line each
};

// Sets the CPU threads of the process as ClassifierOptions::threads does: n > 0 sets them, 0 leaves
// them as they are. For a program that sets them before, or without, building a Classifier (the
// infer command: one thread for a single image). Call while no other thread is inside the library.
INFER_API void set_cpu_threads(int n);

// One of the k best classes of an image, best first.
struct Prediction {
  int index = 0;
  std::string label;   // the model's label, or "class <index>" where it has none
  float score = 0.0f;  // a probability when Classifier::outputs_probabilities(), else a raw score
};

// One image of a batch: its predictions, or why it could not be classified.
struct Classification {
  std::vector<Prediction> top;
  std::string error;  // empty when classified; else "<file>: <problem>" (InputError::what())
  bool ok() const { return error.empty(); }
};

struct InputShape {
  int channels = 0;
  int height = 0;
  int width = 0;
};

class INFER_API Classifier {
 public:
  // Loads `model` (a model TOML, an ONNX file, or a TOML naming one; empty: the model installed
  // with the library) and builds the backend, as `options` say. Throws as the file comment says.
  explicit Classifier(const std::filesystem::path& model = {}, const ClassifierOptions& options = {});
  ~Classifier();
  Classifier(Classifier&&) noexcept;
  Classifier& operator=(Classifier&&) noexcept;
  Classifier(const Classifier&) = delete;
  Classifier& operator=(const Classifier&) = delete;

  // The k best classes of an image file (PNG, JPEG, BMP, GIF, TGA, Netpbm), best first; k is capped
  // at output_size(). Throws InputError for the image, OptionError for k < 1, GpuError.
  std::vector<Prediction> classify(const std::filesystem::path& image, int k = 5);
  // Each image in order, in batches of max_batch(): an unreadable one gets its error in place.
  std::vector<Classification> classify_batch(const std::vector<std::filesystem::path>& images, int k = 5);
  // The k best classes of one preprocessed sample (input_size() floats, C x H x W, normalised).
  std::vector<Prediction> classify(const float* sample, int k = 5);
  // The k best classes of each of n >= 1 preprocessed samples (n x input_size() floats), in batches
  // of max_batch(): a forward pass per batch, not per sample. Throws OptionError for n or k < 1.
  std::vector<std::vector<Prediction>> classify_samples(const float* samples, int n, int k = 5);

  // An image file as the network's input: input_size() floats written to `sample`. Throws InputError.
  void preprocess(const std::filesystem::path& image, float* sample) const;
  // An encoded image in memory (any format the file form reads, by content) as the network's input;
  // `name` stands for it in an InputError's what() ("<name>: <problem>"). For a server, whose images
  // come in requests.
  void preprocess(const unsigned char* bytes, std::size_t size, float* sample, const std::string& name) const;
  // Both preprocess() forms are safe to call from several threads at once, and while one other
  // thread is inside run(): they read only the model's input settings, fixed at construction.
  // The network's raw outputs for n >= 1 preprocessed samples (n x input_size() floats): n x
  // output_size() floats, in batches of max_batch(). No softmax is added. Throws GpuError.
  void run(const float* samples, int n, float* outputs);

  InputShape input_shape() const;
  std::size_t input_size() const;                  // floats per sample: channels x height x width
  std::size_t output_size() const;                 // outputs per sample: the number of classes
  const std::vector<std::string>& labels() const;  // the model's, possibly fewer than output_size()
  bool outputs_probabilities() const;              // the model ends with a softmax, or options.softmax
  const char* device() const;                      // "cpu" or "gpu"
  std::string backend() const;                     // "cpu: oneDNN 2.6 (AVX-512), 2 threads", "gpu: NVIDIA H200, ..."
  int max_batch() const;                           // options.max_batch, or less under max_memory
  std::string model_name() const;
  const std::filesystem::path& model_path() const;  // the model file read

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The file extensions of the image formats a Classifier reads, lower case with the dot (".png",
// ".jpg", ...): what the infer command takes from a directory. A file is decoded by its content,
// whatever its name.
INFER_API const std::vector<std::string>& image_file_extensions();

// A model file's summary, without a backend or the manifest check: what `infer --version` says.
struct ModelInfo {
  std::string name;
  std::filesystem::path path;  // the file read: the one named, or the model installed with the library
  InputShape input;
  std::size_t classes = 0;  // outputs per sample
  std::size_t layers = 0;
};
// Loads `model` (empty: the model installed with the library). Throws InputError.
INFER_API ModelInfo model_info(const std::filesystem::path& model = {});

}  // namespace infer
