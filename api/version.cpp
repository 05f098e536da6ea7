#include "infer/version.h"

namespace infer {

Version version() noexcept { return kHeaderVersion; }
const char* version_string() noexcept { return INFER_VERSION_STRING; }

}  // namespace infer
