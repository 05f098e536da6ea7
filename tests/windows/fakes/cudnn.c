/* A stand-in for cuDNN's front DLL (cudnn64_9.dll) in the Windows tests: a DLL with a version
   resource (cudnn.rc) that imports the graph sub-DLL, as the real one imports cudnn_graph64_9.dll.
   Never NVIDIA's: the tests read its headers (manifest/windows/pe_file.h). */
__declspec(dllimport) int infer_fake_graph_version(void);
__declspec(dllexport) unsigned long long cudnnGetVersion(void) { return (unsigned long long)infer_fake_graph_version(); }
