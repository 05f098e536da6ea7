// A fake libcudnn.so.9 reporting FAKE_CUDNN_VERSION, built for CUDA FAKE_CUDNN_CUDART. Its version
// checks succeed. Its sub-libraries, where it has any, are fake_cudnn_sublibrary.cpp.
#include <cstddef>

extern "C" {
__attribute__((visibility("default"))) std::size_t cudnnGetVersion() { return FAKE_CUDNN_VERSION; }
__attribute__((visibility("default"))) std::size_t cudnnGetCudartVersion() { return FAKE_CUDNN_CUDART; }
__attribute__((visibility("default"))) int cudnnOpsVersionCheck() { return 0; }
__attribute__((visibility("default"))) int cudnnCnnVersionCheck() { return 0; }
__attribute__((visibility("default"))) int cudnnAdvVersionCheck() { return 0; }
__attribute__((visibility("default"))) int cudnnGraphVersionCheck() { return 0; }
}
