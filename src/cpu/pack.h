// Gathering operands of the tiled path into the contiguous, zero-padded layouts of kernels.h:
// query rows once per work item, K and V tiles once per tile (shared by every query head of the
// group). Inputs are addressed by element offsets, so paging, layouts and strides stay outside.
#pragma once

#include <stdint.h>

#include "core/params.h"
#include "cpu/kernels.h"

namespace ctxattn {
namespace cpu {

// True when every value of the dtype is exactly a bf16 (bf16 itself and e4m3).
inline bool exact_in_bf16(ctxattn_dtype_t dtype) {
  return dtype == CTXATTN_DTYPE_BFLOAT16 || dtype == CTXATTN_DTYPE_FLOAT8_E4M3;
}

// Query rows: Q[r][0:dp) from q + offsets[r], as fp32 [rows][dp] or bf16 pairs [rows][dp/2]
// (bf16 / e4m3 queries only).
void pack_q_f32(const Params& p, const Kernels& k, const int64_t* offsets, int rows, int dp, float* q);
void pack_q_bf16(const Params& p, const int64_t* offsets, int rows, int dp, uint32_t* q);

// A K tile of `keys` rows at cache element offsets `offsets` (keys past `keys` are zero):
// K^T as fp32 [dp][kTileKeys] or bf16 pairs along d [dp/2][kTileKeys] (bf16 / e4m3 caches only).
void pack_k_f32(const Params& p, const Kernels& k, const int64_t* offsets, int keys, int dp, float* kt);
void pack_k_bf16(const Params& p, const int64_t* offsets, int keys, int dp, uint32_t* kt);

// A V tile as fp32 [kTileKeys][dp].
void pack_v_f32(const Params& p, const Kernels& k, const int64_t* offsets, int keys, int dp, float* v);

}  // namespace cpu
}  // namespace ctxattn
