// The two warp-level GEMMs of one K/V tile, on m16n8k16 tensor-core MMAs fed by ldmatrix:
//   S[16 x kBlockN] = Q[16 x D] K^T      (Q fragments from registers or the Q tile)
//   O[16 x D]     += P[16 x kBlockN] V   (P straight from the S accumulators, rounded to T)
// Each warp owns 16 packed rows; every lane holds rows lane/4 and lane/4 + 8 of S and O.
#pragma once

#include <stdint.h>

#include "cuda/common/convert.cuh"
#include "cuda/sm80/ptx.cuh"
#include "cuda/sm80/traits.cuh"

namespace ctxattn {
namespace sm80 {

// Where a lane points its ldmatrix.x4 inside a swizzled tile. A call covers a pair of 8-wide
// column blocks (chunks 2c, 2c+1 of 16 bytes) for 8 or 16 rows; which rows and which chunk of
// the pair a lane addresses depends on the operand. The swizzle (chunk ^ row % 8) only involves
// lane & 7, because the row offsets of the calls are multiples of 8, so the four possible
// chunk-pair offsets inside a group of eight chunks are computed once.
struct LdsmLane {
  uint32_t row_bytes;     // byte offset of the lane's row
  uint32_t pair_off[4];   // byte offset of the lane's chunk for chunk pairs c % 4 = 0..3

  __device__ LdsmLane(int row, int half, int row_chunks) {
    row_bytes = row * row_chunks * 16;
    for (int j = 0; j < 4; ++j) pair_off[j] = (((2 * j) | half) ^ (row & 7)) * 16;
  }
  // Chunk pair c (columns 16c .. 16c+15 of a 16-bit row).
  __device__ __forceinline__ uint32_t chunk(int c) const { return (c / 4) * 128 + pair_off[c % 4]; }
};

template <typename T, class Tr>
struct WarpMma {
  static constexpr int kSBlocks = Tr::kBlockN / 8;   // n8 blocks of S
  static constexpr int kOBlocks = Tr::kHeadDim / 8;  // n8 blocks of O
  static constexpr int kKSteps = Tr::kHeadDim / 16;  // k16 steps of Q K^T

  // A fragments (Q): rows warp*16 + lane%16, chunk half lane/16.
  LdsmLane q_lane;
  // B fragments of K (rows = keys): lanes 0-7 / 8-15 keys 0-7 at chunk halves 0 / 1, lanes
  // 16-31 the same for keys 8-15, so one call yields b0, b1 of two n8 blocks.
  LdsmLane k_lane;
  // B fragments of V (rows = keys, transposed): lanes 0-7 keys 0-7, lanes 8-15 keys 8-15, both
  // at chunk half 0; lanes 16-31 the same at chunk half 1.
  LdsmLane v_lane;

  __device__ WarpMma(int warp, int lane)
      : q_lane(warp * 16 + (lane & 15), lane >> 4, Tr::kRowChunks),
        k_lane((lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1, Tr::kRowChunks),
        v_lane((lane & 7) + (((lane >> 3) & 1) << 3), lane >> 4, Tr::kRowChunks) {}

  __device__ __forceinline__ void load_q_step(uint32_t (&a)[4], uint32_t q_tile, int kk) const {
    ldmatrix_x4(a, q_tile + q_lane.row_bytes + q_lane.chunk(kk));
  }

  __device__ __forceinline__ void load_q(uint32_t (&q)[kKSteps][4], uint32_t q_tile) const {
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) load_q_step(q[kk], q_tile, kk);
  }

  __device__ __forceinline__ void qk_step(float (&s)[kSBlocks][4], const uint32_t (&a)[4], uint32_t k_tile,
                                          int kk) const {
#pragma unroll
    for (int np = 0; np < kSBlocks / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, k_tile + k_lane.row_bytes + np * 16 * Tr::kRowChunks * 16 + k_lane.chunk(kk));
      mma_16816<T>(s[2 * np], a, b[0], b[1]);
      mma_16816<T>(s[2 * np + 1], a, b[2], b[3]);
    }
  }

  // S = Q K^T with Q fragments held in registers.
  __device__ __forceinline__ void qk(float (&s)[kSBlocks][4], const uint32_t (&q)[kKSteps][4],
                                     uint32_t k_tile) const {
#pragma unroll
    for (int nb = 0; nb < kSBlocks; ++nb) s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) qk_step(s, q[kk], k_tile, kk);
  }

  // S = Q K^T with Q fragments re-read from the Q tile.
  __device__ __forceinline__ void qk_from_smem(float (&s)[kSBlocks][4], uint32_t q_tile, uint32_t k_tile) const {
#pragma unroll
    for (int nb = 0; nb < kSBlocks; ++nb) s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) {
      uint32_t a[4];
      load_q_step(a, q_tile, kk);
      qk_step(s, a, k_tile, kk);
    }
  }

  // O += P V, P = the probabilities left in s by the softmax.
  __device__ __forceinline__ void pv(float (&o)[kOBlocks][4], const float (&s)[kSBlocks][4], uint32_t v_tile) const {
#pragma unroll
    for (int kk = 0; kk < Tr::kBlockN / 16; ++kk) {
      // The A fragment of keys 16kk..16kk+15 is exactly S blocks 2kk and 2kk+1.
      const uint32_t a[4] = {pack_float2<T>(s[2 * kk][0], s[2 * kk][1]), pack_float2<T>(s[2 * kk][2], s[2 * kk][3]),
                             pack_float2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                             pack_float2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int np = 0; np < kOBlocks / 2; ++np) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, v_tile + v_lane.row_bytes + kk * 16 * Tr::kRowChunks * 16 + v_lane.chunk(np));
        mma_16816<T>(o[2 * np], a, b[0], b[1]);
        mma_16816<T>(o[2 * np + 1], a, b[2], b[3]);
      }
    }
  }
};

}  // namespace sm80
}  // namespace ctxattn
