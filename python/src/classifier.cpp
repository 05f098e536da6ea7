// infer.Classifier and its results, over infer::Classifier (<infer/classifier.h>).
//
// Arrays: run() reads any float32 C-contiguous CPU array that offers the buffer protocol or DLPack
// (numpy, PyTorch's CPU tensors, ...) where it lies, and returns a new numpy array over memory the
// array owns (or writes into `out`): no copy either way. The GIL is released around the work, so
// Python threads classify in parallel, each with its own Classifier; threads sharing one take turns
// (infer::Classifier is not thread-safe, so each PyClassifier has a lock). Construction probes
// NVIDIA's libraries in a child process (fork) while no other thread is inside the library
// (library_lock.h).
#include <nanobind/ndarray.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <charconv>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "bindings.h"
#include "infer/classifier.h"
#include "infer/errors.h"
#include "library_lock.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace infer::python {
namespace {

using FloatArray = nb::ndarray<const float, nb::c_contig, nb::device::cpu>;
using OutArray = nb::ndarray<float, nb::c_contig, nb::device::cpu>;

Device parse_device(const std::string& name) {
  if (name == "auto") return Device::Auto;
  if (name == "gpu") return Device::Gpu;
  if (name == "cpu") return Device::Cpu;
  throw OptionError("device", "must be 'auto', 'gpu' or 'cpu', not '" + name + "'");
}

Precision parse_precision(const std::string& name) {
  for (Precision p : {Precision::Fp32, Precision::Tf32, Precision::Fp16}) {
    if (name == precision_name(p)) return p;
  }
  throw OptionError("precision", "must be 'fp32', 'tf32' or 'fp16', not '" + name + "'");
}

// A Classifier as Python holds it: the library's, the notices its construction gave, one sample's
// buffer for images passed as bytes (allocated once), and the lock its callers take turns on.
struct PyClassifier {
  std::vector<std::string> notices;
  std::unique_ptr<Classifier> classifier;
  std::vector<float> sample;
  std::mutex mutex;

  PyClassifier(std::unique_ptr<Classifier> built, std::vector<std::string> said)
      : notices(std::move(said)), classifier(std::move(built)), sample(classifier->input_size()) {}
};

// Work on `self` with the GIL released: shared with the other threads' work (library_lock.h), then
// this classifier's turn.
template <typename F>
auto with_classifier(PyClassifier& self, F&& work) {
  nb::gil_scoped_release released;
  const std::shared_lock<std::shared_mutex> library(library_lock());
  const std::lock_guard<std::mutex> turn(self.mutex);
  return work(*self.classifier);
}

// The (N, C, H, W) batch `x` for `c`, or OptionError naming `what` and the shape expected.
std::size_t batch_of(const Classifier& c, const FloatArray& x, const char* what) {
  const InputShape s = c.input_shape();
  const bool fits = x.ndim() == 4 && x.shape(1) == static_cast<std::size_t>(s.channels) &&
                    x.shape(2) == static_cast<std::size_t>(s.height) && x.shape(3) == static_cast<std::size_t>(s.width);
  if (!fits) {
    std::string got = "(";
    for (std::size_t i = 0; i < x.ndim(); ++i) got += (i ? ", " : "") + std::to_string(x.shape(i));
    got += x.ndim() == 1 ? ",)" : ")";
    throw OptionError(what, "has shape " + got + "; the model takes (N, " + std::to_string(s.channels) + ", " +
                                std::to_string(s.height) + ", " + std::to_string(s.width) + ") float32");
  }
  return x.shape(0);
}

// Whether `x` is one sample (C, H, W) for `c`: an input or an `out` array.
template <typename Array>
bool is_sample(const Classifier& c, const Array& x) {
  const InputShape s = c.input_shape();
  return x.ndim() == 3 && x.shape(0) == static_cast<std::size_t>(s.channels) &&
         x.shape(1) == static_cast<std::size_t>(s.height) && x.shape(2) == static_cast<std::size_t>(s.width);
}

// "(C, H, W)" of `c`'s samples, for the errors that name the shape.
std::string sample_shape(const Classifier& c) {
  const InputShape s = c.input_shape();
  return "(" + std::to_string(s.channels) + ", " + std::to_string(s.height) + ", " + std::to_string(s.width) + ")";
}

// One sample (C, H, W) of `x`, the same checks.
void require_sample(const Classifier& c, const FloatArray& x) {
  if (!is_sample(c, x)) throw OptionError("samples", "a single sample must have shape " + sample_shape(c));
}

// A new float32 numpy array of `shape` over memory it owns.
template <std::size_t Dims>
nb::ndarray<nb::numpy, float, nb::ndim<Dims>> new_array(const std::size_t (&shape)[Dims]) {
  std::size_t count = 1;
  for (std::size_t d : shape) count *= d;
  auto* data = new float[count > 0 ? count : 1];
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<float*>(p); });
  return nb::ndarray<nb::numpy, float, nb::ndim<Dims>>(data, Dims, shape, owner);
}

