// Data movement of the Hopper kernel.
//   KvProducer  the producer warp: K and V tiles by TMA, one box per page piece and column chunk,
//               from tensor maps over the whole pool (coordinates: d, slot, KV head, page), so a
//               page of any power-of-two size >= 8 tokens is read in place. A page id outside the
//               pool is out of the tensor's bounds: TMA fills zeros and reads nothing.
//               With e4m3 KV the boxes land in a raw byte tile (one box per page piece, all D
//               bytes of a row), which KvWidener (fp8_stage.cuh) turns into the 16-bit stage;
//               with e4m3 Q/K/V the raw V tile goes to VTransposer (fp8_stage.cuh). Pages of 1,
//               2 or 4 tokens, too small for a useful box, are gathered by the same warp with
//               cp.async, 16 bytes a lane, into the layout the boxes would have made.
//   load_q      a consumer warpgroup's 64 packed rows of Q by cp.async (any G, any strides; rows
//               past the request are zero), in the swizzled K-major layout WGMMA reads; over an
//               e4m3 cache, bf16 rows are then converted to fp16 with a power of two a row.
//   issue_q_tma the same 64 rows by TMA where the call's Q map is described (16-bit Q and cache,
//               D = 128, G dividing 64): rows past the request are the next tokens' (or zeros
//               past the tensor), computed and never written out.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include <type_traits>

#include <cute/arch/copy_sm90_desc.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cutlass/arch/barrier.h>

#include "core/params.h"
#include "cuda/sm80/ptx.cuh"
#include "cuda/sm90/fp8_layout.h"
#include "cuda/sm90/fp8_stage.cuh"
#include "cuda/sm90/gather_layout.h"
#include "cuda/sm90/launch.h"
#include "cuda/sm90/pipeline.cuh"
#include "cuda/sm90/smem_layout.cuh"
#include "cuda/sm90/traits.cuh"
#include "cuda/sm90/work.cuh"

namespace ctxattn {
namespace sm90 {

__device__ __forceinline__ void cp_async_16_zfill(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}

// One arrival on `bar` once every cp.async this thread issued before has landed. The barrier's
// count includes it (.noinc): a gathered tile completes a phase of kGatherArrivals.
__device__ __forceinline__ void cp_async_arrive_noinc(uint64_t* bar) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(addr) : "memory");
}

template <class Tr>
struct KvProducer {
  // Every tile takes at most 32 boxes (kBlockN / 8 page pieces of 8+ tokens x kBoxChunks, see the
  // static_assert), so lane j issues box j of every tile: piece j / kBoxChunks, chunk j % kBoxChunks.
  // One box per page piece: 16-bit KV (all column chunks, group-major stage: traits.cuh) and e4m3
  // KV (the whole row, into the raw tile). The FP8 K tile takes one box per chunk.
  static constexpr int kBoxChunks = Tr::kKvFp8 || Tr::kKvGroupMajor ? 1 : Tr::kChunks;
  static_assert((Tr::kBlockN / 8) * kBoxChunks <= 32, "one box per lane and tile at page size 8");
  static constexpr int kElemBytes = Tr::kKvFp8 || Tr::kQkvFp8 ? 1 : 2;
  // Bytes a key row brings: its D elements, or (NVFP4) its D / 2 code bytes and D / 16 scales.
  static constexpr int kLoadRowBytes = Tr::kKvFp8 ? Tr::kRawRowBytes + Tr::kRawScaleRowBytes : Tr::kHeadDim * kElemBytes;
  // The kernel parameter (launch.h): read in place, so that its fields cost the producer, which
  // runs on few registers, none.
  const TmaMaps& maps;
  int rows_per_box;  // min(page_size, kBoxRows): kBlockN, or 64 on 192-key tiles
  int log2_rows;
  int boxes_per_tile;
  int piece;         // this lane's page piece and column chunk
  int chunk;

  __device__ KvProducer(const Params& p, const TmaMaps& maps, int lane) : maps(maps) {
    log2_rows = p.log2_page_size < Tr::kLog2BoxRows ? p.log2_page_size : Tr::kLog2BoxRows;
    rows_per_box = 1 << log2_rows;
    boxes_per_tile = Tr::kBlockN >> log2_rows;
    piece = lane / kBoxChunks;
    chunk = lane % kBoxChunks;
  }

