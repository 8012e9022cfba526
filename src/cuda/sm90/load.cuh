// Data movement of the Hopper kernel.
//   KvProducer  the producer warp: K and V tiles by TMA, one box per page piece and column chunk,
//               from tensor maps over the whole pool (coordinates: d, slot, KV head, page), so a
//               page of any power-of-two size >= 8 tokens is read in place. A page id outside the
//               pool is out of the tensor's bounds: TMA fills zeros and reads nothing.
//               With e4m3 KV the boxes land in a raw byte tile (one box per page piece, all D
//               bytes of a row), which KvWidener turns into the 16-bit stage.
//   KvWidener   e4m3 KV: the producer warpgroup's other warps widen each raw tile into the
//               swizzled fp16 layout (exactly: e4m3 values are fp16 values), zeroing V rows past
//               kv_len.
//   load_q      a consumer warpgroup's 64 packed rows of Q by cp.async (any G, any strides; rows
//               past the request are zero), in the swizzled K-major layout WGMMA reads; over an
//               e4m3 cache, bf16 rows are then converted to fp16 with a power of two a row.
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
#include "cuda/sm90/launch.h"
#include "cuda/sm90/pipeline.cuh"
#include "cuda/sm90/traits.cuh"
#include "cuda/sm90/work.cuh"

namespace ctxattn {
namespace sm90 {

// Byte offset of element (row, col) in a swizzled tile of `rows` rows of 16-bit elements
// (traits.cuh).
__device__ __forceinline__ uint32_t swizzled_offset(int row, int col, int rows) {
  return (col / kChunkCols) * rows * kSwizzleBytes + row * kSwizzleBytes +
         ((((col % kChunkCols) / 8) ^ (row % 8)) * 16) + (col % 8) * 2;
}
// The same for byte `byte` of row `row` (any element size): chunks of 128-byte rows, or with
// kRowBytes 64 one chunk of 64-byte rows in the 64-byte swizzle.
template <int kRowBytes = kSwizzleBytes>
__device__ __forceinline__ uint32_t swizzled_byte_offset(int row, int byte, int rows) {
  static_assert(kRowBytes == 128 || kRowBytes == 64, "the 128- and 64-byte swizzles");
  if constexpr (kRowBytes == 64) return row * 64 + (((byte / 16) ^ ((row / 2) % 4)) * 16) + (byte % 16);
  return (byte / kSwizzleBytes) * rows * kSwizzleBytes + row * kSwizzleBytes +
         ((((byte % kSwizzleBytes) / 16) ^ (row % 8)) * 16) + (byte % 16);
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

  // Page pieces of tile n that hold keys below kv_len (at least one for a visited tile).
  __device__ int valid_boxes(const Work& w, int n) const {
    const int64_t left = static_cast<int64_t>(w.kv_len) - static_cast<int64_t>(n) * Tr::kBlockN;
    const int64_t boxes = (left + rows_per_box - 1) >> log2_rows;
    return boxes < boxes_per_tile ? static_cast<int>(boxes) : boxes_per_tile;
  }

  // The page id this lane's box of tile n reads (any value when the lane has no box): loaded a
  // tile ahead of its use, so the block-table read is off the producer's critical path.
  __device__ int32_t page_of(const Params& p, const Work& w, int n) const {
    if (piece >= valid_boxes(w, n)) return 0;
    const int64_t token = static_cast<int64_t>(n) * Tr::kBlockN + (piece << log2_rows);
    return p.block_tables[static_cast<int64_t>(w.batch) * p.block_tables_stride + (token >> p.log2_page_size)];
  }

  __device__ uint32_t tile_bytes(int boxes) const {
    return static_cast<uint32_t>(boxes) * rows_per_box * Tr::kHeadDim * kElemBytes;
  }

  // Issues this lane's box of tile n of one tensor into dst (a K or V stage), completing on bar,
  // which lane 0 arms first with the tile's bytes. page_units: the map's, for the group-major maps.
  __device__ void issue(const Params& p, const Work& w, const CUtensorMap* map, int32_t page_units, char* dst,
                        uint64_t* bar, int n, int boxes, int32_t page, int lane) const {
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
        char* box = Tr::kKvFp8 ? dst + (piece << log2_rows) * Tr::kHeadDim
                               : dst + chunk * Tr::kKvChunkBytes + (piece << log2_rows) * Tr::kRowBytes;
        cute::SM90_TMA_LOAD_4D::copy(map, bar, kHint, box, chunk * Tr::kChunkElems, slot, w.kv_head, page);
      }
    }
  }

