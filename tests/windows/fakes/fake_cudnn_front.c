/* A fake of cuDNN's front DLL (cudnn64_9.dll, cudnn64_8.dll) for the Windows scenario tests
   (never NVIDIA's), behaving as issue 15 measured the real ones under wine:
   - cuDNN 9: cudnnGetVersion and cudnnGetCudartVersion are the graph sub-DLL's; the front loads
     cudnn_graph64_9.dll through the process's DLL search order (not from its own folder) and ends
     the process when that fails (exit code 9 as issue 15 measured; the real one in a probe child
     under wine fails fast, 0xC0000409: test_windows_scenarios.cpp has both);
   - cuDNN 8: the front answers cudnnGetVersion itself; its sub-DLLs are loaded later (cudnnCreate),
     and a missing one stops the program with "Could not locate cudnn_ops_infer64_8.dll".
   - cuDNN 9's cudnnGetVersion starts a helper process when asked (fake_env.h, INFER_FAKE_HELPER).
   FAKE_MAJOR, FAKE_VERSION_CODE (cudnnGetVersion's count) and FAKE_CUDART come from CMake. */
#include <stddef.h>
#include <stdlib.h>

#include "tests/windows/fakes/fake_env.h"

#if FAKE_MAJOR >= 9
typedef size_t (*GetSize)(void);

static GetSize from_graph(const char* name) {
  HMODULE graph = LoadLibraryW(L"cudnn_graph64_9.dll");
  GetSize f = graph ? (GetSize)(void*)GetProcAddress(graph, name) : NULL;
  if (!f) exit(9);
  return f;
}

__declspec(dllexport) size_t cudnnGetVersion(void) {
  fake_crash_if_asked("cudnn64_9.dll");
  fake_start_helper_if_asked();
  return from_graph("cudnnGetVersion")();
}
__declspec(dllexport) size_t cudnnGetCudartVersion(void) { return from_graph("cudnnGetCudartVersion")(); }
#else
__declspec(dllexport) size_t cudnnGetVersion(void) {
  fake_crash_if_asked("cudnn64_8.dll");
  return FAKE_VERSION_CODE;
}
__declspec(dllexport) size_t cudnnGetCudartVersion(void) { return FAKE_CUDART; }
#endif