  // Pages of fewer than 8 tokens: the tiles are gathered (gather), not loaded by TMA.
  __device__ bool gathers() const { return gathers_pages(log2_rows); }

  // Tile n of K or V (kV) into dst by cp.async, completing on bar (kGatherArrivals: one arrival
  // a lane, once its copies have landed). A lane pair copies a key row: lanes 2j and 2j + 1 take
  // rows i + 16 k (i: gather_layout.h pair_row) and in each the 16-byte units 2m + h, so that
  // every copy instruction reads whole 32-byte sectors of 16 rows and every page-id load reads
  // 16 consecutive block-table entries. As 16 is a multiple of the page size, a lane's rows share
  // their slot in the page and their place in the swizzle: the lane works out its source and
  // destination once, and a row costs its page id, one multiply and a few logic operations. The
  // units land where the TMA boxes would put them (gather_layout.h, checked on the host against
  // the boxes' layouts), each quarter warp storing to 8 bank groups in the swizzled stages. Rows
  // past kv_len, and rows whose page id lies outside the pool, are zero-filled and read nothing,
  // as TMA reads boxes past the map, so the V tile's tail needs no zeroing pass.
  template <bool kV>
  __device__ void gather(const Params& p, const Work& w, char* dst, uint64_t* bar, int n, int lane) const {
    constexpr int kRowsPerPass = gather::kRowsPerPass;
    constexpr int kPasses = Tr::kBlockN / kRowsPerPass;
    constexpr int kPairUnits = Tr::kHeadDim * kElemBytes / 32;  // a lane's 16-byte units of a row
    static_assert(Tr::kBlockN % kRowsPerPass == 0 && (1 << kLog2MinBoxRows) <= kRowsPerPass,
                  "a pass of whole rows, a multiple of every gathered page size");
    // What the gather reads of the kernel parameter and its arguments, made opaque to the
    // compilers (an empty asm) where it starts: without it, ptxas moved some of that work where
    // the consumers' registers paid for it (3 more LDL in the main loops of the split D = 64
    // kernels, whose three consumer warpgroups run on 160 registers).
    int64_t stride_page = kV ? p.v_stride_page : p.k_stride_page;
    int64_t stride_head = kV ? p.v_stride_head : p.k_stride_head;
    int64_t stride_token = kV ? p.v_stride_token : p.k_stride_token;
    int32_t page_size = p.page_size, log2_page = p.log2_page_size;
    int64_t num_pages = p.num_pages, table_stride = p.block_tables_stride;
    const int32_t* table = kV ? p.v_block_tables : p.block_tables;  // the same unless K / V ids are separate
    const void* pool = kV ? p.v : p.k;
    asm volatile(""
                 : "+l"(stride_page), "+l"(stride_head), "+l"(stride_token), "+r"(page_size), "+r"(log2_page),
                   "+l"(num_pages), "+l"(table_stride), "+l"(table), "+l"(pool), "+r"(lane), "+l"(dst), "+l"(bar),
                   "+r"(n));
    constexpr int kKind = Tr::kKvFp8 ? gather::kRaw : Tr::kRowBytes == 64 ? gather::kSwizzle64 : gather::kSwizzle128;
    constexpr gather::Shape kShape{kKind, Tr::kHeadDim * kElemBytes, Tr::kKvGroupStride, Tr::kKvChunkStride};
    const int h = lane % 2;
    const int i = gather::lane_row(kShape, lane);
    const int32_t t0 = n * Tr::kBlockN;
    // This lane's rows i + 16 k inside kv_len: k < left / 16 rounded up.
    const int left = w.kv_len - t0 - i;
    const int64_t lane_element = static_cast<int64_t>(w.kv_head) * stride_head + (i & (page_size - 1)) * stride_token;
    const char* src0 = static_cast<const char*>(pool) + h * 16 + lane_element * kElemBytes;
    // Row i + 16 k's page id: ids[k * id_step]. Page ids are int32: pool sizes past 2^31 pages
    // take no more of them.
    const int32_t* ids = table + static_cast<int64_t>(w.batch) * table_stride + ((t0 + i) >> log2_page);
    const int id_step = kRowsPerPass >> log2_page;
    const uint32_t pages = num_pages < (int64_t{1} << 31) ? static_cast<uint32_t>(num_pages) : 1u << 31;
    const int64_t page_bytes = stride_page * kElemBytes;
    const uint32_t dst0 = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
    const uint32_t row_at = dst0 + gather::lane_offset(kShape, lane);
    // The ids of the next kAhead passes are in flight while a pass copies: each one waited for
    // on its own from L2 (the L1 keeps few of the prefetched lines) held every pass back (ncu,
    // docs/perf.md, v29). Not in the kernels of three consumer warpgroups, whose loops took
    // 3-12 more LDL a tile with the producer's registers for it: one id at a time there.
    constexpr int kAhead = Tr::kThreeConsumers ? 1 : kPasses < 4 ? kPasses : 4;
    [[maybe_unused]] int32_t ahead[kAhead];
    if constexpr (kAhead > 1) {
#pragma unroll
      for (int a = 0; a < kAhead; ++a) ahead[a] = a * kRowsPerPass < left ? __ldg(ids + a * id_step) : -1;
      ids += kAhead * id_step;
    }
    // One row a step: unrolled, ptxas hoisted every page-id load and spilled the producer's
    // registers.
#pragma unroll 1
    for (int k = 0; k < kPasses; ++k, ids += id_step) {
      int32_t page;
      if constexpr (kAhead > 1) {
        page = ahead[0];
#pragma unroll
        for (int a = 0; a + 1 < kAhead; ++a) ahead[a] = ahead[a + 1];
        ahead[kAhead - 1] = k + kAhead < kPasses && (k + kAhead) * kRowsPerPass < left ? __ldg(ids) : -1;
      } else {
        page = k * kRowsPerPass < left ? __ldg(ids) : -1;
      }
      const bool ok = static_cast<uint32_t>(page) < pages;
      const char* src = src0 + static_cast<int64_t>(ok ? static_cast<uint32_t>(page) : 0u) * page_bytes;
      // Opaque to the compiler, which would otherwise hoist src0 + 32 m out of the loop, one
      // 64-bit register pair for each m, and spill them: the copies take src + 32 m as offsets.
      asm volatile("" : "+l"(src));
      const uint32_t at = row_at + k * gather::pass_step(kShape);
#pragma unroll
      for (int m = 0; m < kPairUnits; ++m) cp_async_16_zfill(gather::unit_offset(kShape, at, m), src + m * 32, ok);
    }
    cp_async_arrive_noinc(bar);
  }

