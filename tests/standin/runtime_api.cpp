// The stand-in's CUDA runtime entry points for errors, the device, memory, copies and versions
// (streams, events and graphs: streams.cpp; kernel launches: kernels.cpp).
//
// Built twice, as libcudart.so.13 and libcudart.so.12 (STANDIN_CUDART_VERSION: 13000 or 12000).
// One device, named standin::kDeviceName, of the compute capability and behind the driver that
// emulated_driver.h reads from the environment (default 9.0 and CUDA 13.0). Like the real
// runtime: the device is hidden when CUDA_VISIBLE_DEVICES is "" or starts with "-1", and a driver
// older than this runtime's CUDA major makes every device call cudaErrorInsufficientDriver.
//
// Copies follow the runtime's documented synchronisation ("API synchronization behavior"): a copy
// from pageable host memory to the device is staged before the call returns (the source may be
// reused at once); a copy from the device to pageable host memory completes before the call returns;
// copies to or from pinned memory (cudaMallocHost) are queued like any other work. Stricter than the
// runtime: inside a stream capture a copy must use pinned host memory (a graph cannot re-read
// pageable memory at each launch).
#include <cstdlib>
#include <cstring>

#include "tests/standin/call_count.h"
#include "tests/standin/emulated_driver.h"
#include "tests/standin/state.h"
#include "tests/standin/visible_devices.h"

namespace standin::detail {
namespace {

thread_local cudaError_t last_error = cudaSuccess;
int current_device = 0;

bool is_device(const void* p) {
  const Allocation* a = find_allocation(p);
  return a && a->kind == MemoryKind::Device;
}

bool is_pinned(const void* p) {
  const Allocation* a = find_allocation(p);
  return a && a->kind == MemoryKind::Pinned;
}

// A host range that lies in pinned memory must lie inside its allocation.
void check_host_range(const char* call, const void* p, std::size_t bytes, const char* arg) {
  const Allocation* a = find_allocation(p);
  if (!a) return;  // pageable: its size is not known here
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  if (begin - a->start + bytes > a->bytes) {
    standin::fail(call, std::string("argument '") + arg + "' runs " +
                            std::to_string(begin - a->start + bytes - a->bytes) +
                            " bytes past the end of its cudaMallocHost allocation");
  }
}

}  // namespace

cudaError_t record(cudaError_t e) {
  if (e != cudaSuccess) last_error = e;
  return e;
}

}  // namespace standin::detail

namespace standin::detail {
namespace {

// What a device call returns before it touches the device: the runtime's error for a driver too
// old for it (cudaErrorInsufficientDriver: its major is newer than the driver's), then for no
// visible device.
cudaError_t device_state() {
  if (standin::driver_cuda_version() / 1000 < STANDIN_CUDART_VERSION / 1000) return cudaErrorInsufficientDriver;
  return standin::cuda_devices_hidden() ? cudaErrorNoDevice : cudaSuccess;
}

}  // namespace
}  // namespace standin::detail

bool standin::device_usable() { return standin::detail::device_state() == cudaSuccess; }

int standin::runtime_version() { return STANDIN_CUDART_VERSION; }

extern "C" __attribute__((visibility("default"))) const standin::DeviceApi* infer_standin_device_api(void) {
  static const standin::DeviceApi api = {standin::require_device, standin::require_host,   standin::fail,
                                         standin::enqueue,        standin::capturing,      standin::synchronize,
                                         standin::device_usable,  standin::runtime_version};
  return &api;
}

using namespace standin::detail;

// This library's call counts (call_count.h).
STANDIN_DEFINE_CALL_COUNTS(infer_standin_cudart_calls)

