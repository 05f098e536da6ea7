// The shape of infer's Python binding, in pybind11, for bench-bindings.sh: nanobind_probe.cpp's
// module, the same class, method and error.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "probe_model.h"

namespace py = pybind11;

PYBIND11_MODULE(pybind11_probe, m) {
  static py::exception<probe::BadInput> bad_input(m, "BadInput", PyExc_ValueError);
  py::class_<probe::Model>(m, "Model")
      .def(py::init<int>())
      .def("run", [](probe::Model& model, py::array_t<float, py::array::c_style> x) {
        const int n = static_cast<int>(x.shape(0));
        float* out = new float[static_cast<std::size_t>(n) * model.outputs()];
        py::capsule owner(out, [](void* p) { delete[] static_cast<float*>(p); });
        {
          py::gil_scoped_release released;
          model.run(x.data(), n, static_cast<std::size_t>(x.size()) / static_cast<std::size_t>(n), out);
        }
        return py::array_t<float>({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(model.outputs())}, out, owner);
      });
}