  __device__ void load_k(const Params& p, const Work& w, char* dst, uint64_t* full, int n, int32_t page,
                         int lane) const {
    issue(p, w, &maps.k, maps.k_page_units, dst, full, n, valid_boxes(w, n), page, lane);
  }

  // V tile n into its stage. Rows past kv_len are zeroed before the consumers see the tile: P is
  // 0 there, but 0 * NaN from an unused slot would not be. The tail tile lands on the producer's
  // own barrier first; full is then released by a plain arrival.
  __device__ void load_v(const Params& p, const Work& w, char* dst, uint64_t* full, uint64_t* tail, uint32_t& tail_phase,
                         int n, int32_t page, int lane) const {
    const int boxes = valid_boxes(w, n);
    if constexpr (Tr::kKvFp8 || Tr::kQkvFp8) {  // into the raw tile; its readers zero the tail rows
      issue(p, w, &maps.v, maps.v_page_units, dst, full, n, boxes, page, lane);
      return;
    }
    const int64_t t0 = static_cast<int64_t>(n) * Tr::kBlockN;
    const int valid_rows = w.kv_len - t0 < Tr::kBlockN ? static_cast<int>(w.kv_len - t0) : Tr::kBlockN;
    if (valid_rows == Tr::kBlockN) {
      issue(p, w, &maps.v, maps.v_page_units, dst, full, n, boxes, page, lane);
      return;
    }
    issue(p, w, &maps.v, maps.v_page_units, dst, tail, n, boxes, page, lane);
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

// Two e4m3 values (low byte first) as two fp16 values, packed: exact (every e4m3 value is one).
__device__ __forceinline__ uint32_t widen_e4m3x2(uint32_t two) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two), __NV_E4M3);
  return static_cast<uint32_t>(h.x) | (static_cast<uint32_t>(h.y) << 16);
}

// Four e4m3 values (one 32-bit word, low byte first) as four fp16 values. The word's halves go to
// the conversions as 16-bit registers (no shifts or masks to extract them).
__device__ __forceinline__ uint2 widen_e4m3x4(uint32_t four) {
  uint32_t lo, hi;
  asm("{\n\t.reg .b16 a, b;\n\tmov.b32 {a, b}, %2;\n\t"
      "cvt.rn.f16x2.e4m3x2 %0, a;\n\tcvt.rn.f16x2.e4m3x2 %1, b;\n\t}"
      : "=r"(lo), "=r"(hi)
      : "r"(four));
  return make_uint2(lo, hi);
}

// The widener warps (1 .. kWidenerWarps of the producer warpgroup): raw e4m3 tile -> fp16
// swizzled stage (the e4m3-KV kernels compute in fp16 whatever the query's type, traits.cuh
// MmaElem). u: this thread's index among the wideners.
//
// Thread u always widens the same 16-byte column unit (the thread count is a multiple of a
// row's units) of rows row0(u) + s * kRowStep, s = 0, 1, ...: its source addresses are one
// register plus constants, and the destination's swizzle term, a function of row % 8, takes
// kPeriod values, computed once a tile. A unit is then a load, 16 conversions and two stores.
//
// Which unit of which row a thread takes keeps the shared-memory accesses free of bank conflicts.
// A 16-byte access is served 8 threads at a time, which must cover the 32 banks. At D = 64 eight
// consecutive units are two rows' four: loads of 128 contiguous bytes, and stores of the halves at
// 16-byte slots {0, 2, 4, 6} and {1, 3, 5, 7} of a 128-byte row (the swizzle's row % 8 differs in
// its low bit). From D = 128 on a row has 8 or 16 units and its 16-bit image two or four 64-column
// chunks; 8 units of one row would store their halves to slots {0, 2, 4, 6} of two chunks (a
// 2-way conflict). So a group of 8 threads takes units 0-3 of one row and units 4-7 of the next
// (loads: bytes 0-63 and 64-127 of two rows; stores: both slot sets), and the next group the
// other two halves of the same two rows.
template <class Tr>
struct KvWidener {
  static constexpr int kThreadsWidening = kWidenerWarps * 32;
  static constexpr int kUnitsPerRow = Tr::kHeadDim / 16;  // 16 e4m3 values a unit
  static_assert(kThreadsWidening % kUnitsPerRow == 0, "a thread keeps its column unit");
  static constexpr int kRowStep = kThreadsWidening / kUnitsPerRow;
  static constexpr int kSteps = (Tr::kBlockN + kRowStep - 1) / kRowStep;  // rows a thread visits at most
  static constexpr int kPeriod = kRowStep % 8 == 0 ? 1 : kRowStep % 4 == 0 ? 2 : kRowStep % 2 == 0 ? 4 : 8;
  static constexpr int kInFlight = 4;  // units a thread loads before converting the first

