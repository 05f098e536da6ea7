// A fake cuDNN 9 sub-library (libcudnn_graph.so.9, libcudnn_ops.so.9, ...) for the fake cuDNN
// install of fake_cudnn.cpp: nothing but, where FAKE_CUDNN_VERSION_SYMBOL is defined, the 4-byte
// version symbol the real one carries (manifest/facts.toml: major << 16 | minor << 8 | patch).
#include <cstdint>

#ifdef FAKE_CUDNN_VERSION_SYMBOL
extern "C" {
__attribute__((visibility("default"))) extern const std::uint32_t FAKE_CUDNN_VERSION_SYMBOL;
const std::uint32_t FAKE_CUDNN_VERSION_SYMBOL = FAKE_CUDNN_OWN_VERSION;
}
#endif
