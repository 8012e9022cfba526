// The portable table: the generic kernels compiled for the baseline instruction set of the build
// (SSE2 on x86-64, NEON on AArch64) with 4-lane vectors. 6 rows x 2 vectors keep 12
// accumulators, 2 operands and a broadcast in 16 registers.
#define CTXATTN_VECTOR_BYTES 16
#include "cpu/kernels_generic.h"

namespace ctxattn {
namespace cpu {

const Kernels& kernels_scalar() {
  static const Kernels table = {"scalar", &qk_f32<6, 2>, &softmax, &pv_f32<6, 2>, &f16_to_f32, nullptr};
  return table;
}

}  // namespace cpu
}  // namespace ctxattn
