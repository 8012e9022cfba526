// Global -> shared loads of the portable kernel: the Q tile (packed rows, once per CTA) and the
// K/V tiles gathered token by token from the pages named in the block table.
//
// A 16-byte chunk never crosses a token, so each chunk has one source address: page id from the
// block table, slot = token % page_size, both folded with the (arbitrary) strides. A tile may
// span many pages (page_size < kBlockN) or lie inside one (page_size >= kBlockN). Each thread
// always loads the same kKvCols columns of kKvRows rows (traits.cuh).
//
// Safety: tokens at or past kv_len are never read (zeros are stored instead, so masked keys
// contribute exactly 0 * 0); page ids outside [0, num_pages), or table columns past
// max_pages_per_seq, are never read either: K gets NaN (every row that attends the token comes
// out NaN) and V gets zeros (rows that mask the token stay clean).
#pragma once

#include <stdint.h>

#include "core/params.h"
#include "cuda/common/convert.cuh"
#include "cuda/sm80/ptx.cuh"
#include "cuda/sm80/swizzle.cuh"
#include "cuda/sm80/traits.cuh"
#include "cuda/sm80/work.cuh"

namespace ctxattn {
namespace sm80 {

// Fills the Q tile (swizzled, matrix type T) with the CTA's packed rows, negated when `negate`
// (see softmax.cuh); rows past the request are zeros. 16-bit queries are copied with cp.async
// (the caller waits, then calls negate_q_chunks); fp8 queries are widened, and negated, here.
template <typename T, class Tr>
__device__ __forceinline__ void load_q(const Params& p, const CtaWork& w, uint32_t q_tile, int tid, bool negate) {
  const uint32_t sign = negate ? 0x80008000u : 0u;
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  const char* q_base = static_cast<const char*>(p.q);
  if (p.q_dtype == CTXATTN_DTYPE_FLOAT8_E4M3) {
    // A thread reads source chunk tid % kSrcChunks (16 e4m3 values) of every kRowStep-th row.
    constexpr int kSrcChunks = Tr::kHeadDim / 16;
    constexpr int kRowStep = Tr::kThreads / kSrcChunks;
    static_assert(Tr::kThreads % kSrcChunks == 0 && Tr::kBlockM % kRowStep == 0, "whole rows per pass");
    const int chunk = tid % kSrcChunks;
    PackedRowWalk rows(w, p.group_size, tid / kSrcChunks, kRowStep, p.q_stride_token, p.q_stride_head);
#pragma unroll 4
    for (int row = tid / kSrcChunks; row < Tr::kBlockM; row += kRowStep, rows.next()) {
      uint4 lo = zero;
      uint4 hi = zero;
      if (rows.packed < w.packed_rows) {
        const uint4 raw = ld_global_nc_16(q_base + rows.offset + chunk * 16);
        e4m3x16_to<T>(raw, lo, hi);
        lo = make_uint4(lo.x ^ sign, lo.y ^ sign, lo.z ^ sign, lo.w ^ sign);
        hi = make_uint4(hi.x ^ sign, hi.y ^ sign, hi.z ^ sign, hi.w ^ sign);
      }
      st_shared_16(q_tile + swizzled_chunk(row, 2 * chunk, Tr::kRowChunks), lo);
      st_shared_16(q_tile + swizzled_chunk(row, 2 * chunk + 1, Tr::kRowChunks), hi);
    }
  } else {
    // A thread copies chunk tid % kRowChunks of every kRowStep-th row.
    constexpr int kRowStep = Tr::kThreads / Tr::kRowChunks;
    static_assert(Tr::kThreads % Tr::kRowChunks == 0 && Tr::kBlockM % kRowStep == 0, "whole rows per pass");
    const int chunk = tid % Tr::kRowChunks;
    PackedRowWalk rows(w, p.group_size, tid / Tr::kRowChunks, kRowStep, p.q_stride_token * 2, p.q_stride_head * 2);
#pragma unroll 4
    for (int row = tid / Tr::kRowChunks; row < Tr::kBlockM; row += kRowStep, rows.next()) {
      const uint32_t dst = q_tile + swizzled_chunk(row, chunk, Tr::kRowChunks);
      if (rows.packed < w.packed_rows) {
        cp_async_16(dst, q_base + rows.offset + chunk * 16);
      } else {
        st_shared_16(dst, zero);
      }
    }
  }
}

// 16-bit queries with bmm1_scale < 0: flips the sign of the chunks this thread copied into the
// Q tile (the same chunks load_q issued), after its cp.async wait and before the barrier.
template <class Tr>
__device__ __forceinline__ void negate_q_chunks(const Params& p, uint32_t q_tile, int tid) {
  if (p.q_dtype == CTXATTN_DTYPE_FLOAT8_E4M3) return;  // negated while widening
  for (int c = tid; c < Tr::kBlockM * Tr::kRowChunks; c += Tr::kThreads) {
    const int row = c / Tr::kRowChunks;
    const uint32_t addr = q_tile + swizzled_chunk(row, c % Tr::kRowChunks, Tr::kRowChunks);
    const uint4 v = ld_shared_16(addr);
    st_shared_16(addr, make_uint4(v.x ^ 0x80008000u, v.y ^ 0x80008000u, v.z ^ 0x80008000u, v.w ^ 0x80008000u));
  }
}

template <typename T, class Tr>
struct KvGather {
  static constexpr int kRows = Tr::kKvRows;
  static constexpr int kCols = Tr::kKvCols;
  // Page id marker of a token at or past kv_len (never a valid id, never read).
  static constexpr int32_t kPastEnd = INT32_MIN;