  // Rows at and past valid_rows are written as zeros (V past kv_len: 0 * NaN would survive P = 0).
  // Loads run kInFlight units ahead of their conversion: three warps alone cannot hide the
  // shared-memory latency of one unit at a time.
  static_assert(kUnitsPerRow == 4 || kUnitsPerRow % 8 == 0, "units of a row: 4, or groups of 8");
  static_assert(kRowStep % 2 == 0, "rows a step: whole pairs (the row parity of a thread stays)");

  // The row (of the first step) and the column unit of thread u (above).
  __device__ static int2 first_unit(int u) {
    if constexpr (kUnitsPerRow == 4) {
      return make_int2(u / 4, u % 4);
    } else {
      const int t = u % (2 * kUnitsPerRow), group = t / 8, i = t % 8;
      return make_int2(2 * (u / (2 * kUnitsPerRow)) + ((i / 4) ^ (group % 2)), 8 * (group / 2) + i);
    }
  }

  // At D <= 128 every tile but the one that crosses kv_len takes the whole-tile path, where no
  // row before the last step can pass the tile: it loads with no test and no zeroing (236 -> 175
  // instructions a K tile a thread at D = 128; on the H200 kv8.long_8k 1034 -> 974 us,
  // kv8h.long_8k 1008 -> 947; docs/perf-notes.md, sm90 v12). D = 256 keeps the one path: the
  // build with the whole-tile path there (and the one-pass Q conversion, finish_q_bf16_as_f16)
  // measured kv8.d256 1026 -> 1054 us.
  __device__ static void widen(const char* raw, char* stage, int valid_rows, int u) {
    if (Tr::kHeadDim <= 128 && valid_rows >= Tr::kBlockN) {
      widen_rows<true>(raw, stage, Tr::kBlockN, u);
    } else {
      widen_rows<false>(raw, stage, valid_rows, u);
    }
  }

 private:
  template <bool kWhole>
  __device__ static void widen_rows(const char* raw, char* stage, int valid_rows, int u) {
    const int2 first = first_unit(u);
    const int row0 = first.x;
    // first_unit puts u < kThreadsWidening in the first kRowStep rows: so the compiler knows that
    // only the last step can pass the tile.
    if constexpr (kWhole) __builtin_assume(row0 >= 0 && row0 < kRowStep);
    const int limit = kWhole ? Tr::kBlockN : valid_rows;
    const int col = first.y * 16;  // first of the unit's 16 elements
    // Rows of D bytes; step s adds kRowStep rows, i.e. s * 16 * threads bytes. (At D = 64 row0 * D +
    // col is u * 16, written so: the compiler does not see it.)
    const uint32_t src = sm80::smem_addr(raw) + (kUnitsPerRow == 4 ? u * 16 : row0 * Tr::kHeadDim + col);
    // Shared addresses of the unit's two 8-element halves in row row0 + k * kRowStep, less
    // k * kRowStep rows, for k < kPeriod: step s adds s * kRowStep rows to those of k = s % kPeriod.
    const uint32_t dst = sm80::smem_addr(stage);
    uint32_t dst_lo[kPeriod], dst_hi[kPeriod];
#pragma unroll
    for (int k = 0; k < kPeriod; ++k) {
      const int row = row0 + k * kRowStep;
      dst_lo[k] = dst + swizzled_offset(row, col, Tr::kBlockN) - k * kRowStep * kSwizzleBytes;
      dst_hi[k] = dst + swizzled_offset(row, col + 8, Tr::kBlockN) - k * kRowStep * kSwizzleBytes;
    }
#pragma unroll
    for (int base = 0; base < kSteps; base += kInFlight) {
      uint4 x[kInFlight];
#pragma unroll
      for (int i = 0; i < kInFlight; ++i) {
        const int s = base + i;
        x[i] = make_uint4(0, 0, 0, 0);
        if (s < kSteps && row0 + s * kRowStep < limit) x[i] = sm80::ld_shared_16(src + s * kThreadsWidening * 16);
      }
#pragma unroll
      for (int i = 0; i < kInFlight; ++i) {
        const int s = base + i;
        if (s >= kSteps) break;
        if (row0 + s * kRowStep >= Tr::kBlockN) break;  // (only the last step can pass the tile)
        // Zero bytes widen to zeros: rows past valid_rows need no separate path.
        const uint2 a = widen_e4m3x4(x[i].x), b = widen_e4m3x4(x[i].y);
        const uint2 c = widen_e4m3x4(x[i].z), d = widen_e4m3x4(x[i].w);
        const uint32_t rows = s * kRowStep * kSwizzleBytes;
        sm80::st_shared_16(dst_lo[s % kPeriod] + rows, make_uint4(a.x, a.y, b.x, b.y));
        sm80::st_shared_16(dst_hi[s % kPeriod] + rows, make_uint4(c.x, c.y, d.x, d.y));
      }
    }
  }
};

