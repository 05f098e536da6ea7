// Memory of the cuDNN backend: the owners (DeviceBuffer, ConstantBuffer, PinnedBuffer) and the
// typed views of device memory that every call of calls.h takes.
//
// A view names device memory and says what a call may do with it:
//   DeviceIn   read only: an operand the call reads (x, w, bias, z, the source of a copy)
//   DeviceOut  writable: an operand the call writes (y, a workspace, the destination of a copy)
//   TensorIn, TensorOut, FilterIn   a descriptor paired with such a view
// Neither view converts to the other, and neither can be made from a raw pointer: only the owners
// hand them out. A DeviceBuffer hands out both, each asked for by name at the call site (in(),
// out(); out() only from a non-const owner); a ConstantBuffer (weights, the zero operands) hands
// out in() only. So a call whose output is given an input, or the reverse, does not compile: that
// is what turns a swap such as the fused convolution's z and y (a void* silently accepted as a
// const void*) into a compile error (tests/backends/cudnn/test_cudnn_views.cpp proves it with static_asserts).
//
// Views carry the size in bytes of what they name, do not own it, and must not outlive their owner.
// The owners are move-only and release their memory in the destructor (errors ignored).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include "backends/cudnn/check.h"

namespace infer::cudnn {

class DeviceBuffer;

// Device memory a call only reads.
class DeviceIn {
 public:
  const void* get() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  // This memory from `offset` bytes in to its end (a slice of a larger tensor). Throws
  // std::logic_error when offset is beyond the view.
  DeviceIn from(std::size_t offset) const {
    if (offset > bytes_) {
      throw std::logic_error("a view from byte " + std::to_string(offset) + " asked of " + std::to_string(bytes_) +
                             " bytes of device memory");
    }
    return DeviceIn(static_cast<const unsigned char*>(data_) + offset, bytes_ - offset);
  }

 private:
  friend class DeviceBuffer;
  DeviceIn(const void* data, std::size_t bytes) : data_(data), bytes_(bytes) {}
  const void* data_;
  std::size_t bytes_;
};

// Device memory a call writes (and may read: an accumulating y, a workspace).
class DeviceOut {
 public:
  void* get() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  // The first `bytes` of this memory (a workspace offered in part). Throws std::logic_error when
  // that is more than the view holds: a bug here, not a condition of the device.
  DeviceOut first(std::size_t bytes) const {
    if (bytes > bytes_) {
      throw std::logic_error("a view of " + std::to_string(bytes) + " bytes asked of " + std::to_string(bytes_) +
                             " bytes of device memory");
    }
    return DeviceOut(data_, bytes);
  }
  // This memory from `offset` bytes in to its end (a slice of a larger tensor). Throws
  // std::logic_error when offset is beyond the view.
  DeviceOut from(std::size_t offset) const {
    if (offset > bytes_) {
      throw std::logic_error("a view from byte " + std::to_string(offset) + " asked of " + std::to_string(bytes_) +
                             " bytes of device memory");
    }
    return DeviceOut(static_cast<unsigned char*>(data_) + offset, bytes_ - offset);
  }

 private:
  friend class DeviceBuffer;
  DeviceOut(void* data, std::size_t bytes) : data_(data), bytes_(bytes) {}
  void* data_;
  std::size_t bytes_;
};

// A tensor a call reads: its descriptor (shape, type, layout at the plan's current batch size)
// and its memory.
class TensorIn {
 public:
  explicit TensorIn(cudnnTensorDescriptor_t desc, DeviceIn data) : desc_(desc), data_(data) {}
  cudnnTensorDescriptor_t desc() const { return desc_; }
  const void* data() const { return data_.get(); }

 private:
  cudnnTensorDescriptor_t desc_;
  DeviceIn data_;
};

// A tensor a call writes.
class TensorOut {
 public:
  explicit TensorOut(cudnnTensorDescriptor_t desc, DeviceOut data) : desc_(desc), data_(data) {}
  cudnnTensorDescriptor_t desc() const { return desc_; }
  void* data() const { return data_.get(); }

 private:
  cudnnTensorDescriptor_t desc_;
  DeviceOut data_;
};

// A convolution filter (always read).
class FilterIn {
 public:
  explicit FilterIn(cudnnFilterDescriptor_t desc, DeviceIn data) : desc_(desc), data_(data) {}
  cudnnFilterDescriptor_t desc() const { return desc_; }
  const void* data() const { return data_.get(); }

 private:
  cudnnFilterDescriptor_t desc_;
  DeviceIn data_;
};

// `bytes` of device memory (cudaMalloc), uninitialised; empty (null views of 0 bytes) when
// bytes == 0. Activations, the workspace, scratch and top-k results: memory the backend writes.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(std::size_t bytes, std::string_view context) : bytes_(bytes) {
    void* p = nullptr;
    if (bytes > 0) INFER_CUDA_CHECK(context, cudaMalloc(&p, bytes));
    memory_ = Memory(p);
  }
  DeviceIn in() const { return DeviceIn(memory_.get(), bytes_); }
  DeviceOut out() { return DeviceOut(memory_.get(), bytes_); }
  std::size_t bytes() const { return bytes_; }

 private:
  using Memory = Owned<void*, cudaFree>;
  Memory memory_;
  std::size_t bytes_ = 0;
};

// Device memory filled once when it is made, then only read: weights, biases, the zero operands.
// Hands out input views only, so nothing can be told to write it.
class ConstantBuffer {
 public:
  ConstantBuffer() = default;
  // `bytes` bytes of host memory at `host`, copied on `stream` (cudaMemcpyAsync): `host` must stay
  // valid until the stream has completed the copy. Throws GpuError naming context.
  static ConstantBuffer upload(const void* host, std::size_t bytes, cudaStream_t stream, std::string_view context) {
    ConstantBuffer b(bytes, context);
    if (bytes > 0) {
      INFER_CUDA_CHECK(context, cudaMemcpyAsync(b.memory_.out().get(), host, bytes, cudaMemcpyHostToDevice, stream));
    }
    return b;
  }
  // `bytes` zero bytes (0.0 in float and in half), set on `stream`. Throws GpuError naming context.
  static ConstantBuffer zeros(std::size_t bytes, cudaStream_t stream, std::string_view context) {
    ConstantBuffer b(bytes, context);
    if (bytes > 0) INFER_CUDA_CHECK(context, cudaMemsetAsync(b.memory_.out().get(), 0, bytes, stream));
    return b;
  }
  DeviceIn in() const { return memory_.in(); }
  std::size_t bytes() const { return memory_.bytes(); }

 private:
  ConstantBuffer(std::size_t bytes, std::string_view context) : memory_(bytes, context) {}
  DeviceBuffer memory_;
};

// `bytes` of page-locked host memory (cudaMallocHost), so that cudaMemcpyAsync is truly
// asynchronous; uninitialised; empty when bytes == 0.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(std::size_t bytes, std::string_view context) : bytes_(bytes) {
    void* p = nullptr;
    if (bytes > 0) INFER_CUDA_CHECK(context, cudaMallocHost(&p, bytes));
    memory_ = Memory(p);
  }
  void* get() const { return memory_.get(); }
  float* floats() const { return static_cast<float*>(memory_.get()); }
  int* ints() const { return static_cast<int*>(memory_.get()); }
  std::size_t bytes() const { return bytes_; }

 private:
  using Memory = Owned<void*, cudaFreeHost>;
  Memory memory_;
  std::size_t bytes_ = 0;
};

}  // namespace infer::cudnn
