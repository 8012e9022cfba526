// The attention mask of one CTA: bottom-right causal (query row i of a request sees key
// p = kv_len - q_len + i and earlier), an optional sliding window [p - window_left, p], or no
// mask at all, plus the end of the keys. It answers three questions: which key tiles the CTA
// visits, whether a tile needs masking (only tiles that cross a row's band do), and the masking
// itself for the rows a thread holds.
#pragma once

#include <math_constants.h>

#include "core/params.h"
#include "cuda/sm80/work.cuh"

namespace ctxattn {
namespace sm80 {

template <int kBlockN, int kAtoms>
struct Mask {
  static constexpr int kRows = 2 * kAtoms;
  int kv_len;
  int diag;     // kv_len - q_len: key index of query row 0's diagonal
  int window;   // < 0: none (always < 0 when not causal)
  bool causal;
  int hi_first, lo_last;  // band ends of the CTA's first and last valid query rows
  int key_end;            // last key any row of the CTA attends (hi of the last row)
  int n_min, n_max;       // key tiles this CTA visits, n_max first

  // Allowed keys of query row i: [lo(i), hi(i)].
  __device__ int hi(int i) const {
    if (!causal) return kv_len - 1;
    const int p = diag + i;
    return p < kv_len - 1 ? p : kv_len - 1;
  }
  __device__ int lo(int i) const {
    if (window < 0) return 0;
    const int p = diag + i;
    return p > window ? p - window : 0;  // written so that p - window cannot overflow
  }

  __device__ Mask(const Params& p, const CtaWork& w, int group_size, int block_m) {
    kv_len = w.kv_len;
    diag = w.kv_len - w.q_len;
    causal = p.causal;
    window = p.causal ? p.window_left : -1;
    const int first = w.m0 / group_size;
    const int last_packed = (w.m0 + block_m < w.packed_rows ? w.m0 + block_m : w.packed_rows) - 1;
    const int last = last_packed / group_size;
    hi_first = hi(first);
    lo_last = lo(last);
    key_end = hi(last);
    const int band_max = key_end >= 0 ? key_end / kBlockN : -1;
    const int band_min = lo(first) / kBlockN;
    split_tiles(band_min, band_max, w.piece, w.pieces, &n_min, &n_max);  // the item's piece of them
  }

  // The upper half of tile n lies past every row's band (the diagonal tile of a short CTA, or the
  // end of the keys): its MMAs can be skipped. Never for tiles of 16 keys (D = 512), whose half is
  // one n8 block, less than the pair of blocks each ldmatrix of K / V feeds.
  __device__ bool upper_half_empty(int n) const {
    if constexpr (kBlockN < 32) return false;
    return n * kBlockN + kBlockN / 2 > key_end;
  }

  // A tile needs no mask when it lies inside the band of every row of the CTA.
  __device__ bool needs_mask(int n) const {
    const int k0 = n * kBlockN;
    return !(k0 + kBlockN - 1 <= hi_first && k0 >= lo_last);
  }

  // s: the thread's scores of tile n, layout of the m16n8 accumulators (see ptx.cuh);
  // rows[r]: query row of accumulator row r (any value for padding rows).
  template <int kBlocks>
  __device__ void apply(float (&s)[kAtoms][kBlocks][4], int n, int lane, const int (&rows)[kRows]) const {
    int row_lo[kRows], row_hi[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      row_lo[r] = lo(rows[r]);
      row_hi[r] = hi(rows[r]);
    }
    const int k0 = n * kBlockN + 2 * (lane & 3);
#pragma unroll
    for (int at = 0; at < kAtoms; ++at) {
#pragma unroll
      for (int nb = 0; nb < kBlocks; ++nb) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int j = k0 + nb * 8 + (e & 1);
          const int r = 2 * at + (e >> 1);
          if (j < row_lo[r] || j > row_hi[r]) s[at][nb][e] = -CUDART_INF_F;
        }
      }
    }
  }
};

}  // namespace sm80
}  // namespace ctxattn
