// The generic kernels compiled for AVX2 + FMA with 8-lane vectors. 6 rows x 2 vectors keep 12 ymm
// accumulators, 2 operands and a broadcast in the 16 registers.
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
#define CTXATTN_VECTOR_BYTES 32

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

#include "cpu/kernels_generic.h"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace ctxattn {
namespace cpu {

const Kernels& kernels_avx2() {
  static const Kernels table = {"avx2", &qk_f32<6, 2>, &softmax, &pv_f32<6, 2>, &f16_to_f32, nullptr};
  return table;
}

}  // namespace cpu
}  // namespace ctxattn

#else

namespace ctxattn {
namespace cpu {
const Kernels& kernels_avx2() { return kernels_scalar(); }
}  // namespace cpu
}  // namespace ctxattn

#endif
