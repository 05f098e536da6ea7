/* What a fake NVIDIA DLL of the Windows scenario tests reads from the environment the test gives
   infer.exe (and so its probe children): the driver's CUDA version, a GPU count, a crash. */
#pragma once
#include <stdlib.h>
#include <windows.h>

static int fake_env_int(const char* name, int fallback) {
  char buf[32];
  const DWORD n = GetEnvironmentVariableA(name, buf, sizeof buf);
  return n > 0 && n < sizeof buf ? atoi(buf) : fallback;
}

/* INFER_FAKE_CRASH=<file name>: the DLL of that name faults (an access violation) when called. */
static void fake_crash_if_asked(const char* my_name) {
  char buf[64];
  const DWORD n = GetEnvironmentVariableA("INFER_FAKE_CRASH", buf, sizeof buf);
  if (n > 0 && n < sizeof buf && lstrcmpiA(buf, my_name) == 0) *(volatile int*)(void*)0 = 1;
}
