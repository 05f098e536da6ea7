// `infer serve`: runs the server until SIGTERM or SIGINT (docs/serving.md). argv[0] is "serve".
// Returns the exit status (serve_options.cpp's footer lists them).
#pragma once

namespace infer::app {

int run_serve(int argc, char** argv);

}  // namespace infer::app
