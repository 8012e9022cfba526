// Device queries of the CUDA build: availability and compute capability. Host calls only; none
// of them synchronises a stream.
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
  CTXATTN_CUDA_TRY(cudaDeviceGetAttribute(count, cudaDevAttrMultiProcessorCount, device_index));
  return Status::Ok();
}

}  // namespace ctxattn