// e4m3 Q/K/V (Tr::kQkvFp8): the producer warpgroup's warps 1-3 transpose each raw V tile (kBlockN
// keys x D bytes, in the chunked 128-byte swizzle TMA wrote) into V^T, D rows of kBlockN key
// bytes, 128-byte swizzle for 128 keys and 64-byte swizzle for 64 (the nvfp4-output kernel at
// D = 256); 192 keys (the long form at D = 128) are two parts, keys 0-127 in 128-byte rows and
// keys 128-191 in 64-byte rows after them (fp8::vt_offset): the K-major B operand of the FP8 P V.
//
// The keys of each group of 32 are stored in fp8::key_at's order, the order in which a thread
// holds P in its S accumulator, so the FP8 A operand of P V is the accumulator converted in place
// (fp8_layout.h, mma.cuh).
//
// A step (one warp): the 32 keys of a group x 16 bytes of D, by ldmatrix.x4.trans from the raw
// tile, two byte_perm per register pair and stmatrix.x4 into V^T (fp8_layout.h gives the
// fragments; tests/cpp/test_sm90_fp8_layout.cpp simulates them): 512 bytes for about ten
// instructions a thread. Keys at and past valid_rows are written as zeros (0 * NaN would survive
// P = 0); that tile takes the slower path of a step at a time with the masks.
template <class Tr>
struct VTransposer {
  static_assert(Tr::kQkvFp8 && (Tr::kBlockN == 192 || Tr::kBlockN == 128 || Tr::kBlockN == 64),
                "V^T rows: one or two swizzle rows of keys");
  static constexpr int kGroups = Tr::kBlockN / 32;
  static constexpr int kUnits = Tr::kHeadDim / 16;
  // Groups whose reads are in flight together: all of a unit's (half of the six of a 192-key
  // tile), or two where the producer warpgroup runs on 24 registers.
  static constexpr int kBatch = Tr::kProducerRegs >= 40 ? (kGroups > 4 ? kGroups / 2 : kGroups) : 2;
  static_assert(kGroups % kBatch == 0, "whole batches of groups");

