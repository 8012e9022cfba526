// The two warp-level GEMMs of one K/V tile, on m16n8k16 tensor-core MMAs fed by ldmatrix:
//   S[16 x kBlockN] = Q[16 x D] K^T      (Q fragments from the Q tile)
//   O[16 x D]     += P[16 x kBlockN] V   (P straight from the S accumulators, rounded to T)
// Each warp owns kMAtoms m16 atoms of packed rows; every lane holds rows lane/4 and lane/4 + 8 of
// each atom of S and O.
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
// lane & 7, because the row offsets of the calls are multiples of 8: with s = row % 8, chunk
// 2c + half lands at 8 * (c / 4) + ((2 * (c % 4)) ^ (s & 6)) + ((half ^ s) & 1). Two registers
// a lane: the row base with the odd part folded in, and the even part of the swizzle.
struct LdsmLane {
  uint32_t base;  // row offset + 16 * ((half ^ s) & 1)
  uint32_t swz;   // 16 * (s & 6)

  __device__ LdsmLane(int row, int half, int row_chunks) {
    const int sw = row & 7;
    base = (row * row_chunks + ((half ^ sw) & 1)) * 16;
    swz = (sw & 6) * 16;
  }
  // Byte offset of the lane's chunk in chunk pair c (columns 16c .. 16c+15 of a 16-bit row).
  __device__ __forceinline__ uint32_t chunk(int c) const { return base + (c / 4) * 128 + (((c % 4) * 32) ^ swz); }
};

template <typename T, class Tr>
struct WarpMma {
  static constexpr int kAtoms = Tr::kMAtoms;         // m16 atoms a warp runs per fragment of K / V
  static constexpr int kSBlocks = Tr::kBlockN / 8;   // n8 blocks of S
  static constexpr int kOBlocks = Tr::kHeadDimV / 8;  // n8 blocks of O (this CTA's V columns)
  static constexpr int kKSteps = Tr::kHeadDim / 16;  // k16 steps of Q K^T
  static constexpr uint32_t kAtomBytes = 16 * Tr::kRowChunks * 16;  // 16 rows of a tile

  using SAcc = float[kAtoms][kSBlocks][4];
  using OAcc = float[kAtoms][kOBlocks][4];

  // A fragments (Q): rows warp*kWarpRows + 16*atom + lane%16, chunk half lane/16.
  LdsmLane q_lane;
  // B fragments of K (rows = keys): lanes 0-7 / 8-15 keys 0-7 at chunk halves 0 / 1, lanes
  // 16-31 the same for keys 8-15, so one call yields b0, b1 of two n8 blocks.
  LdsmLane k_lane;
  // B fragments of V (rows = keys, transposed): lanes 0-7 keys 0-7, lanes 8-15 keys 8-15, both
  // at chunk half 0; lanes 16-31 the same at chunk half 1.
  LdsmLane v_lane;

  __device__ WarpMma(int warp, int lane)
      : q_lane(warp * Tr::kWarpRows + (lane & 15), lane >> 4, Tr::kRowChunks),
        k_lane((lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1, Tr::kRowChunks),
        v_lane((lane & 7) + (((lane >> 3) & 1) << 3), lane >> 4, Tr::kRowChunks) {}

  __device__ __forceinline__ void load_q_step(uint32_t (&a)[kAtoms][4], uint32_t q_tile, int kk) const {
#pragma unroll
    for (int at = 0; at < kAtoms; ++at) ldmatrix_x4(a[at], q_tile + at * kAtomBytes + q_lane.chunk(kk));
  }

  // One k16 step of S += Q K^T over the first kNb n8 blocks: each K fragment feeds every atom.
  template <int kNb>
  __device__ __forceinline__ void qk_step(SAcc& s, const uint32_t (&a)[kAtoms][4], uint32_t k_tile, int kk) const {
#pragma unroll
    for (int np = 0; np < kNb / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, k_tile + np * kAtomBytes + k_lane.chunk(kk));
#pragma unroll
      for (int at = 0; at < kAtoms; ++at) {
        mma_16816<T>(s[at][2 * np], a[at], b[0], b[1]);
        mma_16816<T>(s[at][2 * np + 1], a[at], b[2], b[3]);
      }
    }
  }

  __device__ __forceinline__ static void clear(SAcc& s) {
#pragma unroll
    for (int at = 0; at < kAtoms; ++at)
#pragma unroll
      for (int nb = 0; nb < kSBlocks; ++nb) s[at][nb][0] = s[at][nb][1] = s[at][nb][2] = s[at][nb][3] = 0.0f;
  }

  // S = Q K^T for the first kNb n8 blocks (keys 8 * kNb and up stay 0), the Q fragments re-read
  // from the Q tile at every k16 step (holding them for the whole CTA would take D/4 registers
  // a thread, which the accumulators need).
  template <int kNb = kSBlocks>
  __device__ __forceinline__ void qk(SAcc& s, uint32_t q_tile, uint32_t k_tile) const {
    clear(s);
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) {
      uint32_t a[kAtoms][4];
      load_q_step(a, q_tile, kk);
      qk_step<kNb>(s, a, k_tile, kk);
    }
  }

  // O += P V over the keys of the first kNb n8 blocks, P = the probabilities the softmax left in s.
  // v_tile: the V tile, advanced to this CTA's first column (kHeadDimV = D / 2 at D = 512: a
  // multiple of 64 columns, so the swizzle of the chunks read is the tile's own).
  template <int kNb = kSBlocks>
  __device__ __forceinline__ void pv(OAcc& o, const SAcc& s, uint32_t v_tile) const {
#pragma unroll
    for (int kk = 0; kk < kNb / 2; ++kk) {
      // The A fragment of keys 16kk..16kk+15 is exactly S blocks 2kk and 2kk+1.
      uint32_t a[kAtoms][4];
#pragma unroll
      for (int at = 0; at < kAtoms; ++at) {
        a[at][0] = pack_float2<T>(s[at][2 * kk][0], s[at][2 * kk][1]);
        a[at][1] = pack_float2<T>(s[at][2 * kk][2], s[at][2 * kk][3]);
        a[at][2] = pack_float2<T>(s[at][2 * kk + 1][0], s[at][2 * kk + 1][1]);
        a[at][3] = pack_float2<T>(s[at][2 * kk + 1][2], s[at][2 * kk + 1][3]);
      }
#pragma unroll
      for (int np = 0; np < kOBlocks / 2; ++np) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, v_tile + kk * kAtomBytes + v_lane.chunk(np));
#pragma unroll
        for (int at = 0; at < kAtoms; ++at) {
          mma_16816<T>(o[at][2 * np], a[at], b[0], b[1]);
          mma_16816<T>(o[at][2 * np + 1], a[at], b[2], b[3]);
        }
      }
    }
  }
};

}  // namespace sm80
}  // namespace ctxattn