  // Strides and sizes are read from the kernel parameters at each use (constant memory), so the
  // gather keeps only what differs per thread in registers.
  const char* k_head;    // K of this KV head in page 0, plus this thread's first column (bytes)
  const char* v_head;
  const int32_t* table;    // the request's block-table row
  const int32_t* v_table;  // its V row (the same unless K / V page indices are separate)
  int kv_len;
  int kv_head;
  int col0;  // first chunk column this thread loads; the others follow every kKvThreadsPerRow
  int row0;  // first tile row this thread loads; the others follow every kKvRowsPerPass rows
  int32_t page[kRows];  // page ids of the next tile to issue

  __device__ KvGather(const Params& p, const CtaWork& w, int tid) {
    col0 = tid % Tr::kKvThreadsPerRow;
    row0 = tid / Tr::kKvThreadsPerRow;
    k_head = static_cast<const char*>(p.k) + w.kv_head * p.k_stride_head * Tr::kKvStrideBytes + col0 * 16;
    v_head = static_cast<const char*>(p.v) + w.kv_head * p.v_stride_head * Tr::kKvStrideBytes + col0 * 16;
    table = p.block_tables + static_cast<int64_t>(w.batch) * p.block_tables_stride;
    v_table = p.v_block_tables + static_cast<int64_t>(w.batch) * p.block_tables_stride;
    kv_len = w.kv_len;
    kv_head = w.kv_head;
  }

  __device__ __forceinline__ int row(int k) const { return row0 + k * Tr::kKvRowsPerPass; }
  __device__ __forceinline__ int col(int c) const { return col0 + c * Tr::kKvThreadsPerRow; }

  // Starts reading the page ids of tile n; the values are first used by issue(), an iteration
  // later, so the table read overlaps the MMAs in between.
  __device__ __forceinline__ void fetch_pages(const Params& p, int n) {
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      const int token = n * Tr::kBlockN + row(k);
      const int column = token >> p.log2_page_size;
      int32_t id = kPastEnd;
      if (token < kv_len) id = column < p.max_pages_per_seq ? __ldg(table + column) : -1;
      page[k] = id;
    }
  }

  // Destination of chunk (row k, column c) of this thread: the raw e4m3 / NVFP4 tile is
  // unswizzled (only its writer reads it back), 16-bit tiles are swizzled for ldmatrix.
  __device__ __forceinline__ uint32_t dst_offset(int k, int c) const {
    if constexpr (Tr::kKvRaw) return (row(k) * Tr::kKvRowChunks + col(c)) * 16;
    return swizzled_chunk(row(k), col(c), Tr::kRowChunks);
  }

