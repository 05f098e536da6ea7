// The exit codes of `infer`, documented in README.md ("Exit codes"). Scripts rely on them: never
// renumber, only add.
#pragma once

namespace infer::app {

enum ExitCode : int {
  kExitOk = 0,            // every input classified
  kExitInternal = 1,      // a bug: an unexpected error (please report it)
  kExitUsage = 2,         // bad command line
  kExitInvalidInput = 3,  // an input could not be read or is invalid: image, model, weights, manifest
                          // (other images are still classified; the count is on stderr)
  kExitGpuUnusable = 4,   // --device gpu and the GPU cannot be used, or the GPU failed during the run
  kExitEnvironment = 5,   // --check: a required manifest item failed or is unknown
  kExitOutput = 6,        // the results could not be written: standard output (closed, disk full, reader
                          // gone) or --output's file
  kExitServe = 7,         // infer serve: a port could not be listened on, or the drain outlived --drain-timeout
};

}  // namespace infer::app
