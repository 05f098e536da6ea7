// The shape of infer's Python binding, in nanobind, for bench-bindings.sh (issue 35: choose the
// binding library by measurement). A class built once, a method taking a float32 C-contiguous
// array (no copy) and returning a new array that owns its buffer (no copy), and a typed error.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "probe_model.h"

namespace nb = nanobind;

NB_MODULE(nanobind_probe, m) {
  static nb::exception<probe::BadInput> bad_input(m, "BadInput", PyExc_ValueError);
  nb::class_<probe::Model>(m, "Model")
      .def(nb::init<int>())
      .def("run", [](probe::Model& model, nb::ndarray<const float, nb::c_contig, nb::device::cpu> x) {
        const int n = static_cast<int>(x.shape(0));
        float* out = new float[static_cast<std::size_t>(n) * model.outputs()];
        nb::capsule owner(out, [](void* p) noexcept { delete[] static_cast<float*>(p); });
        {
          nb::gil_scoped_release released;
          model.run(x.data(), n, x.size() / static_cast<std::size_t>(n), out);
        }
        return nb::ndarray<nb::numpy, float, nb::ndim<2>>(out, {static_cast<std::size_t>(n), model.outputs()}, owner);
      });
}
