// Every kernel of the backend in one translation unit: what cmake/ptxgen.py hands to NVRTC to
// make the CUDA 12 backend's PTX (backends/cudnn/kernels_driver.cpp loads it). The CUDA 13
// backend compiles the same headers with nvcc instead (kernels_runtime.cu).
#include "backends/cudnn/kernels/convert.cuh"
#include "backends/cudnn/kernels/layernorm.cuh"
#include "backends/cudnn/kernels/pointwise.cuh"
#include "backends/cudnn/kernels/resize.cuh"
#include "backends/cudnn/kernels/top_k.cuh"
