// Kernel launch, host side: one helper for every CUDA kernel of the library, so PDL and the
// launch-error check are written once.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "cuda/common/cuda_status.h"

namespace ctxattn {

struct LaunchShape {
  dim3 grid;
  dim3 block;
  size_t smem_bytes = 0;
  cudaStream_t stream = nullptr;
  // Programmatic stream serialization: the kernel may start while the previous kernel in the
  // stream drains; it waits for its inputs with griddepcontrol.wait (see pdl.cuh).
  bool pdl = false;
};

template <typename... KernelArgs, typename... Args>
Status launch_kernel(void (*kernel)(KernelArgs...), const LaunchShape& shape, const char* name, Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = shape.grid;
  config.blockDim = shape.block;
  config.dynamicSmemBytes = shape.smem_bytes;
  config.stream = shape.stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = shape.pdl ? 1 : 0;
  CTXATTN_RETURN_IF_ERROR(cuda_status(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...), name));
  return cuda_status(cudaGetLastError(), name);
}

// Raises a kernel's dynamic shared-memory limit once per process and device (the attribute is
// per device; the call costs no device work).
template <typename... KernelArgs>
Status allow_dynamic_smem(void (*kernel)(KernelArgs...), size_t bytes, int device, unsigned long long* done_mask) {
  const unsigned long long bit = device < 64 ? (1ull << device) : 0ull;
  if (bit != 0 && (__atomic_load_n(done_mask, __ATOMIC_ACQUIRE) & bit) != 0) return Status::Ok();
  CTXATTN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  if (bit != 0) __atomic_fetch_or(done_mask, bit, __ATOMIC_RELEASE);
  return Status::Ok();
}

}  // namespace ctxattn
