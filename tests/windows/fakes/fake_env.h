/* What a fake NVIDIA DLL of the Windows scenario tests reads from the environment the test gives
   infer.exe (and so its probe children): the driver's CUDA version, a GPU count, a crash, a hang, a
   helper process. */
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

/* INFER_FAKE_HANG=<file name>: the DLL of that name never returns when called. */
static void fake_hang_if_asked(const char* my_name) {
  char buf[64];
  const DWORD n = GetEnvironmentVariableA("INFER_FAKE_HANG", buf, sizeof buf);
  if (n > 0 && n < sizeof buf && lstrcmpiA(buf, my_name) == 0) Sleep(INFINITE);
}

/* INFER_FAKE_HELPER=<command line>: start that program as some libraries start helpers, with
   bInheritHandles=TRUE, so it inherits every inheritable handle of the process (a probe child's
   pipes among them); INFER_FAKE_HELPER_WAIT=1: then wait for it to end. */
static void fake_start_helper_if_asked(void) {
  char line[1024];
  const DWORD n = GetEnvironmentVariableA("INFER_FAKE_HELPER", line, sizeof line);
  if (n == 0 || n >= sizeof line) return;
  STARTUPINFOA si;
  PROCESS_INFORMATION pi;
  ZeroMemory(&si, sizeof si);
  si.cb = sizeof si;
  if (!CreateProcessA(NULL, line, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi)) return;
  if (fake_env_int("INFER_FAKE_HELPER_WAIT", 0)) WaitForSingleObject(pi.hProcess, INFINITE);
  CloseHandle(pi.hThread);
  CloseHandle(pi.hProcess);
}
