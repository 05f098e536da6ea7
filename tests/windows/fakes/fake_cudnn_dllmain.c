/* A fake cudnn64_9.dll whose DllMain fails (never NVIDIA's), for the Windows scenario tests:
   INFER_FAKE_DLLMAIN=fail returns FALSE from DLL_PROCESS_ATTACH (LoadLibraryExW then fails with
   error 1114, ERROR_DLL_INIT_FAILED); =fault writes through a null pointer there (error 998,
   ERROR_NOACCESS, where the loader catches it). Anything else: it loads, and cudnnGetVersion says 9.19.0. */
#include <stddef.h>

#include "tests/windows/fakes/fake_env.h"

BOOL WINAPI DllMain(HINSTANCE module, DWORD reason, LPVOID reserved) {
  (void)module;
  (void)reserved;
  char mode[16];
  const DWORD n = GetEnvironmentVariableA("INFER_FAKE_DLLMAIN", mode, sizeof mode);
  if (reason != DLL_PROCESS_ATTACH || n == 0 || n >= sizeof mode) return TRUE;
  if (lstrcmpA(mode, "fail") == 0) return FALSE;
  if (lstrcmpA(mode, "fault") == 0) *(volatile int*)(void*)0 = 1;
  return TRUE;
}

__declspec(dllexport) size_t cudnnGetVersion(void) { return 91900; }
__declspec(dllexport) size_t cudnnGetCudartVersion(void) { return 13000; }