  // Page pieces of tile n that hold keys below kv_len (at least one for a visited tile).
  __device__ int valid_boxes(const Work& w, int n) const {
    const int64_t left = static_cast<int64_t>(w.kv_len) - static_cast<int64_t>(n) * Tr::kBlockN;
    const int64_t boxes = (left + rows_per_box - 1) >> log2_rows;
    return boxes < boxes_per_tile ? static_cast<int>(boxes) : boxes_per_tile;
  }

  // The page id this lane's box of tile n reads (any value when the lane has no box): loaded a
  // tile ahead of its use, so the block-table read is off the producer's critical path.
  // kGather: the gather reads its rows' ids itself, one dependent load a row; here the lines of
  // the block table that hold tile n's ids are prefetched into L1 instead, so that those loads
  // hit: lane j takes the line of id 32 j of the tile (the last id for the lane past the end, so
  // that a row of the table at any alignment is covered), if that id belongs to a key below
  // kv_len, which keeps every address inside the request's row of the table.
  // `table`: the K page ids (p.block_tables) or, with separate K / V page indices, V's.
  template <bool kGather>
  __device__ int32_t page_of(const Params& p, const Work& w, int n, const int32_t* table) const {
    if constexpr (kGather) {
      constexpr int kIdsPerLine = 32;  // 128-byte lines of int32 ids
      int64_t table_stride = p.block_tables_stride;
      int log2_page = p.log2_page_size;
      asm volatile("" : "+l"(table), "+l"(table_stride), "+r"(log2_page));  // as in gather
      const int lane = piece * kBoxChunks + chunk;
      const int ids = Tr::kBlockN >> log2_page;
      const int x = lane * kIdsPerLine < ids ? lane * kIdsPerLine : ids - 1;
      const int64_t t0 = static_cast<int64_t>(n) * Tr::kBlockN;
      const bool in_keys = t0 + (static_cast<int64_t>(x) << log2_page) < w.kv_len;
      if (lane <= (ids + kIdsPerLine - 1) / kIdsPerLine && in_keys) {
        const int32_t* id = table + static_cast<int64_t>(w.batch) * table_stride + (t0 >> log2_page) + x;
        asm volatile("prefetch.global.L1 [%0];" ::"l"(id));
      }
      return 0;
    }
    if (piece >= valid_boxes(w, n)) return 0;
    const int64_t token = static_cast<int64_t>(n) * Tr::kBlockN + (piece << log2_rows);
    return table[static_cast<int64_t>(w.batch) * p.block_tables_stride + (token >> p.log2_page_size)];
  }

