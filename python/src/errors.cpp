// infer's typed errors (<infer/errors.h>) as Python exceptions of matching classes:
//
//   infer.Error (RuntimeError)
//   ├── infer.InputError            .file, .problem     a file (image, model, manifest) is unreadable or invalid
//   │   ├── infer.NotRegularFileError                   a directory, FIFO, device or socket where a file was named
//   │   └── infer.MemoryLimitError  .needed, .limit, .breakdown
//   ├── infer.OptionError (also ValueError)  .option, .problem
//   ├── infer.GpuUnavailableError                       no usable GPU for device="gpu"
//   └── infer.GpuError                                  a CUDA or cuDNN call failed mid-run
//
// The message is the C++ what(), one line. One translator, most derived class first. And a warning
// category, infer.Notice (UserWarning), for what building a Classifier has to say.
#include <Python.h>

#include <string>
#include <utility>

#include "bindings.h"
#include "infer/errors.h"

namespace nb = nanobind;

namespace infer::python {
namespace {

// The exception classes, made once by bind_errors (owned by the module, which holds a reference).
struct Classes {
  PyObject* error = nullptr;
  PyObject* input = nullptr;
  PyObject* not_regular_file = nullptr;
  PyObject* memory_limit = nullptr;
  PyObject* option = nullptr;
  PyObject* gpu_unavailable = nullptr;
  PyObject* gpu = nullptr;
};
Classes classes;

PyObject* new_class(nb::module_& m, const char* name, PyObject* bases, const char* doc) {
  const std::string qualified = std::string("infer._infer.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (!type) throw nb::python_error();
  m.attr(name) = nb::handle(type);  // the module keeps a reference
  Py_DECREF(type);
  return type;
}

// A C++ string as Python text: UTF-8, any byte that is not (a file name's) kept as a surrogate escape.
nb::object text(const std::string& s) {
  return nb::steal(PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape"));
}

// Raises `type` with `message`, the exception object given `attributes` first.
void raise(PyObject* type, const char* message, std::initializer_list<std::pair<const char*, nb::object>> attributes) {
  nb::object exc = nb::steal(PyObject_CallOneArg(type, text(message).ptr()));
  if (!exc.is_valid()) return;  // the call set its own error
  for (const auto& [name, value] : attributes) nb::setattr(exc, name, value);
  PyErr_SetObject(type, exc.ptr());
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const MemoryLimitError& e) {
    raise(classes.memory_limit, e.what(),
          {{"file", text(e.file())},
           {"problem", text(e.problem())},
           {"needed", nb::int_(e.needed())},
           {"limit", nb::int_(e.limit())},
           {"breakdown", text(e.breakdown())}});
  } catch (const NotRegularFileError& e) {
    raise(classes.not_regular_file, e.what(), {{"file", text(e.file())}, {"problem", text(e.problem())}});
  } catch (const InputError& e) {
    raise(classes.input, e.what(), {{"file", text(e.file())}, {"problem", text(e.problem())}});
  } catch (const OptionError& e) {
    raise(classes.option, e.what(), {{"option", text(e.option())}, {"problem", text(e.problem())}});
  } catch (const GpuUnavailableError& e) {
    raise(classes.gpu_unavailable, e.what(), {});
  } catch (const GpuError& e) {
    raise(classes.gpu, e.what(), {});
  } catch (const Error& e) {
    raise(classes.error, e.what(), {});
  }
}

}  // namespace

void bind_errors(nb::module_& m) {
  classes.error = new_class(m, "Error", PyExc_RuntimeError, "Base of every error infer raises on purpose.");
  classes.input = new_class(m, "InputError", classes.error,
                            "A file (image, model, manifest) cannot be read or is invalid: .file, .problem.");
  classes.not_regular_file = new_class(m, "NotRegularFileError", classes.input,
                                       "A path names a directory, FIFO, device or socket, not a regular file.");
  classes.memory_limit = new_class(m, "MemoryLimitError", classes.input,
                                   "One sample needs more memory than max_memory: .needed, .limit, .breakdown.");
  nb::object option_bases = nb::make_tuple(nb::handle(classes.error), nb::handle(PyExc_ValueError));
  classes.option = new_class(m, "OptionError", option_bases.ptr(),
                             "An option or argument the library cannot use: .option, .problem.");
  classes.gpu_unavailable = new_class(m, "GpuUnavailableError", classes.error,
                                      "The GPU backend cannot be used on this machine (device='gpu').");
  classes.gpu = new_class(m, "GpuError", classes.error, "A CUDA or cuDNN call failed while the GPU was in use.");
  new_class(m, "Notice", PyExc_UserWarning,
            "A warning category: what building a Classifier had to say (no manifest, running on the CPU, a "
            "smaller batch), one line each.");
  nb::register_exception_translator(translate);
}

}  // namespace infer::python