// preprocess(): `write` fills a sample, in `out` (checked to be one (C, H, W) sample) or in a new
// array, with the GIL released (preprocess() is safe beside the classifier's other callers).
template <typename Write>
nb::object preprocess_into(const PyClassifier& self, std::optional<OutArray>& out, Write&& write) {
  std::optional<nb::ndarray<nb::numpy, float, nb::ndim<3>>> made;
  float* sample = nullptr;
  if (out) {
    if (!is_sample(*self.classifier, *out)) {
      throw OptionError("out", "must have shape " + sample_shape(*self.classifier) + " float32, C-contiguous");
    }
    sample = out->data();
  } else {
    const InputShape s = self.classifier->input_shape();
    made = new_array<3>(
        {static_cast<std::size_t>(s.channels), static_cast<std::size_t>(s.height), static_cast<std::size_t>(s.width)});
    sample = made->data();
  }
  {
    nb::gil_scoped_release released;
    const std::shared_lock<std::shared_mutex> library(library_lock());
    write(sample);
  }
  return out ? nb::cast(*out) : nb::cast(*made);
}

// The shortest text that reads back as the same float (not the double Python would print).
std::string shortest(float v) {
  char text[32];
  const std::to_chars_result r = std::to_chars(text, text + sizeof text, v);
  return std::string(text, r.ptr);
}

std::string repr(const Prediction& p) {
  return "Prediction(index=" + std::to_string(p.index) + ", label=" + nb::repr(nb::str(p.label.c_str())).c_str() +
         ", score=" + shortest(p.score) + ")";
}

}  // namespace