  // Issues tile n (page ids from fetch_pages(n)) into the K/V tiles at k_dst / v_dst (NVFP4:
  // the raw tiles, with the block scales into the scale tiles beside them).
  __device__ __forceinline__ void issue(const Params& p, int n, uint32_t k_dst, uint32_t v_dst) const {
    if constexpr (Tr::kKvFp4) {
      issue_scales(p, n, k_dst + (Tr::kSmemScaleK - Tr::kSmemRawK), v_dst + (Tr::kSmemScaleV - Tr::kSmemRawV));
    }
    if (p.separate_kv_idx) {
      issue_separate(p, n, k_dst, v_dst);
      return;
    }
    const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
    const uint4 nan = make_uint4(~0u, ~0u, ~0u, ~0u);  // NaN in fp16, bf16 and e4m3 alike
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      const int token = n * Tr::kBlockN + row(k);
      const int32_t id = page[k];
      if (id >= 0 && id < p.num_pages) {
        const int64_t slot = token & (p.page_size - 1);
        const char* k_src = k_head + (id * p.k_stride_page + slot * p.k_stride_token) * Tr::kKvStrideBytes;
        const char* v_src = v_head + (id * p.v_stride_page + slot * p.v_stride_token) * Tr::kKvStrideBytes;
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
          cp_async_16(k_dst + dst_offset(k, c), k_src + c * Tr::kKvThreadsPerRow * 16);
          cp_async_16(v_dst + dst_offset(k, c), v_src + c * Tr::kKvThreadsPerRow * 16);
        }
      } else {
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
          st_shared_16(k_dst + dst_offset(k, c), id == kPastEnd ? zero : nan);
          st_shared_16(v_dst + dst_offset(k, c), zero);
        }
      }
    }
  }

  // Separate K / V page indices (TensorRT-LLM's [B, 2, M] table): K rows from fetch_pages' ids,
  // V rows from the V row of the table, read here. A V id outside the pool gives NaN rows, as a
  // K id does, so that a lying table shows in the output instead of passing for zeros.
  __device__ __forceinline__ void issue_separate(const Params& p, int n, uint32_t k_dst, uint32_t v_dst) const {
    const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
    const uint4 nan = make_uint4(~0u, ~0u, ~0u, ~0u);
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      const int token = n * Tr::kBlockN + row(k);
      const int column = token >> p.log2_page_size;
      const int64_t slot = token & (p.page_size - 1);
      const int32_t id = page[k];
      const int32_t vid = id == kPastEnd ? kPastEnd : column < p.max_pages_per_seq ? __ldg(v_table + column) : -1;
      if (id >= 0 && id < p.num_pages) {
        const char* k_src = k_head + (id * p.k_stride_page + slot * p.k_stride_token) * Tr::kKvStrideBytes;
#pragma unroll
        for (int c = 0; c < kCols; ++c) cp_async_16(k_dst + dst_offset(k, c), k_src + c * Tr::kKvThreadsPerRow * 16);
      } else {
#pragma unroll
        for (int c = 0; c < kCols; ++c) st_shared_16(k_dst + dst_offset(k, c), id == kPastEnd ? zero : nan);
      }
      if (vid >= 0 && vid < p.num_pages) {
        const char* v_src = v_head + (vid * p.v_stride_page + slot * p.v_stride_token) * Tr::kKvStrideBytes;
#pragma unroll
        for (int c = 0; c < kCols; ++c) cp_async_16(v_dst + dst_offset(k, c), v_src + c * Tr::kKvThreadsPerRow * 16);
      } else {
#pragma unroll
        for (int c = 0; c < kCols; ++c) st_shared_16(v_dst + dst_offset(k, c), vid == kPastEnd ? zero : nan);
      }
    }
  }

  // NVFP4: the block scales of tile n, one token row of K's (thread t < kBlockN: row t) and one
  // of V's (the next kBlockN threads) a thread, kScaleRowBytes each, from the same pages as the
  // data (V's from the V ids when they are separate). V's rows are interleaved by 4 tokens, so a
  // row of a group holds scales of all four: it is read when the group has a live token (the
  // decoder zeroes the tokens past kv_len, whatever their scales hold); a K row when its token is
  // live. A row past that gets zeros; a row whose page id lies outside the pool is never read and
  // gets NaN scales (K, and V with separate ids) or zeros (V of a shared id), as the data rows do.
  __device__ __forceinline__ void issue_scales(const Params& p, int n, uint32_t k_scales, uint32_t v_scales) const {
    constexpr int kBytes = Tr::kScaleRowBytes;
    const int tid = row0 * Tr::kKvThreadsPerRow + col0;
    if (tid >= 2 * Tr::kBlockN) return;
    const bool is_v = tid >= Tr::kBlockN;
    const int r = is_v ? tid - Tr::kBlockN : tid;
    const uint32_t dst = (is_v ? v_scales : k_scales) + r * kBytes;
    const int token = n * Tr::kBlockN + r;
    int32_t id = kPastEnd;
    if ((is_v ? token & ~3 : token) < kv_len) {
      const int column = token >> p.log2_page_size;
      id = column < p.max_pages_per_seq ? __ldg((is_v ? v_table : table) + column) : -1;
    }
    if (id >= 0 && id < p.num_pages) {
      const int64_t slot = token & (p.page_size - 1);
      const uint8_t* src = is_v ? p.v_sf + id * p.v_sf_stride_page + kv_head * p.v_sf_stride_head +
                                      slot * p.v_sf_stride_token
                                : p.k_sf + id * p.k_sf_stride_page + kv_head * p.k_sf_stride_head +
                                      slot * p.k_sf_stride_token;
      if constexpr (kBytes >= 16) {
#pragma unroll
        for (int i = 0; i < kBytes; i += 16) cp_async_16(dst + i, src + i);
      } else {
        cp_async_narrow<kBytes>(dst, src);
      }
    } else {
      const bool nan = id != kPastEnd && (!is_v || p.separate_kv_idx);
      const uint32_t fill = nan ? 0x7f7f7f7fu : 0u;  // 0x7f: e4m3's NaN
#pragma unroll
      for (int i = 0; i < kBytes; i += 4) st_shared_32(dst + i, fill);
    }
  }

  // e4m3 / NVFP4 KV: widens this thread's own chunks of the raw tiles (tile n) into the 16-bit
  // tiles. Only the thread that issued a chunk reads it, so a cp.async wait makes e4m3 safe;
  // NVFP4's block scales come from other threads, and the caller puts a barrier after the wait.
  __device__ __forceinline__ void widen(int n, uint32_t raw_k, uint32_t raw_v, uint32_t k_dst, uint32_t v_dst) const {
    if constexpr (Tr::kKvFp4) {
      constexpr int S = Tr::kScaleRowBytes;
      const uint32_t k_scales = raw_k + (Tr::kSmemScaleK - Tr::kSmemRawK);
      const uint32_t v_scales = raw_v + (Tr::kSmemScaleV - Tr::kSmemRawV);
      const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
      for (int k = 0; k < kRows; ++k) {
        const int r = row(k);
        if (n * Tr::kBlockN + r >= kv_len) {  // past kv_len: zeros, as the other caches give
#pragma unroll
          for (int c = 0; c < kCols; ++c) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              const uint32_t off = swizzled_chunk(r, 4 * col(c) + i, Tr::kRowChunks);
              st_shared_16(k_dst + off, zero);
              st_shared_16(v_dst + off, zero);
            }
          }
          continue;
        }
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
          // Chunk (r, col) holds elements [32 col, 32 col + 32): blocks 2 col and 2 col + 1, the
          // 16-bit chunks 4 col .. 4 col + 3.
          const int cc = col(c);
          const uint4 rk = ld_shared_16(raw_k + dst_offset(k, c));
          const uint4 rv = ld_shared_16(raw_v + dst_offset(k, c));
          const uint32_t ks0 = e4m3_to_half2_splat(ld_shared_8bit(k_scales + r * S + 2 * cc));
          const uint32_t ks1 = e4m3_to_half2_splat(ld_shared_8bit(k_scales + r * S + 2 * cc + 1));
          // V's scale of (r, s) sits at (r / 4) * 4S + 4s + r % 4 of the tile (SPEC 8.1).
          const uint32_t v_at = v_scales + (r / 4) * 4 * S + r % 4 + 4 * (2 * cc);
          const uint32_t vs0 = e4m3_to_half2_splat(ld_shared_8bit(v_at));
          const uint32_t vs1 = e4m3_to_half2_splat(ld_shared_8bit(v_at + 4));
          const uint32_t kw[4] = {rk.x, rk.y, rk.z, rk.w};
          const uint32_t vw[4] = {rv.x, rv.y, rv.z, rv.w};
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const uint32_t off = swizzled_chunk(r, 4 * cc + i, Tr::kRowChunks);
            st_shared_16(k_dst + off, e2m1x8_scaled_to<T>(kw[i], i < 2 ? ks0 : ks1));
            st_shared_16(v_dst + off, e2m1x8_scaled_to<T>(vw[i], i < 2 ? vs0 : vs1));
          }
        }
      }
    }
    if constexpr (Tr::kKvFp8) {
#pragma unroll
      for (int k = 0; k < kRows; ++k) {
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
          const uint32_t src = dst_offset(k, c);
          const uint32_t lo_off = swizzled_chunk(row(k), 2 * col(c), Tr::kRowChunks);
          const uint32_t hi_off = swizzled_chunk(row(k), 2 * col(c) + 1, Tr::kRowChunks);
          uint4 lo, hi;
          e4m3x16_to<T>(ld_shared_16(raw_k + src), lo, hi);
          st_shared_16(k_dst + lo_off, lo);
          st_shared_16(k_dst + hi_off, hi);
          e4m3x16_to<T>(ld_shared_16(raw_v + src), lo, hi);
          st_shared_16(v_dst + lo_off, lo);
          st_shared_16(v_dst + hi_off, hi);
        }
      }
    }
  }
};

}  // namespace sm80
}  // namespace ctxattn
