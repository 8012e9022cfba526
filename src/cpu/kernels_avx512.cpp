// The generic kernels compiled for AVX-512. 6 rows x 4 vectors (a whole 64-key tile) keep 24 of
// the 32 zmm registers as accumulators, leaving room for the 4 key/value operands and a broadcast.
#include <stdint.h>
#include <string.h>

#include <cmath>
#include <limits>
#include <type_traits>

#include "core/numeric.h"
#include "cpu/kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define CTXATTN_KERNELS_F16C 1
#define CTXATTN_VECTOR_BYTES 64

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c")
#endif

#include "cpu/kernels_generic.h"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace ctxattn {
namespace cpu {

const Kernels& kernels_avx512() {
  static const Kernels table = {"avx512", &qk_f32<6, 4>, &softmax, &pv_f32<6, 4>, &f16_to_f32, nullptr};
  return table;
}

}  // namespace cpu
}  // namespace ctxattn

#else

namespace ctxattn {
namespace cpu {
const Kernels& kernels_avx512() { return kernels_scalar(); }
}  // namespace cpu
}  // namespace ctxattn

#endif
