/* A fake of one of cuDNN's sub-DLLs (copied under each sub-DLL's name by the Windows scenario
   tests; never NVIDIA's). As cudnn_graph64_9.dll it answers the front's cudnnGetVersion and
   cudnnGetCudartVersion with its own release: FAKE_VERSION_CODE, FAKE_CUDART from CMake. */
#include <stddef.h>

__declspec(dllexport) size_t cudnnGetVersion(void) { return FAKE_VERSION_CODE; }
__declspec(dllexport) size_t cudnnGetCudartVersion(void) { return FAKE_CUDART; }
