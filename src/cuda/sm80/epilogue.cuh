// The end of a CTA: normalise the accumulators (bmm2_scale / l), write LSE, encode the rows in
// the output kind (fp16, bf16, e4m3 or nvfp4 with its scale factors) into a staging tile in
// shared memory, then store whole 16-byte chunks of each (token, head) row. Rows past the
// request are never written.
#pragma once

#include <math_constants.h>
#include <stdint.h>

#include "core/params.h"
#include "cuda/common/convert.cuh"
#include "cuda/common/output.cuh"
#include "cuda/common/rows.cuh"
#include "cuda/sm80/ptx.cuh"
#include "cuda/sm80/swizzle.cuh"
#include "cuda/sm80/traits.cuh"
#include "cuda/sm80/work.cuh"

namespace ctxattn {
namespace sm80 {

// The thread's accumulator rows (row r: atom r / 2, lane/4 + 8 * (r % 2)): query row inside the
// request, query head, and whether the row belongs to the request.
template <int kRows>
struct ThreadRows {
  int token[kRows];
  int head[kRows];
  bool valid[kRows];
};

template <typename T, class Tr>
struct Epilogue {
  static constexpr int kOBlocks = Tr::kHeadDimV / 8;
  static constexpr int kCols = Tr::kHeadDimV;  // output columns of this CTA, from column `col0`
  static constexpr int kRows = Tr::kThreadRows;

  // Bits per output value and byte units of the output strides.
  __device__ static int value_bits(ctxattn_dtype_t kind) {
    if (kind == CTXATTN_DTYPE_NVFP4) return 4;
    return kind == CTXATTN_DTYPE_FLOAT8_E4M3 ? 8 : 16;
  }

  // Address in the staging tile of output column `col` of tile row `row`.
  __device__ static uint32_t staged(uint32_t stage, int row, int col, int bits, int chunks) {
    const int byte = col * bits / 8;
    return stage + out_chunk(row, byte / 16, chunks) + (byte % 16);
  }

  __device__ static void run(const Params& p, const CtaWork& w, float (&o)[Tr::kMAtoms][kOBlocks][4],
                             const float (&l)[kRows], const float (&lse)[kRows], const ThreadRows<kRows>& rows,
                             float bmm2, uint32_t stage, int warp, int lane, int tid, int col0) {
    const int quad = lane & 3;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int at = r / 2;
      const int e0 = 2 * (r % 2);
      // l == 0: no key and no sink, O = 0. A NaN l (a poisoned page) keeps the row NaN.
      const float factor = l[r] == 0.0f ? 0.0f : bmm2 / l[r];
#pragma unroll
      for (int ob = 0; ob < kOBlocks; ++ob) {
        o[at][ob][e0] *= factor;
        o[at][ob][e0 + 1] *= factor;
      }
      if (p.lse != nullptr && quad == 0 && rows.valid[r] && col0 == 0) {
        p.lse[(w.q_start + rows.token[r]) * p.lse_stride_token + static_cast<int64_t>(rows.head[r]) * p.lse_stride_head] =
            lse[r];
      }
    }

    const ctxattn_dtype_t kind = p.out_dtype;
    const int bits = value_bits(kind);
    const int chunks = kCols * bits / 8 / 16;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int at = r / 2;
      const int e0 = 2 * (r % 2);
      const int row = warp * Tr::kWarpRows + at * 16 + (lane >> 2) + 8 * (r % 2);
      if (kind == CTXATTN_DTYPE_NVFP4) {
#pragma unroll
        for (int blk = 0; blk < kCols / 16; ++blk) {
          const float* a = &o[at][2 * blk][e0];
          const float* b = &o[at][2 * blk + 1][e0];
          float amax = fmaxf(fmaxf(fabsf(a[0]), fabsf(a[1])), fmaxf(fabsf(b[0]), fabsf(b[1])));
          amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
          amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
          const uint32_t packed = nvfp4_block_bits(a[0], a[1], b[0], b[1], amax, p.o_sf_scale);
          const int col = blk * 16 + 2 * quad;
          st_shared_8bit(staged(stage, row, col, 4, chunks), packed & 0xffu);
          st_shared_8bit(staged(stage, row, col + 8, 4, chunks), (packed >> 8) & 0xffu);
          if (quad == 0 && rows.valid[r]) {
            const int64_t sf_row = p.out_scale_start_index + w.q_start + rows.token[r];
            const int64_t sf_col = static_cast<int64_t>(rows.head[r]) * (Tr::kHeadDim / 16) + col0 / 16 + blk;
            p.out_scale[nvfp4_scale_offset(sf_row, sf_col, p.out_scale_cols)] = static_cast<uint8_t>(packed >> 16);
          }
        }
      } else {
#pragma unroll
        for (int ob = 0; ob < kOBlocks; ++ob) {
          const int col = ob * 8 + 2 * quad;
          const float x = o[at][ob][e0];
          const float y = o[at][ob][e0 + 1];
          const uint32_t addr = staged(stage, row, col, bits, chunks);
          if (kind == CTXATTN_DTYPE_FLOAT8_E4M3) {
            st_shared_16bit(addr, static_cast<uint16_t>(e4m3x2_bits(x, y)));
          } else if (kind == CTXATTN_DTYPE_BFLOAT16) {
            st_shared_32(addr, pack_float2<__nv_bfloat16>(x, y));
          } else {
            st_shared_32(addr, pack_float2<__half>(x, y));
          }
        }
      }
    }
    __syncthreads();

    // Whole rows out, 16 bytes a store. Strides count elements of 2 bytes for 16-bit outputs and
    // bytes for e4m3 and nvfp4.
    const int64_t unit = bits == 16 ? 2 : 1;
    const int64_t stride_token = p.out_stride_token * unit;
    const int64_t stride_head = p.out_stride_head * unit;
    char* out = static_cast<char*>(p.out) + col0 * bits / 8;
    if (bits == 16) {
      store_rows<kCols / 8>(p, w, out, stage, tid, stride_token, stride_head);
    } else if (bits == 8) {
      store_rows<kCols / 16>(p, w, out, stage, tid, stride_token, stride_head);
    } else {
      store_rows<kCols / 32>(p, w, out, stage, tid, stride_token, stride_head);
    }
  }

  // Copies the staged tile (kChunks 16-byte chunks a row) to the output rows of the request: a
  // thread stores chunk tid % kChunks of every kRowStep-th row.
  template <int kChunks>
  __device__ static void store_rows(const Params& p, const CtaWork& w, char* out_col0, uint32_t stage, int tid,
                                    int64_t stride_token, int64_t stride_head) {
    constexpr int kRowStep = Tr::kThreads / kChunks;
    static_assert(Tr::kThreads % kChunks == 0 && Tr::kBlockM % kRowStep == 0, "whole rows per pass");
    const int chunk = tid % kChunks;
    char* out = out_col0 + chunk * 16;
    PackedRowWalk rows(w, p.group_size, tid / kChunks, kRowStep, stride_token, stride_head);
#pragma unroll 4
    for (int row = tid / kChunks; row < Tr::kBlockM; row += kRowStep, rows.next()) {
      if (rows.packed >= w.packed_rows) break;  // rows only grow
      st_global_16(out + rows.offset, ld_shared_16(stage + out_chunk(row, chunk, kChunks)));
    }
  }
};

}  // namespace sm80
}  // namespace ctxattn
