/* A helper program for the Windows scenario tests: sleeps for argv[1] seconds, then exits. A fake
   NVIDIA DLL starts it (fake_env.h, INFER_FAKE_HELPER) as a library that starts a process would. */
#include <stdlib.h>
#include <windows.h>

int main(int argc, char** argv) {
  Sleep(argc > 1 ? (DWORD)atoi(argv[1]) * 1000u : 60000u);
  return 0;
}
