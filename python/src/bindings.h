// infer's Python module (_infer, wrapped by the infer package): the public C++ API (<infer/...>)
// bound with nanobind, one file per subject. Only the public API: this module is a program that
// uses the library, like the infer command, and links libinfer.so as any other program would.
#pragma once

#include <nanobind/nanobind.h>

namespace infer::python {

// errors.cpp: infer's typed errors as Python exceptions of matching classes (infer.Error and its
// subclasses), translated wherever a binding throws.
void bind_errors(nanobind::module_& m);

// classifier.cpp: infer.Classifier, infer.Prediction, infer.Classification, infer.model_info.
void bind_classifier(nanobind::module_& m);

// environment.cpp: infer.check_environment (Report, Item), infer.write_manifest, infer.version,
// infer.build_info.
void bind_environment(nanobind::module_& m);

}  // namespace infer::python
