// How the server reports what happens (a start, a stop, a failed request): one line at a time, from
// any thread. The library prints nothing itself; the infer command writes these to stderr.
#pragma once

#include <functional>
#include <string>

namespace infer::serve {

using Log = std::function<void(const std::string&)>;

}  // namespace infer::serve