  __device__ uint32_t tile_bytes(int boxes) const {
    return static_cast<uint32_t>(boxes) * rows_per_box * kLoadRowBytes;
  }

  // Issues this lane's box of tile n of one tensor into dst (a K or V stage), completing on bar,
  // which lane 0 arms first with the tile's bytes. page_units: the map's, for the group-major maps.
  // NVFP4 (sf_map): the lane's piece of the block scales too, after the tile's codes.
  __device__ void issue(const Params& p, const Work& w, const CUtensorMap* map, const CUtensorMap* sf_map,
                        int32_t page_units, char* dst, uint64_t* bar, int n, int boxes, int32_t page,
                        int lane) const {
    if (lane == 0) arrive_expect_tx(bar, tile_bytes(boxes));
    __syncwarp();
    if (piece < boxes) {
      const int64_t token = static_cast<int64_t>(n) * Tr::kBlockN + (piece << log2_rows);
      const int32_t slot = static_cast<int32_t>(token & (p.page_size - 1));
      constexpr uint64_t kHint = static_cast<uint64_t>(cute::TMA::CacheHintSm90::EVICT_NORMAL);
      if constexpr (Tr::kKvGroupMajor) {
        // A page id outside the pool becomes unit -1, outside the map: TMA reads zeros (the
        // host keeps every valid unit below 2^31, hopper.cpp).
        const int32_t unit = static_cast<uint32_t>(page) < p.num_pages ? page * page_units + w.kv_head : -1;
        char* box = dst + (piece << log2_rows) / 8 * Tr::kKvGroupStride;
        cute::SM90_TMA_LOAD_5D::copy(map, bar, kHint, box, 0, 0, 0, slot / 8, unit);
      } else {
        char* box = Tr::kKvFp8 ? dst + (piece << log2_rows) * Tr::kRawRowBytes
                               : dst + chunk * Tr::kKvChunkBytes + (piece << log2_rows) * Tr::kRowBytes;
        cute::SM90_TMA_LOAD_4D::copy(map, bar, kHint, box, chunk * Tr::kChunkElems, slot, w.kv_head, page);
        if constexpr (Tr::kKvFp4) {
          // The piece's scales: bytes [slot, slot + rows) x D / 16 of the (page, head) tile, in
          // 16-byte units (hopper.cpp make_scale_map); a page outside the pool reads zeros.
          char* scales = dst + Tr::kRawScaleOffset + (piece << log2_rows) * Tr::kRawScaleRowBytes;
          cute::SM90_TMA_LOAD_4D::copy(sf_map, bar, kHint, scales, 0, slot * Tr::kRawScaleRowBytes / 16, w.kv_head,
                                       page);
        }
      }
    }
  }

  // kGather: the call's pages are gathered (gathers()); the producer runs one instance of its
  // loop for each way, so that the TMA instance compiles as if the gather did not exist.
  template <bool kGather>
  __device__ void load_k(const Params& p, const Work& w, char* dst, uint64_t* full, int n, int32_t page,
                         int lane) const {
    if constexpr (kGather) {
      gather<false>(p, w, dst, full, n, lane);
      return;
    }
    issue(p, w, &maps.k, &maps.k_sf, maps.k_page_units, dst, full, n, valid_boxes(w, n), page, lane);
  }