extern "C" {

__attribute__((visibility("default"))) const char* infer_standin_identity(void) {
#if STANDIN_CUDART_VERSION == 12000
  return "infer CPU stand-in for the CUDA 12.0 runtime (test infrastructure, not NVIDIA's library)";
#else
  return "infer CPU stand-in for the CUDA 13.0 runtime (test infrastructure, not NVIDIA's library)";
#endif
}

// --- errors ---------------------------------------------------------------------------------------

cudaError_t cudaGetLastError(void) {
  STANDIN_COUNT_CALL();
  const cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) {
  STANDIN_COUNT_CALL();
  return last_error;
}

const char* cudaGetErrorName(cudaError_t e) {
  STANDIN_COUNT_CALL();
  switch (e) {
#define STANDIN_NAME(x) \
  case x: return #x;
    STANDIN_NAME(cudaSuccess)
    STANDIN_NAME(cudaErrorInvalidValue)
    STANDIN_NAME(cudaErrorMemoryAllocation)
    STANDIN_NAME(cudaErrorInitializationError)
    STANDIN_NAME(cudaErrorInvalidConfiguration)
    STANDIN_NAME(cudaErrorInvalidDevice)
    STANDIN_NAME(cudaErrorInvalidDeviceFunction)
    STANDIN_NAME(cudaErrorInvalidResourceHandle)
    STANDIN_NAME(cudaErrorInvalidMemcpyDirection)
    STANDIN_NAME(cudaErrorNoDevice)
    STANDIN_NAME(cudaErrorNotReady)
    STANDIN_NAME(cudaErrorIllegalState)
    STANDIN_NAME(cudaErrorIllegalAddress)
    STANDIN_NAME(cudaErrorLaunchFailure)
    STANDIN_NAME(cudaErrorStreamCaptureUnsupported)
    STANDIN_NAME(cudaErrorStreamCaptureInvalidated)
    STANDIN_NAME(cudaErrorStreamCaptureWrongThread)
    STANDIN_NAME(cudaErrorInsufficientDriver)
    STANDIN_NAME(cudaErrorNotSupported)
#undef STANDIN_NAME
    default: return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t e) {
  STANDIN_COUNT_CALL();
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalState: return "the operation is not permitted in this state";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureWrongThread:
      return "attempt to terminate a thread-local capture sequence from another thread";
    default: return "unknown error (infer CPU stand-in)";
  }
}

// --- device and versions --------------------------------------------------------------------------

cudaError_t cudaGetDeviceCount(int* count) {
  STANDIN_COUNT_CALL();
  if (!count) return record(cudaErrorInvalidValue);
  const cudaError_t state = device_state();
  *count = state == cudaSuccess ? 1 : 0;
  return state == cudaSuccess ? cudaSuccess : record(state);
}

cudaError_t cudaSetDevice(int device) {
  STANDIN_COUNT_CALL();
  if (const cudaError_t state = device_state(); state != cudaSuccess) return record(state);
  if (device != 0) return record(cudaErrorInvalidDevice);
  current_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  STANDIN_COUNT_CALL();
  if (!device) return record(cudaErrorInvalidValue);
  *device = current_device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  STANDIN_COUNT_CALL();
  if (!prop) return record(cudaErrorInvalidValue);
  if (const cudaError_t state = device_state(); state != cudaSuccess) return record(state);
  if (device != 0) return record(cudaErrorInvalidDevice);
  std::memset(prop, 0, sizeof *prop);
  std::strncpy(prop->name, standin::kDeviceName, sizeof prop->name - 1);
  prop->major = standin::device_cc() / 10;
  prop->minor = standin::device_cc() % 10;
  prop->totalGlobalMem = std::size_t{16} << 30;
  prop->sharedMemPerBlock = 48 << 10;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 0x7fffffff;
  prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
  prop->warpSize = 32;
  prop->multiProcessorCount = 1;
  prop->unifiedAddressing = 1;
  return cudaSuccess;
}

// Only the attributes the project asks for: the compute capability (emulated_driver.h).
cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  STANDIN_COUNT_CALL();
  if (!value) return record(cudaErrorInvalidValue);
  if (const cudaError_t state = device_state(); state != cudaSuccess) return record(state);
  if (device != 0) return record(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrComputeCapabilityMajor: *value = standin::device_cc() / 10; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor: *value = standin::device_cc() % 10; return cudaSuccess;
    default: standin::fail("cudaDeviceGetAttribute", "attribute " + std::to_string(attr) + " is not emulated");
  }
}

cudaError_t cudaDriverGetVersion(int* version) {
  STANDIN_COUNT_CALL();
  if (!version) return record(cudaErrorInvalidValue);
  *version = standin::driver_cuda_version();  // as the stand-in's libcuda.so.1 says
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  STANDIN_COUNT_CALL();
  if (!version) return record(cudaErrorInvalidValue);
  *version = STANDIN_CUDART_VERSION;
  return cudaSuccess;
}

// --- memory ---------------------------------------------------------------------------------------

cudaError_t cudaMalloc(void** p, size_t bytes) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  if (!p) return record(cudaErrorInvalidValue);
  if (unsafe_during_capture("cudaMalloc")) return record(cudaErrorStreamCaptureUnsupported);
  if (const cudaError_t state = device_state(); state != cudaSuccess) return record(state);
  *p = allocate(bytes, MemoryKind::Device);
  return *p ? cudaSuccess : record(cudaErrorMemoryAllocation);
}

