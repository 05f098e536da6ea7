/* A stand-in for cuDNN's graph sub-DLL (cudnn_graph64_9.dll) in the Windows tests: a DLL with a
   version resource (graph.rc), exporting one function for the front DLL to import. Never NVIDIA's. */
__declspec(dllexport) int infer_fake_graph_version(void) { return 91900; }