  // V tile n into its stage. Rows past kv_len are zeroed before the consumers see the tile: P is
  // 0 there, but 0 * NaN from an unused slot would not be. The tail tile lands on the producer's
  // own barrier first; full is then released by a plain arrival.
  template <bool kGather>
  __device__ void load_v(const Params& p, const Work& w, char* dst, uint64_t* full, uint64_t* tail, uint32_t& tail_phase,
                         int n, int32_t page, int lane) const {
    if constexpr (kGather) {  // its tail rows are zero-filled as they land
      gather<true>(p, w, dst, full, n, lane);
      return;
    }
    const int boxes = valid_boxes(w, n);
    if constexpr (Tr::kKvFp8 || Tr::kQkvFp8) {  // into the raw tile; its readers zero the tail rows
      issue(p, w, &maps.v, &maps.v_sf, maps.v_page_units, dst, full, n, boxes, page, lane);
      return;
    }
    const int64_t t0 = static_cast<int64_t>(n) * Tr::kBlockN;
    const int valid_rows = w.kv_len - t0 < Tr::kBlockN ? static_cast<int>(w.kv_len - t0) : Tr::kBlockN;
    if (valid_rows == Tr::kBlockN) {
      issue(p, w, &maps.v, &maps.v_sf, maps.v_page_units, dst, full, n, boxes, page, lane);
      return;
    }
    issue(p, w, &maps.v, &maps.v_sf, maps.v_page_units, dst, tail, n, boxes, page, lane);
    wait_barrier(tail, tail_phase);
    tail_phase ^= 1u;
    // The 16-byte units of rows valid_rows .. kBlockN - 1, every chunk (the swizzle only permutes
    // the units inside a row, so whole rows are zeroed alike in any layout).
    constexpr int kUnitsPerRow = Tr::kChunks * kSwizzleBytes / 16;
    const int units = (Tr::kBlockN - valid_rows) * kUnitsPerRow;
    for (int u = lane; u < units; u += 32) {
      const int row = valid_rows + u / kUnitsPerRow;
      const int c = (u % kUnitsPerRow) / (kSwizzleBytes / 16);
      const int unit = u % (kSwizzleBytes / 16);
      char* at = dst + (row / 8) * Tr::kKvGroupStride + c * Tr::kKvChunkStride + (row % 8) * kSwizzleBytes + unit * 16;
      *reinterpret_cast<uint4*>(at) = make_uint4(0, 0, 0, 0);
    }
    cutlass::arch::fence_view_async_shared();  // the zeros are read by WGMMA (async proxy)
    __syncwarp();
    if (lane == 0) arrive_barrier(full);
  }
};


// A consumer warpgroup's row table: for each of its 64 packed rows inside the request (row block
// `block` of the M tile: traits.cuh row_block_of), the offset of that (token, head) row in a
// tensor of the given token and head strides. Decoded once by the first 64 threads (one FastDiv
// each) so that the 16-byte copies of a row only look it up: the prologue fills it for Q, the
// epilogue refills it for the output. Returns the warpgroup's rows inside the request (the
// table's valid entries come first).
__device__ __forceinline__ int fill_row_table(const Params& p, const Work& w, int64_t* table, int64_t stride_token,
                                              int64_t stride_head, int consumer, int block, int t) {
  const int first = w.m0 + block * kRowsPerWarpgroup;
  if (t < kRowsPerWarpgroup && first + t < w.packed_rows) {
    const Work::Row r = w.row(p, first + t);
    table[t] = (w.q_start + r.query) * stride_token + static_cast<int64_t>(r.head) * stride_head;
  }
  warpgroup_sync(consumer);
  const int left = w.packed_rows - first;
  return left < kRowsPerWarpgroup ? left : kRowsPerWarpgroup;
}

// e4m3 queries (served by the fp16 kernel over an e4m3 cache): each thread loads 16 codes of a
// row, widens them exactly to fp16 and stores two swizzled 16-byte units; rows past the request
// are zeros. Negation flips the fp16 sign bits. Tr::kColSplit: the warpgroup's kOCols columns from
// first_col on.
template <class Tr>
__device__ void load_q_e4m3(const Params& p, const int64_t* rows, int valid_rows, char* q_ptr, int t, bool negate,
                            int first_col = 0) {
  constexpr int kUnitsPerRow = Tr::kOCols / 16;  // 16 codes a unit
  constexpr int kRowsPerPass = kWarpgroupThreads / kUnitsPerRow;
  const int col = (t % kUnitsPerRow) * 16;
  const uint8_t* q = static_cast<const uint8_t*>(p.q) + first_col;
  const uint32_t sign = negate ? 0x80008000u : 0u;
#pragma unroll 1
  for (int pass = 0; pass < kRowsPerWarpgroup / kRowsPerPass; ++pass) {
    const int row = t / kUnitsPerRow + pass * kRowsPerPass;
    uint4 raw = make_uint4(0, 0, 0, 0);
    if (row < valid_rows) raw = __ldg(reinterpret_cast<const uint4*>(q + rows[row] + col));
    const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
    uint32_t h[8];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      h[2 * i] = widen_e4m3x2(words[i] & 0xffffu) ^ sign;
      h[2 * i + 1] = widen_e4m3x2(words[i] >> 16) ^ sign;
    }
    *reinterpret_cast<uint4*>(q_ptr + swizzled_offset(row, col, kRowsPerWarpgroup)) = make_uint4(h[0], h[1], h[2], h[3]);
    *reinterpret_cast<uint4*>(q_ptr + swizzled_offset(row, col + 8, kRowsPerWarpgroup)) =
        make_uint4(h[4], h[5], h[6], h[7]);
  }
}

