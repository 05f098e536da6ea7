// The _infer extension module: see bindings.h.
#include "bindings.h"

NB_MODULE(_infer, m) {
  m.doc() =
      "infer's C++ library from Python: image classification on the GPU (cuDNN) or the CPU, and the "
      "environment check. Use it through the infer package.";
  infer::python::bind_errors(m);
  infer::python::bind_classifier(m);
  infer::python::bind_environment(m);
}
