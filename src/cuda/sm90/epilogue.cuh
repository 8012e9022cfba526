// The end of a consumer warpgroup: normalise its 64 rows (bmm2_scale / l), write LSE, encode
// the rows in the output kind (fp16, bf16, e4m3, or nvfp4 with its block scales) into a staging
// tile in its own Q region, then store them. fp16 / bf16 rows are staged in the layout of a Q
// tile (64-column chunks of 128-byte swizzled rows), which is that of the output map's TMA box
// (launch.h TmaMaps): when the warpgroup's 64 rows all lie inside the request, one thread stores
// the tile by TMA, a box per chunk, and the warpgroup goes on; the issuing thread waits for the
// boxes' reads before the region is written again (release_staging). Otherwise (a tile across the
// request's end, G not dividing 64, the 8- and 4-bit outputs) the warpgroup stores whole 16-byte
// chunks of each (token, head) row. Rows past the request are never written. The encodings are
// those of cuda/common/output.cuh, bit-identical to the CPU backend's.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include <cute/arch/copy_sm90_tma.hpp>

#include "core/numeric.h"
#include "core/params.h"
#include "cuda/common/convert.cuh"
#include "cuda/common/output.cuh"
#include "cuda/common/rows.cuh"
#include "cuda/sm90/launch.h"
#include "cuda/sm90/load.cuh"
#include "cuda/sm90/pipeline.cuh"
#include "cuda/sm90/traits.cuh"
#include "cuda/sm90/work.cuh"

namespace ctxattn {
namespace sm90 {

template <typename T, class Tr>
struct Epilogue {
  static constexpr int kORegs = Tr::kOCols / 2;
  // The columns of the rows this warpgroup writes (Traits::kColSplit: its half, first_col_of on).
  static constexpr int kCols = Tr::kOCols;

  __device__ static int value_bits(ctxattn_dtype_t kind) {
    if (kind == CTXATTN_DTYPE_NVFP4) return 4;
    return kind == CTXATTN_DTYPE_FLOAT8_E4M3 ? 8 : 16;
  }

  // 16-byte unit `unit` of staged row `row`: 16-bit rows in the Q tile layout (the TMA box's),
  // 8- and 4-bit rows XOR-swizzled by rows.cuh out_chunk.
  __device__ static uint32_t staged_unit(int row, int unit, int bits, int chunks) {
    if (bits == 16) return swizzled_offset(row, unit * 8, kRowsPerWarpgroup);
    return out_chunk(row, unit, chunks);
  }
  __device__ static char* staged(char* stage, int row, int col, int bits, int chunks) {
    const int byte = col * bits / 8;
    return stage + staged_unit(row, byte / 16, bits, chunks) + (byte % 16);
  }

  // Half h of the thread's row `row` (inside the warpgroup's 64) into the staging tile, encoded as
  // Out (__nv_bfloat16, __half, or uint8_t for e4m3). The tile's chunk count is a constant here:
  // computed from the runtime output kind, the 32 staging addresses were evaluated in the
  // prologue and held in registers through the main loop.
  template <typename Out>
  __device__ static void stage_dense(const float (&o)[kORegs], char* stage, int row, int h, int quad) {
    constexpr int kBits = sizeof(Out) * 8;
    constexpr int kChunks = kCols * kBits / 8 / 16;
#pragma unroll
    for (int j = 0; j < kORegs / 4; ++j) {
      const float x = o[4 * j + 2 * h];
      const float y = o[4 * j + 2 * h + 1];
      char* dst = staged(stage, row, j * 8 + 2 * quad, kBits, kChunks);
      if constexpr (kBits == 8) {
        *reinterpret_cast<uint16_t*>(dst) = static_cast<uint16_t>(e4m3x2_bits(x, y));
      } else {
        *reinterpret_cast<uint32_t*>(dst) = pack_float2<Out>(x, y);
      }
    }
  }

  // o: the accumulators (register 4j + 2h + e: row half h, column 8j + 2 * (lane % 4) + e);
  // rows[h]: packed row of half h; table: the warpgroup's row table (load.cuh fill_row_table),
  // no longer read; stage: this warpgroup's Q region (no longer read).
  __device__ static void run(const Params& p, const TmaMaps& maps, const Work& w, float (&o)[kORegs],
                             const float (&l)[2], const float (&lse)[2], const int (&rows)[2], int64_t* table,
                             float bmm2, char* stage, int consumer, int t) {
    // The staging and store addresses derive from t alone; hidden behind an empty asm, they are
    // computed here rather than hoisted into the prologue and held (or spilled) through the main
    // loop (ptxas did that: ~270 instructions and 20-30 spilled registers a work item).
    asm volatile("" : "+r"(t));
    const int lane = t % 32;
    const int first_col = first_col_of<Tr>(consumer);
    const int block = row_block_of<Tr>(consumer);
    const int quad = lane & 3;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // l == 0: no key and no sink, O = 0. A NaN l (a poisoned page) keeps the row NaN.
      const float factor = l[h] == 0.0f ? 0.0f : bmm2 / l[h];
#pragma unroll
      for (int j = 0; j < kORegs / 4; ++j) {
        o[4 * j + 2 * h] *= factor;
        o[4 * j + 2 * h + 1] *= factor;
      }
      // (Column-split warpgroups hold the same rows and LSE: the first writes it.)
      if (p.lse != nullptr && quad == 0 && rows[h] < w.packed_rows && first_col == 0) {
        const Work::Row r = w.row(p, rows[h]);
        p.lse[(w.q_start + r.query) * p.lse_stride_token + static_cast<int64_t>(r.head) * p.lse_stride_head] = lse[h];
      }
    }