cudaError_t cudaFree(void* p) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  if (!p) return cudaSuccess;
  if (unsafe_during_capture("cudaFree")) return record(cudaErrorStreamCaptureUnsupported);
  drain_all();  // cudaFree synchronises the device
  if (!release(p, MemoryKind::Device)) {
    standin::fail("cudaFree",
                  "argument 'devPtr' is not the start of a live cudaMalloc allocation: " + describe_pointer(p));
  }
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** p, size_t bytes) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  if (!p) return record(cudaErrorInvalidValue);
  if (unsafe_during_capture("cudaMallocHost")) return record(cudaErrorStreamCaptureUnsupported);
  *p = allocate(bytes, MemoryKind::Pinned);
  return *p ? cudaSuccess : record(cudaErrorMemoryAllocation);
}

cudaError_t cudaFreeHost(void* p) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  if (!p) return cudaSuccess;
  if (unsafe_during_capture("cudaFreeHost")) return record(cudaErrorStreamCaptureUnsupported);
  drain_all();
  if (!release(p, MemoryKind::Pinned)) {
    standin::fail("cudaFreeHost",
                  "argument 'ptr' is not the start of a live cudaMallocHost allocation: " + describe_pointer(p));
  }
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  STANDIN_COUNT_CALL();
  if (!free_bytes || !total) return record(cudaErrorInvalidValue);
  *total = std::size_t{16} << 30;
  *free_bytes = *total;
  return cudaSuccess;
}

// --- copies and memsets ---------------------------------------------------------------------------

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream) {
  STANDIN_COUNT_CALL();
  const char* call = "cudaMemcpyAsync";
  const Guard guard(big_lock());
  Stream* s = find_stream(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  if (count == 0) return cudaSuccess;
  if (!dst || !src) return record(cudaErrorInvalidValue);
  if (kind == cudaMemcpyDefault) {
    kind = is_device(dst) ? (is_device(src) ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                          : (is_device(src) ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  }
  const bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind != cudaMemcpyHostToHost && !dst_device && !src_device) return record(cudaErrorInvalidMemcpyDirection);
  if (dst_device) {
    standin::require_device(call, {dst, count, "dst"});
  } else {
    standin::require_host(call, dst, "dst");
    check_host_range(call, dst, count, "dst");
  }
  if (src_device) {
    standin::require_device(call, {src, count, "src"});
  } else {
    standin::require_host(call, src, "src");
    check_host_range(call, src, count, "src");
  }
  const bool pageable = (!dst_device && !is_pinned(dst)) || (!src_device && !is_pinned(src));
  if (pageable && s->capture) {
    if (s->capture->invalidated_by.empty()) s->capture->invalidated_by = "cudaMemcpyAsync with pageable host memory";
    return record(cudaErrorStreamCaptureUnsupported);
  }
  std::vector<standin::Range> ranges;
  if (dst_device) ranges.push_back({dst, count, "dst"});
  if (src_device) ranges.push_back({src, count, "src"});
  if (pageable && !dst_device) {  // device (or host) to pageable host: complete before returning
    drain(*s);
    std::memcpy(dst, src, count);
    return cudaSuccess;
  }
  if (pageable) {  // pageable host to device: staged now, so the caller may reuse src at once
    auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                               static_cast<const unsigned char*>(src) + count);
    return record(static_cast<cudaError_t>(standin::enqueue(
        stream, call, std::move(ranges), [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); })));
  }
  return record(static_cast<cudaError_t>(
      standin::enqueue(stream, call, std::move(ranges), [dst, src, count] { std::memmove(dst, src, count); })));
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  STANDIN_COUNT_CALL();
  {
    const Guard guard(big_lock());
    if (unsafe_during_capture("cudaMemcpy")) return record(cudaErrorStreamCaptureUnsupported);
    drain_all();  // synchronous with respect to the device
  }
  const cudaError_t e = cudaMemcpyAsync(dst, src, count, kind, nullptr);
  if (e == cudaSuccess) cudaDeviceSynchronize();
  return e;
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t count, cudaStream_t stream) {
  STANDIN_COUNT_CALL();
  if (count == 0) return cudaSuccess;
  return record(static_cast<cudaError_t>(standin::enqueue(stream, "cudaMemsetAsync", {{p, count, "devPtr"}},
                                                          [p, value, count] { std::memset(p, value, count); })));
}

cudaError_t cudaMemset(void* p, int value, size_t count) {
  STANDIN_COUNT_CALL();
  const cudaError_t e = cudaMemsetAsync(p, value, count, nullptr);
  if (e == cudaSuccess) cudaDeviceSynchronize();
  return e;
}

}  // extern "C"
