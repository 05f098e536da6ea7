/* A fake of cudart64_N.dll for the Windows scenario tests (never NVIDIA's): cudaRuntimeGetVersion
   says FAKE_CUDART_VERSION (13000 for 13.0). */
__declspec(dllexport) int cudaRuntimeGetVersion(int* v) {
  *v = FAKE_CUDART_VERSION;
  return 0;
}
