// Gathering operands of the tiled path into the contiguous, zero-padded layouts of kernels.h:
// query rows once per work item, K and V tiles once per tile (shared by every query head of the
// group). Inputs are addressed by element offsets, so paging, layouts and strides stay outside.
#pragma once

#include <stdint.h>

#include "core/params.h"
#include "cpu/kernels.h"

namespace ctxattn {
namespace cpu {

// True when every value of the dtype is exactly a bf16: bf16 itself, e4m3, and NVFP4 (an e2m1
// code times an e4m3 scale has at most 6 significant bits).
inline bool exact_in_bf16(ctxattn_dtype_t dtype) {
  return dtype == CTXATTN_DTYPE_BFLOAT16 || dtype == CTXATTN_DTYPE_FLOAT8_E4M3 || dtype == CTXATTN_DTYPE_NVFP4;
}

// The rows of one K or V tile in the cache: each row's element offset (bytes for NVFP4) and,
// for an NVFP4 cache, where its block scales are (K: the offset of the row's first scale, the
// others following; V: the offset of its page x head scale tile, and its slot in the page).
struct TileRows {
  int keys;
  const int64_t* data;
  const int64_t* scale;
  const int64_t* slot;
};

// Query rows: Q[r][0:dp) from q + offsets[r], as fp32 [rows][dp] or bf16 pairs [rows][dp/2]
// (bf16 / e4m3 queries only).
void pack_q_f32(const Params& p, const Kernels& k, const int64_t* offsets, int rows, int dp, float* q);
void pack_q_bf16(const Params& p, const int64_t* offsets, int rows, int dp, uint32_t* q);

// A K tile (keys past rows.keys are zero): K^T as fp32 [dp][kTileKeys] or bf16 pairs along d
// [dp/2][kTileKeys] (caches exact in bf16 only).
void pack_k_f32(const Params& p, const Kernels& k, const TileRows& rows, int dp, float* kt);
void pack_k_bf16(const Params& p, const TileRows& rows, int dp, uint32_t* kt);

// A V tile as fp32 [kTileKeys][dp].
void pack_v_f32(const Params& p, const Kernels& k, const TileRows& rows, int dp, float* v);

}  // namespace cpu
}  // namespace ctxattn
