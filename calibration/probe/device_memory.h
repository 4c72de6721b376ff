// RAII owners of CUDA resources: device and pinned host buffers, streams, events, and the current
// device. Constructors throw ProbeError (cuda_check.h); destructors free and never throw, so a
// failed point releases everything it allocated.
#pragma once

#include <cstddef>
#include <utility>

#include <cuda_runtime_api.h>

#include "calibration/probe/cuda_check.h"

namespace cs::probe {

// Makes `device` current for the scope, then restores the previous one.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    CS_CUDA(cudaGetDevice(&previous_));
    CS_CUDA(cudaSetDevice(device));
  }
  ~ScopedDevice() { (void)cudaSetDevice(previous_); }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = 0;
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, std::size_t bytes) : device_(device), bytes_(bytes) {
    ScopedDevice on(device);
    CS_CUDA(cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes));
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      device_ = o.device_;
      bytes_ = o.bytes_;
      ptr_ = std::exchange(o.ptr_, nullptr);
      o.bytes_ = 0;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }
  int device() const { return device_; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  void release() noexcept {
    if (ptr_ == nullptr) return;
    int previous = 0;
    (void)cudaGetDevice(&previous);
    (void)cudaSetDevice(device_);
    (void)cudaFree(ptr_);
    (void)cudaSetDevice(previous);
    ptr_ = nullptr;
  }
  int device_ = 0;
  std::size_t bytes_ = 0;
  void* ptr_ = nullptr;
};

// Page-locked host memory (cudaHostAllocPortable: usable from every device's streams).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes, unsigned flags = cudaHostAllocPortable) : bytes_(bytes) {
    CS_CUDA(cudaHostAlloc(&ptr_, bytes == 0 ? 1 : bytes, flags));
  }
  ~PinnedBuffer() {
    if (ptr_ != nullptr) (void)cudaFreeHost(ptr_);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : bytes_(std::exchange(o.bytes_, 0)), ptr_(std::exchange(o.ptr_, nullptr)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_ != nullptr) (void)cudaFreeHost(ptr_);
      bytes_ = std::exchange(o.bytes_, 0);
      ptr_ = std::exchange(o.ptr_, nullptr);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }

 private:
  std::size_t bytes_ = 0;
  void* ptr_ = nullptr;
};

// A non-blocking stream on `device`.
class Stream {
 public:
  explicit Stream(int device) : device_(device) {
    ScopedDevice on(device);
    CS_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~Stream() {
    if (stream_ == nullptr) return;
    int previous = 0;
    (void)cudaGetDevice(&previous);
    (void)cudaSetDevice(device_);
    (void)cudaStreamSynchronize(stream_);
    (void)cudaStreamDestroy(stream_);
    (void)cudaSetDevice(previous);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& o) noexcept : device_(o.device_), stream_(std::exchange(o.stream_, nullptr)) {}
  Stream& operator=(Stream&&) = delete;

  cudaStream_t get() const { return stream_; }
  int device() const { return device_; }

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
};

// A timing event on `device`.
class Event {
 public:
  explicit Event(int device) : device_(device) {
    ScopedDevice on(device);
    CS_CUDA(cudaEventCreate(&event_));
  }
  ~Event() {
    if (event_ == nullptr) return;
    int previous = 0;
    (void)cudaGetDevice(&previous);
    (void)cudaSetDevice(device_);
    (void)cudaEventDestroy(event_);
    (void)cudaSetDevice(previous);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept : device_(o.device_), event_(std::exchange(o.event_, nullptr)) {}
  Event& operator=(Event&&) = delete;

  cudaEvent_t get() const { return event_; }

 private:
  int device_;
  cudaEvent_t event_ = nullptr;
};

// Seconds between two recorded (and completed) events.
inline double elapsed_seconds(const Event& start, const Event& end) {
  float ms = 0;
  CS_CUDA(cudaEventElapsedTime(&ms, start.get(), end.get()));
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace cs::probe