// This warpgroup's 64 packed rows of Q into q_tile (smem byte address), by cp.async, as one
// commit group that finish_q waits for; t: thread in the warpgroup; rows: its row table filled
// for Q, of which the first `valid_rows` lie inside the request (the rest are zero-filled). Q as
// stored: 16-bit, or e4m3 for the FP8 kernel (Tr::kElemBytes 1: 128-byte rows of 128 codes).
// Tr::kColSplit: the warpgroup's kOCols columns from first_col on.
template <class Tr>
__device__ __forceinline__ void issue_q(const Params& p, const int64_t* rows, int valid_rows, uint32_t q_tile, int t,
                                        int first_col = 0) {
  constexpr int kEb = Tr::kElemBytes;
  constexpr int kUnitsPerRow = Tr::kOCols * kEb / 16;  // 16-byte units
  constexpr int kRowsPerPass = kWarpgroupThreads / kUnitsPerRow;
  // A thread copies the same 16-byte column unit of every kRowsPerPass-th row.
  const int byte = (t % kUnitsPerRow) * 16;
  const char* q = static_cast<const char*>(p.q) + first_col * kEb;
  // Four passes at a time: their four row-table lookups first, then their copies, so that the
  // lookups' latencies overlap (one pass at a time, each lookup stood between two copies: the copy
  // loop held 13% of the stall samples of short_256 on the H200, where it runs under an item's last
  // P V; docs/perf.md, v9). The copies' memory clobber keeps the compiler from hoisting the
  // lookups itself; all passes at once made the split kernels' consumers spill in the main loop.
  constexpr int kPasses = kRowsPerWarpgroup / kRowsPerPass;
  constexpr int kBatch = kPasses < 4 ? kPasses : 4;
  static_assert(kPasses % kBatch == 0, "whole batches of passes");
#pragma unroll 1
  for (int first = 0; first < kPasses; first += kBatch) {
    int64_t offset[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const int row = t / kUnitsPerRow + (first + i) * kRowsPerPass;
      offset[i] = row < valid_rows ? rows[row] * kEb + byte : 0;
    }
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const int row = t / kUnitsPerRow + (first + i) * kRowsPerPass;
      cp_async_16_zfill(q_tile + swizzled_byte_offset<Tr::kRowBytes>(row, byte, kRowsPerWarpgroup), q + offset[i],
                        row < valid_rows);
    }
  }
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Flips the sign of every element of a warpgroup's Q tile, as stored (16-bit or e4m3), the
// thread's share of its 16-byte units; the tile has landed.
template <class Tr>
__device__ __forceinline__ void negate_q_tile(char* q_ptr, int t) {
  constexpr int kEb = Tr::kElemBytes;
  constexpr int kUnitsPerRow = Tr::kOCols * kEb / 16;
  constexpr uint32_t kSigns = kEb == 2 ? 0x80008000u : 0x80808080u;
  for (int idx = t; idx < kRowsPerWarpgroup * kUnitsPerRow; idx += kWarpgroupThreads) {
    uint4* unit = reinterpret_cast<uint4*>(q_ptr + idx * 16);
    uint4 x = *unit;
    x.x ^= kSigns;
    x.y ^= kSigns;
    x.z ^= kSigns;
    x.w ^= kSigns;
    *unit = x;
  }
}