void bind_classifier(nb::module_& m) {
  // For tests/python: the address run() reads an array at, through the same conversion (none).
  m.def(
      "_data_address", [](FloatArray x) { return reinterpret_cast<std::uintptr_t>(x.data()); }, "x"_a.noconvert());

  m.def(
      "image_file_extensions", [] { return image_file_extensions(); },
      "The extensions of the image files a folder is read for, lower case with the dot ('.png', '.jpg', ...), "
      "as the infer command takes them; a file is decoded by its content, whatever its name.");

  nb::class_<Prediction>(m, "Prediction", "One of the k best classes of an image, best first.")
      .def_ro("index", &Prediction::index, "The class's index in the model's outputs.")
      .def_ro("label", &Prediction::label, "The model's label, or 'class <index>' where it has none.")
      .def_ro("score", &Prediction::score, "A probability when the model outputs probabilities, else a raw score.")
      .def("__repr__", &repr);

  nb::class_<Classification>(m, "Classification", "One image of a list: its predictions, or why it has none.")
      .def_ro("top", &Classification::top, "The predictions, best first; empty when the image failed.")
      .def_ro("error", &Classification::error, "'<file>: <problem>' when the image failed, else ''.")
      .def_prop_ro("ok", &Classification::ok)
      .def("__repr__", [](const Classification& c) {
        if (!c.ok()) return "Classification(error=" + std::string(nb::repr(nb::str(c.error.c_str())).c_str()) + ")";
        std::string s = "Classification(top=[";
        for (std::size_t i = 0; i < c.top.size(); ++i) s += (i ? ", " : "") + repr(c.top[i]);
        return s + "])";
      });

  nb::class_<PyClassifier>(m, "Classifier",
                           "A model ready to classify, on the GPU (cuDNN) or the CPU. Not thread-safe by itself: "
                           "threads that share one take turns; give each thread its own to run in parallel.")
      .def(
          "__init__",
          [](PyClassifier* self, std::optional<std::filesystem::path> model, const std::string& device,
             const std::string& precision, int max_batch, std::uint64_t max_memory, int threads, bool verify,
             std::optional<std::filesystem::path> manifest, int cuda, bool softmax, bool autotune) {
            ClassifierOptions o;
            o.device = parse_device(device);
            o.precision = parse_precision(precision);
            o.max_batch = max_batch;
            o.max_memory = max_memory;
            o.threads = threads;
            o.verify = verify;
            o.manifest = manifest.value_or(std::filesystem::path());
            o.cuda_major = cuda;
            o.softmax = softmax;
            o.autotune = autotune;
            std::vector<std::string> notices;
            o.notice = [&notices](const Notice& n) { notices.push_back(n.message); };
            std::unique_ptr<Classifier> built;
            {
              // Building probes in a child process (fork): no other thread inside the library.
              const std::unique_lock<std::shared_mutex> alone(library_lock());
              built = std::make_unique<Classifier>(model.value_or(std::filesystem::path()), o);
            }
            // Warned before the object exists: a warning turned into an error (python -W error)
            // then destroys `built` here, where nanobind would never destroy a half-made object.
            nb::object warn = nb::module_::import_("warnings").attr("warn");
            nb::object category = nb::module_::import_("infer._infer").attr("Notice");
            for (const std::string& n : notices) warn(n, category, 2);
            new (self) PyClassifier(std::move(built), std::move(notices));
          },
          "model"_a = nb::none(), nb::kw_only(), "device"_a = "auto", "precision"_a = "fp32", "max_batch"_a = 64,
          "max_memory"_a = ClassifierOptions().max_memory, "threads"_a = 0, "verify"_a = true,
          "manifest"_a = nb::none(), "cuda"_a = 0, "softmax"_a = false, "autotune"_a = false,
          "Loads `model` (a model TOML or an ONNX file; None: the shipped model) and builds the backend. "
          "device: 'auto' (the GPU when this machine matches its manifest, else the CPU with an infer.Notice "
          "warning), 'gpu' or 'cpu'. precision: 'fp32', 'tf32' or 'fp16' (the last two need the GPU). cuda: "
          "the GPU backend's CUDA major, 12 or 13 (0: the newest that runs). max_batch: images per backend "
          "call; max_memory: bytes the model may plan for (0: no limit), a larger batch made smaller with a "
          "Notice. threads: CPU threads of the process (0: as they are). verify: check the manifest first. Raises "
          "infer.InputError, "
          "infer.OptionError, infer.GpuUnavailableError, infer.GpuError.")
      .def(
          "classify",
          [](PyClassifier& self, nb::bytes image, int top_k) {
            // Read where it lies: a bytes object cannot change, and the caller holds it.
            const auto* data = reinterpret_cast<const unsigned char*>(image.c_str());
            return with_classifier(self, [&](Classifier& c) {
              c.preprocess(data, image.size(), self.sample.data(), "<bytes>");
              return c.classify(self.sample.data(), top_k);
            });
          },
          "image"_a, "top_k"_a = 3, "The top_k best classes of an encoded image (PNG, JPEG, ...) in memory.")
      .def(
          "classify",
          [](PyClassifier& self, const std::filesystem::path& image, int top_k) {
            return with_classifier(self, [&](Classifier& c) { return c.classify(image, top_k); });
          },
          "image"_a, "top_k"_a = 3, "The top_k best classes of an image file. Raises infer.InputError for it.")
      .def(
          "classify",
          [](PyClassifier& self, const std::vector<std::filesystem::path>& images, int top_k) {
            return with_classifier(self, [&](Classifier& c) { return c.classify_batch(images, top_k); });
          },
          "images"_a, "top_k"_a = 3,
          "Each image file in order, in batches: an image that cannot be classified gets its error in its "
          "Classification, and the others go on.")
      .def(
          "classify",
          [](PyClassifier& self, FloatArray samples, int top_k) {
            std::vector<std::vector<Prediction>> out;
            const bool one = samples.ndim() == 3;
            if (one) require_sample(*self.classifier, samples);
            const std::size_t n = one ? 1 : batch_of(*self.classifier, samples, "samples");
            if (n > 0) {
              out = with_classifier(
                  self, [&](Classifier& c) { return c.classify_samples(samples.data(), static_cast<int>(n), top_k); });
            }
            return one ? nb::cast(out[0]) : nb::cast(out);
          },
          "samples"_a, "top_k"_a = 3,
          "The top_k best classes of preprocessed samples: one (C, H, W) float32 array gives one list, a batch "
          "(N, C, H, W) a list per sample.")
      .def(
          "run",
          [](PyClassifier& self, FloatArray x, std::optional<OutArray> out) -> nb::object {
            const std::size_t n = batch_of(*self.classifier, x, "x");
            const std::size_t classes = self.classifier->output_size();
            std::optional<nb::ndarray<nb::numpy, float, nb::ndim<2>>> made;
            float* y = nullptr;
            if (out) {
              if (out->ndim() != 2 || out->shape(0) != n || out->shape(1) != classes) {
                throw OptionError("out", "must have shape (" + std::to_string(n) + ", " + std::to_string(classes) +
                                             ") float32, C-contiguous");
              }
              y = out->data();
            } else {
              made = new_array<2>({n, classes});
              y = made->data();
            }
            if (n > 0) {
              with_classifier(self, [&](Classifier& c) {
                c.run(x.data(), static_cast<int>(n), y);
                return 0;
              });
            }
            return out ? nb::cast(*out) : nb::cast(*made);
          },
          "x"_a.noconvert(), "out"_a.noconvert() = nb::none(),
          "The network's raw outputs for a batch of preprocessed samples: x is (N, C, H, W) float32, "
          "C-contiguous, on the CPU (numpy, a PyTorch CPU tensor, anything with the buffer protocol or DLPack), "
          "read where it lies; the result is a new (N, classes) float32 numpy array, or `out` when given. "
          "No softmax is added.")
      .def(
          "preprocess",
          [](const PyClassifier& self, const std::filesystem::path& image, std::optional<OutArray> out) {
            return preprocess_into(self, out, [&](float* sample) { self.classifier->preprocess(image, sample); });
          },
          "image"_a, "out"_a.noconvert() = nb::none(),
          "An image file as the network's input: a new (C, H, W) float32 array, or `out` (C, H, W) when given.")
      .def(
          "preprocess",
          [](const PyClassifier& self, nb::bytes image, std::optional<OutArray> out, const std::string& name) {
            const auto* data = reinterpret_cast<const unsigned char*>(image.c_str());  // read where it lies
            return preprocess_into(
                self, out, [&](float* sample) { self.classifier->preprocess(data, image.size(), sample, name); });
          },
          "image"_a, "out"_a.noconvert() = nb::none(), "name"_a = "<bytes>",
          "An encoded image in memory as the network's input: a new (C, H, W) float32 array, or `out` (C, H, "
          "W) when given, such as one row of a batch. `name` stands for the image in an infer.InputError "
          "('<name>: <problem>'; its .file).")
      .def_prop_ro(
          "input_shape",
          [](const PyClassifier& self) {
            const InputShape s = self.classifier->input_shape();
            return nb::make_tuple(s.channels, s.height, s.width);
          },
          "(C, H, W) of one sample.")
      .def_prop_ro("input_size", [](const PyClassifier& self) { return self.classifier->input_size(); })
      .def_prop_ro("output_size", [](const PyClassifier& self) { return self.classifier->output_size(); })
      .def_prop_ro("labels", [](const PyClassifier& self) { return self.classifier->labels(); })
      .def_prop_ro("outputs_probabilities",
                   [](const PyClassifier& self) { return self.classifier->outputs_probabilities(); })
      .def_prop_ro(
          "device", [](const PyClassifier& self) { return std::string(self.classifier->device()); },
          "'cpu' or 'gpu': where it runs.")
      .def_prop_ro("backend", [](const PyClassifier& self) { return self.classifier->backend(); })
      .def_prop_ro("max_batch", [](const PyClassifier& self) { return self.classifier->max_batch(); })
      .def_prop_ro("model_name", [](const PyClassifier& self) { return self.classifier->model_name(); })
      .def_prop_ro("model_path", [](const PyClassifier& self) { return self.classifier->model_path(); })
      .def_prop_ro(
          "notices", [](const PyClassifier& self) { return self.notices; },
          "What construction had to say (each also given as an infer.Notice warning).")
      .def("__repr__", [](const PyClassifier& self) {
        return "<infer.Classifier " + self.classifier->model_name() + " on " + self.classifier->backend() + ">";
      });
}

}  // namespace infer::python
