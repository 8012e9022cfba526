// CUDA runtime errors as ctxattn Status values: every runtime call and every launch in the CUDA
// backends goes through CTXATTN_CUDA_TRY, so a failure returns CUDA_ERROR with the call named.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "core/status.h"

namespace ctxattn {

inline Status cuda_status(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::Ok();
  return Status::Error(CTXATTN_STATUS_CUDA_ERROR, std::string(what) + " failed: " + cudaGetErrorName(err) + " (" +
                                                      cudaGetErrorString(err) + ")");
}

#define CTXATTN_CUDA_TRY(call) CTXATTN_RETURN_IF_ERROR(::ctxattn::cuda_status((call), #call))

// Makes `device` current for the lifetime of the guard and restores the caller's device after.
class DeviceGuard {
 public:
  DeviceGuard() = default;
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  Status set(int device) {
    CTXATTN_CUDA_TRY(cudaGetDevice(&previous_));
    if (previous_ != device) {
      CTXATTN_CUDA_TRY(cudaSetDevice(device));
      restore_ = true;
    }
    return Status::Ok();
  }
  ~DeviceGuard() {
    if (restore_) cudaSetDevice(previous_);
  }

 private:
  int previous_ = 0;
  bool restore_ = false;
};

}  // namespace ctxattn
