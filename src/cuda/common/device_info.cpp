// Device queries of the CUDA build: availability and compute capability. Host calls only; none
// of them synchronises a stream.
#include <atomic>

#include "core/backends.h"
#include "cuda/common/cuda_status.h"

namespace ctxattn {

bool cuda_built() { return true; }

bool cuda_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // a machine without a driver leaves a sticky "no device" error; clear it
    return false;
  }
  return count > 0;
}

Status cuda_device_arch(int device_index, int* arch) {
  if (!cuda_available()) {
    // A CUDA build on a machine without a GPU (or driver): the same answer as a build without CUDA.
    return Status::Error(CTXATTN_STATUS_NO_DEVICE_SUPPORT,
                         "device_type: CUDA requested, but no CUDA device is available to this process "
                         "(no GPU, no driver, or CUDA_VISIBLE_DEVICES hides them all)");
  }
  int major = 0;
  int minor = 0;
  CTXATTN_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_index));
  CTXATTN_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device_index));
  *arch = major * 10 + minor;
  return Status::Ok();
}

Status cuda_sm_count(int device_index, int* count) {
  // Asked for by the support check, the workspace size and the launch of every call: cached per
  // device (it cannot change while the process runs).
  constexpr int kCached = 64;
  static std::atomic<int> cache[kCached] = {};
  if (device_index >= 0 && device_index < kCached) {
    const int known = cache[device_index].load(std::memory_order_relaxed);
    if (known > 0) {
      *count = known;
      return Status::Ok();
    }
  }
  CTXATTN_CUDA_TRY(cudaDeviceGetAttribute(count, cudaDevAttrMultiProcessorCount, device_index));
  if (device_index >= 0 && device_index < kCached) cache[device_index].store(*count, std::memory_order_relaxed);
  return Status::Ok();
}

}  // namespace ctxattn
