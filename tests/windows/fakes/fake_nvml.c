/* A fake of the NVIDIA driver's nvml.dll for the Windows scenario tests (never NVIDIA's): the
   release is INFER_FAKE_DRIVER_RELEASE, default "581.15"; INFER_FAKE_HANG=nvml.dll: nvmlInit_v2
   never returns. */
#include <stdio.h>

#include "tests/windows/fakes/fake_env.h"

__declspec(dllexport) int nvmlInit_v2(void) {
  fake_hang_if_asked("nvml.dll");
  return 0;
}
__declspec(dllexport) int nvmlSystemGetDriverVersion(char* version, unsigned length) {
  char buf[64];
  const DWORD n = GetEnvironmentVariableA("INFER_FAKE_DRIVER_RELEASE", buf, sizeof buf);
  snprintf(version, length, "%s", n > 0 && n < sizeof buf ? buf : "581.15");
  return 0;
}