  // Warp w of the kWidenerWarps moves column units w, w + kWidenerWarps, ...: per unit, the
  // kGroups steps' ldmatrix reads are issued in batches (their addresses differ by constants),
  // then their stmatrix writes. What depends on the lane (row addresses, swizzles) is computed
  // once a tile, what depends on the unit once a unit.
  __device__ static void transpose(const char* raw, char* vt, int valid_rows, int u) {
    const int lane = u % 32;
    const int q = lane % 4;
    // The lane's row addresses. Raw: key 32 g + lane of the 128-byte swizzled chunk unit / 8,
    // unit unit % 8 (swizzled by key % 8 = lane % 8); at D = 64 of the one chunk of 64-byte rows,
    // unit `unit` (swizzled by (key / 2) % 4 = (lane / 2) % 4). V^T: row 16 unit + stsm_d(lane) of
    // group g's part, position unit 2 group_in_part(g) + lane / 16 (swizzled by the row: 128-byte
    // rows by d % 8, 64-byte rows by (d / 2) % 4, both fixed by the lane as 16 unit leaves them).
    constexpr int kRaw = Tr::kRowBytes;
    const uint32_t raw_lane = static_cast<uint32_t>(__cvta_generic_to_shared(raw)) + lane * kRaw;
    const int raw_swizzle = kRaw == 128 ? lane % 8 : (lane / 2) % 4;
    const int sd = fp8::stsm_d(lane);
    const uint32_t vt_base = static_cast<uint32_t>(__cvta_generic_to_shared(vt));
    const int pos_unit = fp8::stsm_pos(lane) / 16;
    // The lane's raw row at column unit `unit`, its V^T row of that unit in group g's part, and
    // group g's position unit in that row: together fp8::vt_store_offset, split so that the
    // lane's terms are computed once a tile and the unit's once a unit.
    auto unit_src = [&](int unit) {
      return raw_lane + (unit / 8) * (Tr::kBlockN * kRaw) + (((unit % 8) ^ raw_swizzle) << 4);
    };
    auto unit_dst = [&](int unit, int g) {
      const int row_bytes = fp8::vt_group_row_bytes(g, Tr::kBlockN);
      return vt_base + fp8::vt_group_part(g, Tr::kHeadDim) + sd * row_bytes + 16 * unit * row_bytes;
    };
    auto group_at = [&](int g) {
      // (16 unit + sd leaves the swizzle to sd)
      const int swizzle = fp8::vt_swizzle(sd, fp8::vt_group_row_bytes(g, Tr::kBlockN));
      return static_cast<uint32_t>(((2 * fp8::vt_group_rank(g) + pos_unit) ^ swizzle) << 4);
    };
    if (valid_rows < Tr::kBlockN) {
      // The tile that crosses kv_len (one a work item): step by step, zeroing the keys past it.
#pragma unroll 1
      for (int step = u / 32; step < kGroups * kUnits; step += kWidenerWarps) {
        const int g = step / kUnits, unit = step % kUnits;
        uint32_t r[4];
        ldsm_t4(unit_src(unit) + g * (32 * kRaw), r);
#pragma unroll
        for (int m = 0; m < 4; ++m) {
          const int k0 = 32 * g + 8 * m + 2 * q;  // register m: keys k0 (bytes 0, 1) and k0 + 1
          const uint32_t keep = (k0 < valid_rows ? 0x0000ffffu : 0u) | (k0 + 1 < valid_rows ? 0xffff0000u : 0u);
          r[m] &= keep;
        }
        stsm4(unit_dst(unit, g) + group_at(g), r);
      }
      return;
    }
    uint32_t group_offset[kGroups];
#pragma unroll
    for (int g = 0; g < kGroups; ++g) group_offset[g] = group_at(g);
#pragma unroll 1
    for (int unit = u / 32; unit < kUnits; unit += kWidenerWarps) {
      const uint32_t src = unit_src(unit);
#pragma unroll
      for (int g0 = 0; g0 < kGroups; g0 += kBatch) {
        uint32_t r[kBatch][4];
#pragma unroll
        for (int g = 0; g < kBatch; ++g) ldsm_t4(src + (g0 + g) * 32 * kRaw, r[g]);
#pragma unroll
        for (int g = 0; g < kBatch; ++g) stsm4(unit_dst(unit, g0 + g) + group_offset[g0 + g], r[g]);
      }
    }
  }

 private:
  __device__ static void ldsm_t4(uint32_t src, uint32_t (&r)[4]) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(src));
  }
  // The V^T words of ldmatrix registers r (fp8::stored_words), written by stmatrix.x4 at dst.
  __device__ static void stsm4(uint32_t dst, const uint32_t (&r)[4]) {
    uint32_t w[4];
    fp8::stored_words(r, w);
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(w[0]), "r"(w[1]),
                 "r"(w[2]), "r"(w[3])
                 : "memory");
  }
};

__device__ __forceinline__ void cp_async_16_zfill(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}