// Waits for the Q copies issue_q started (this thread's only outstanding cp.async group); with
// negate flips the sign of every element (bmm1_scale < 0, see softmax); makes the tile visible to
// WGMMA.
template <class Tr>
__device__ __forceinline__ void finish_q(char* q_ptr, int consumer, int t, bool negate) {
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  if (negate) {
    warpgroup_sync(consumer);  // every thread's copies have landed
    negate_q_tile<Tr>(q_ptr, t);
  }
  cutlass::arch::fence_view_async_shared();  // Q is read by WGMMA (async proxy)
  warpgroup_sync(consumer);
}

// Q by TMA (Traits::kQByTma and maps.q_tma): one thread of the warpgroup loads its 64 packed rows
// into q_ptr, a box of 64 / G tokens x G heads a 128-byte chunk of its rows (16-bit: the box of
// the output map; e4m3: one box of 128 codes), in the Q tile's layout, completing on bar. Rows
// past the request hold the next tokens' queries, or zeros past the tensor: each row is computed
// alone and the epilogue writes only rows inside the request.
// The caller has made the region free (release_staging, and a proxy fence after the generic
// accesses of its last use).
template <class Tr>
__device__ __forceinline__ void issue_q_tma(const Params& p, const TmaMaps& maps, const Work& w, uint64_t* bar,
                                            char* q_ptr, int consumer) {
  const int first = w.m0 + consumer * kRowsPerWarpgroup;
  const int token = static_cast<int>(w.q_start) + p.group_div.div(first);
  const int head = w.kv_head * p.group_size;
  constexpr uint64_t kHint = static_cast<uint64_t>(cute::TMA::CacheHintSm90::EVICT_FIRST);
  constexpr int kRowBytes = Tr::kHeadDim * Tr::kElemBytes;  // a box a 128-byte chunk of the rows
  arrive_expect_tx(bar, kRowsPerWarpgroup * kRowBytes);
#pragma unroll
  for (int c = 0; c < kRowBytes / kSwizzleBytes; ++c) {
    cute::SM90_TMA_LOAD_3D::copy(&maps.q, bar, kHint, q_ptr + c * kRowsPerWarpgroup * kSwizzleBytes,
                                 c * Tr::kChunkElems, head, token);
  }
}

// Waits for the boxes issue_q_tma started (bar at `parity`); with negate flips the sign of every
// element, as finish_q. The closing warpgroup barrier is for ptxas: without it, the consumers'
// WGMMA descriptors and stage addresses left uniform registers (measured with Q by TMA in every
// 16-bit kernel: twice the R2UR and 20-50 LDL / STL in the main loops at D = 64 and D = 256).
template <class Tr>
__device__ __forceinline__ void finish_q_tma(uint64_t* bar, uint32_t parity, char* q_ptr, int consumer, int t,
                                             bool negate) {
  wait_barrier(bar, parity);
  if (negate) {
    negate_q_tile<Tr>(q_ptr, t);
    cutlass::arch::fence_view_async_shared();  // Q is read by WGMMA (async proxy)
  }
  warpgroup_sync(consumer);
}

