// CTXATTN_HD marks small functions shared by host code and CUDA kernels: inline on the host,
// __host__ __device__ __forceinline__ under nvcc.
#pragma once

#if defined(__CUDACC__)
#define CTXATTN_HD __host__ __device__ __forceinline__
#else
#define CTXATTN_HD inline
#endif
