// Programmatic dependent launch, device side. Both instructions exist from sm90 on; compiled for
// older targets they vanish, and on sm90+ they are harmless when the launch did not ask for PDL.
#pragma once

namespace ctxattn {

// Blocks until the grids this launch depends on have completed and their writes are visible.
// Every kernel calls it before its first read of an input.
__device__ __forceinline__ void pdl_wait_for_inputs() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// Lets the next kernel in the stream start its prologue; its own pdl_wait_for_inputs still waits
// for this grid to finish, so this only overlaps launch latency.
__device__ __forceinline__ void pdl_allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

}  // namespace ctxattn
