// infer serve's own executable, infer-serve: `infer serve ARGS` runs it (main.cpp), so that the infer
// command loads none of the server's libraries (gRPC, abseil, full protobuf, cpp-httplib, OpenSSL's
// TLS): mapping and relocating them took about 10 ms of every infer start. `infer-serve ARGS` is
// the same as `infer serve ARGS`.
#include <exception>
#include <iostream>

#include "app/exit_codes.h"
#include "app/serve.h"
#include "platform/printable.h"

int main(int argc, char** argv) {
  try {
    return infer::app::run_serve(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "infer serve: internal error: " << infer::printable_utf8(e.what()) << '\n';
    return infer::app::kExitInternal;
  }
}