    const ctxattn_dtype_t kind = p.out_dtype;
    const int bits = value_bits(kind);
    const int chunks = kCols * bits / 8 / 16;
    constexpr int kNvfp4Chunks = kCols / 32;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = (t / 32) * 16 + (lane >> 2) + 8 * h;  // row inside the warpgroup's 64
      if (kind == CTXATTN_DTYPE_NVFP4) {
#pragma unroll
        for (int blk = 0; blk < kCols / 16; ++blk) {
          const float* a = &o[8 * blk + 2 * h];
          const float* b = &o[8 * blk + 4 + 2 * h];
          float amax = fmaxf(fmaxf(fabsf(a[0]), fabsf(a[1])), fmaxf(fabsf(b[0]), fabsf(b[1])));
          amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
          amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
          const uint32_t packed = nvfp4_block_bits(a[0], a[1], b[0], b[1], amax, p.o_sf_scale);
          const int col = blk * 16 + 2 * quad;
          *reinterpret_cast<uint8_t*>(staged(stage, row, col, 4, kNvfp4Chunks)) =
              static_cast<uint8_t>(packed);
          *reinterpret_cast<uint8_t*>(staged(stage, row, col + 8, 4, kNvfp4Chunks)) =
              static_cast<uint8_t>(packed >> 8);
          if (quad == 0 && rows[h] < w.packed_rows) {
            const Work::Row r = w.row(p, rows[h]);
            const int64_t sf_row = p.out_scale_start_index + w.q_start + r.query;
            const int64_t sf_col = static_cast<int64_t>(r.head) * (Tr::kHeadDim / 16) + first_col / 16 + blk;
            p.out_scale[nvfp4_scale_offset(sf_row, sf_col, p.out_scale_cols)] = static_cast<uint8_t>(packed >> 16);
          }
        }
      } else if (kind == CTXATTN_DTYPE_FLOAT8_E4M3) {
        stage_dense<uint8_t>(o, stage, row, h, quad);
      } else if (kind == CTXATTN_DTYPE_BFLOAT16) {
        stage_dense<__nv_bfloat16>(o, stage, row, h, quad);
      } else {
        stage_dense<__half>(o, stage, row, h, quad);
      }
    }
    // The whole tile by TMA: 64 / G tokens x G heads from the warpgroup's first packed row, a
    // box per 64-column chunk. The vote keeps the branch warp-uniform for the compiler (the
    // condition is uniform: the work item, the warpgroup and the call's map).
    const int first = w.m0 + block * kRowsPerWarpgroup;
    const bool by_tma = bits == 16 && maps.out_tma != 0 && w.packed_rows - first >= kRowsPerWarpgroup;
    if (__all_sync(0xffffffffu, by_tma)) {
      cutlass::arch::fence_view_async_shared();  // the staging stores, read by TMA (async proxy)
      warpgroup_sync(consumer);
      if (t == 0) {
        const int token = static_cast<int>(w.q_start) + p.group_div.div(first);
        const int head = w.kv_head * p.group_size;
#pragma unroll
        for (int c = 0; c < kCols / kChunkCols; ++c) {
          cute::SM90_TMA_STORE_3D::copy(&maps.out, stage + c * kRowsPerWarpgroup * kSwizzleBytes,
                                        first_col + c * kChunkCols, head, token);
        }
        cute::tma_store_arrive();
      }
      return;
    }
    // Whole rows out, 16 bytes a store; strides count 2-byte elements for 16-bit outputs and
    // bytes for e4m3 and nvfp4. The row table, refilled with byte offsets into the output,
    // also orders the staging stores above before the reads below (its warpgroup barrier).
    const int64_t unit = bits == 16 ? 2 : 1;
    const int valid_rows =
        fill_row_table(p, w, table, p.out_stride_token * unit, p.out_stride_head * unit, consumer, block, t);
    // chunks is a power of two (D / 64 * bits / 8 with D in {64, 128, 256}, or 256 columns of 512):
    // shifts, not a division.
    const int log2_chunks = __ffs(chunks) - 1;
    const int row_step = kWarpgroupThreads >> log2_chunks;
    const int chunk = t & (chunks - 1);
    char* out = static_cast<char*>(p.out) + first_col * bits / 8 + chunk * 16;
    for (int row = t >> log2_chunks; row < valid_rows; row += row_step) {
      *reinterpret_cast<uint4*>(out + table[row]) =
          *reinterpret_cast<const uint4*>(stage + staged_unit(row, chunk, bits, chunks));
    }
    // Staging tile and row table are read out before the next item's fill them (Q by TMA: in the
    // async proxy, hence the fence).
    if constexpr (Tr::kQByTma) cutlass::arch::fence_view_async_shared();
    warpgroup_sync(consumer);
  }
};

// Before a consumer warpgroup writes its Q region again (the next Q copy into it, which comes
// first in every later use): its TMA stores of the region have been read out. t == 0 issued them;
// the warpgroup barrier that follows in fill_row_table orders the others' writes after this wait.
__device__ __forceinline__ void release_staging(int t) {
  if (t == 0) cute::tma_store_wait<0>();
}

// At the end of a consumer warpgroup: its TMA stores complete (writes included) before it exits.
__device__ __forceinline__ void finish_stores(int t) {
  if (t == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

}  // namespace sm90
}  // namespace ctxattn
