// The engine's typed errors: the public API's (include/infer/errors.h), which only app/ turns into
// messages and exit codes, and ModelError, which never leaves the engine.
#pragma once

#include "infer/errors.h"

namespace infer {

// A network description that is inconsistent (shapes that do not chain, a weight of the wrong
// shape). Thrown while building a Network; the model loader rethrows it as an InputError, and the
// GPU module's C boundary as a GpuError, so that users of the API never receive it.
class ModelError : public Error {
 public:
  using Error::Error;
};

}  // namespace infer