// A consumer warpgroup's row table: for each of its 64 packed rows inside the request, the
// offset of that (token, head) row in a tensor of the given token and head strides. Decoded once
// by the first 64 threads (one FastDiv each) so that the 16-byte copies of a row only look it up:
// the prologue fills it for Q, the epilogue refills it for the output. Returns the warpgroup's
// rows inside the request (the table's valid entries come first).
__device__ __forceinline__ int fill_row_table(const Params& p, const Work& w, int64_t* table, int64_t stride_token,
                                              int64_t stride_head, int consumer, int t) {
  const int first = w.m0 + consumer * kRowsPerWarpgroup;
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
// are zeros. Negation flips the fp16 sign bits.
template <class Tr>
__device__ void load_q_e4m3(const Params& p, const int64_t* rows, int valid_rows, char* q_ptr, int t, bool negate) {
  constexpr int kUnitsPerRow = Tr::kHeadDim / 16;  // 16 codes a unit
  constexpr int kRowsPerPass = kWarpgroupThreads / kUnitsPerRow;
  const int col = (t % kUnitsPerRow) * 16;
  const uint8_t* q = static_cast<const uint8_t*>(p.q);
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
template <class Tr>
__device__ __forceinline__ void issue_q(const Params& p, const int64_t* rows, int valid_rows, uint32_t q_tile, int t) {
  constexpr int kEb = Tr::kElemBytes;
  constexpr int kUnitsPerRow = Tr::kHeadDim * kEb / 16;  // 16-byte units
  constexpr int kRowsPerPass = kWarpgroupThreads / kUnitsPerRow;
  // A thread copies the same 16-byte column unit of every kRowsPerPass-th row.
  const int byte = (t % kUnitsPerRow) * 16;
  const char* q = static_cast<const char*>(p.q);
  // Four passes at a time: their four row-table lookups first, then their copies, so that the
  // lookups' latencies overlap (one pass at a time, each lookup stood between two copies: the copy
  // loop held 13% of the stall samples of short_256 on the H200, where it runs under an item's last
  // P V; docs/perf-notes.md, v9). The copies' memory clobber keeps the compiler from hoisting the
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

// Waits for the Q copies issue_q started (this thread's only outstanding cp.async group); with
// negate flips the sign of every element (bmm1_scale < 0, see softmax); makes the tile visible to
// WGMMA.
template <class Tr>
__device__ __forceinline__ void finish_q(char* q_ptr, int consumer, int t, bool negate) {
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  if (negate) {
    constexpr int kEb = Tr::kElemBytes;
    constexpr int kUnitsPerRow = Tr::kHeadDim * kEb / 16;
    constexpr uint32_t kSigns = kEb == 2 ? 0x80008000u : 0x80808080u;
    warpgroup_sync(consumer);  // every thread's copies have landed
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
  cutlass::arch::fence_view_async_shared();  // Q is read by WGMMA (async proxy)
  warpgroup_sync(consumer);
}

// bf16 queries over an e4m3 cache (whose kernel computes in fp16, traits.cuh MmaElem): after the
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
template <class Tr>
__device__ void finish_q_bf16_as_f16(char* q_ptr, int consumer, int t, bool negate, float (&factor)[2]) {
  constexpr int kUnits = Tr::kHeadDim / 8 / 2;  // 16-byte units a lane: half a row
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
// must be multiplied by, left as it is except for bf16 queries over an e4m3 cache (above). The fp16
// kernel over an e4m3 cache also serves e4m3 queries, widened as they are copied (synchronous
// loads).
template <typename T, class Tr>
__device__ void load_q(const Params& p, const int64_t* rows, int valid_rows, uint32_t q_tile, char* q_ptr,
                       int consumer, int t, bool negate, float (&factor)[2]) {
  if constexpr (Tr::kKvFp8 && std::is_same<T, __half>::value) {
    if (p.q_dtype == CTXATTN_DTYPE_FLOAT8_E4M3) {
      load_q_e4m3<Tr>(p, rows, valid_rows, q_ptr, t, negate);
      cutlass::arch::fence_view_async_shared();  // Q is read by WGMMA (async proxy)
      warpgroup_sync(consumer);
      return;
    }
  }
  issue_q<Tr>(p, rows, valid_rows, q_tile, t);
  if constexpr (Tr::kKvFp8 && !std::is_same<T, __half>::value) {
    finish_q_bf16_as_f16<Tr>(q_ptr, consumer, t, negate, factor);
  } else {
    finish_q<Tr>(q_ptr, consumer, t, negate);
  }
}

}  // namespace sm90
}  // namespace ctxattn