// bf16 queries over an e4m3 or NVFP4 cache (whose kernels compute in fp16, traits.cuh MmaElem): after the
// copy, each row is converted to fp16 in place, multiplied by 2^shift, a power of two of its own:
// its largest finite |element| lands in [2^14, 2^15), under fp16's 65504. Every element from 2^-31
// of that largest up keeps its value exactly (bf16's 8 significant bits fit fp16's subnormals
// from 2^-17 up); smaller ones round to within 2^-39 of the largest, far under the score's fp32
// rounding. shift is clamped to [-113, 100] (bf16's largest finite value needs -113; a row whose
// largest element is under 2^-86 keeps it under 2^14). Infinities and NaNs convert as they are and
// do not set the scale. With negate the signs flip.
// Warp w converts rows 16 w .. 16 w + 15, those whose scores its threads hold (the WGMMA
// accumulator's rows): lane l half of row l % 16's units, lanes l and l ^ 16 together. Sets
// factor[i] to 2^-shift of this thread's accumulator rows lane / 4 and lane / 4 + 8: the factor the
// scores of that row must be multiplied by.
// Tr::kColSplit: the warpgroup's kOCols columns, with a factor of their own (the caller scales its
// half of S by it before the exchange).
template <class Tr>
__device__ void finish_q_bf16_as_f16(char* q_ptr, int consumer, int t, bool negate, float (&factor)[2]) {
  constexpr int kUnits = Tr::kOCols / 8 / 2;  // 16-byte units a lane: half a row
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  warpgroup_sync(consumer);  // every thread's copies have landed
  const int lane = t % 32, row = (t / 32) * 16 + lane % 16;
  auto unit = [&](int j) {  // unit j of this lane's half row; swizzled slots keep 8 lanes' rows on distinct banks
    const int u = (lane / 16) * kUnits + j;
    return reinterpret_cast<uint4*>(q_ptr + (u / 8) * (kRowsPerWarpgroup * kSwizzleBytes) + row * kSwizzleBytes +
                                    (((u % 8) ^ (row % 8)) * 16));
  };
  // Largest finite magnitude, as bf16 bits (ordered as integers); non-finite halves count as 0.
  // At D <= 128 the lane's units stay in registers for the conversion (one pass over shared
  // memory); D = 256 reads them again (see KvWidener::widen on that head dim).
  constexpr bool kHeld = kUnits <= 8;
  uint4 held[kHeld ? kUnits : 1];
  uint32_t most = 0;
#pragma unroll
  for (int j = 0; j < kUnits; ++j) {
    const uint4 x = *unit(j);
    if constexpr (kHeld) held[j] = x;
    const uint32_t words[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
    for (uint32_t w : words) {
      const uint32_t mag = w & 0x7fff7fffu;
      most = __vmaxu2(most, mag & ~__vcmpgeu2(mag, 0x7f807f80u));
    }
  }
  most = max(most & 0xffffu, most >> 16);
  most = max(most, __shfl_xor_sync(0xffffffffu, most, 16));
  const int exponent = static_cast<int>(most >> 7) > 1 ? static_cast<int>(most >> 7) - 127 : -126;
  const int shift = most == 0 ? 0 : min(max(14 - exponent, -113), 100);
  const float up = __int_as_float((127 + shift) << 23);
  const uint32_t sign = negate ? 0x80008000u : 0u;
  auto convert = [&](uint32_t w) {
    const __half2 h = __floats2half2_rn(__uint_as_float(w << 16) * up, __uint_as_float(w & 0xffff0000u) * up);
    return *reinterpret_cast<const uint32_t*>(&h) ^ sign;
  };
#pragma unroll
  for (int j = 0; j < kUnits; ++j) {
    uint4 x;
    if constexpr (kHeld) {
      x = held[j];
    } else {
      x = *unit(j);
    }
    *unit(j) = make_uint4(convert(x.x), convert(x.y), convert(x.z), convert(x.w));
  }
  const float down = __int_as_float((127 - shift) << 23);
  factor[0] = __shfl_sync(0xffffffffu, down, lane / 4);
  factor[1] = __shfl_sync(0xffffffffu, down, lane / 4 + 8);
  cutlass::arch::fence_view_async_shared();  // Q is read by WGMMA (async proxy)
  warpgroup_sync(consumer);
}

// Q of a work item, start to finish. factor: what the scores of this thread's two accumulator rows
// must be multiplied by, left as it is except for bf16 queries over an e4m3 or NVFP4 cache (above).
// The fp16 kernel over an e4m3 cache also serves e4m3 queries, widened as they are copied (synchronous
// loads).
template <typename T, class Tr>
__device__ void load_q(const Params& p, const int64_t* rows, int valid_rows, uint32_t q_tile, char* q_ptr,
                       int consumer, int t, bool negate, float (&factor)[2]) {
  if constexpr (Tr::kKvFp8 && std::is_same<T, __half>::value) {
    if (p.q_dtype == CTXATTN_DTYPE_FLOAT8_E4M3) {
      load_q_e4m3<Tr>(p, rows, valid_rows, q_ptr, t, negate, first_col_of<Tr>(consumer));
      cutlass::arch::fence_view_async_shared();  // Q is read by WGMMA (async proxy)
      warpgroup_sync(consumer);
      return;
    }
  }
  issue_q<Tr>(p, rows, valid_rows, q_tile, t, first_col_of<Tr>(consumer));
  if constexpr (Tr::kKvFp8 && !std::is_same<T, __half>::value) {
    finish_q_bf16_as_f16<Tr>(q_ptr, consumer, t, negate, factor);
  } else {
    finish_q<Tr>(q_ptr, consumer, t, negate);
  }
}

}  // namespace sm90
}  // namespace ctxattn
