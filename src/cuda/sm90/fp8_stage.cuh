// The e4m3 stages of the Hopper kernel's producer warpgroup, whose warps 1-3 turn each raw tile
// that TMA loaded (KvProducer, load.cuh) into what the consumers' WGMMAs read:
//   KvWidener     e4m3 KV under 16-bit queries: the raw K / V tile widened into the swizzled fp16
//                 stage (exactly: e4m3 values are fp16 values), V rows past kv_len zeroed.
//   Nvfp4Widener  NVFP4 KV: the raw tile's codes times their block scales (times 2^-14) into the
//                 same fp16 stage, exactly.
//   VTransposer   e4m3 Q/K/V: the raw V tile transposed into V^T, the K-major B operand of the
//                 FP8 P V, its keys in the order P lies in the accumulator (fp8_layout.h).
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include "cuda/sm80/ptx.cuh"
#include "cuda/sm90/fp8_layout.h"
#include "cuda/sm90/pipeline.cuh"  // kWidenerWarps
#include "cuda/sm90/smem_layout.cuh"
#include "cuda/sm90/traits.cuh"

namespace ctxattn {
namespace sm90 {

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
// other two halves of the same two rows. At D = 512 a thread takes the D = 256 mapping's unit in
// both 256-column halves of its rows (the second 4 chunks on), so the three warps step six rows,
// whole pairs, as at D = 256.
template <class Tr>
struct KvWidener {
  static constexpr int kThreadsWidening = kWidenerWarps * 32;
  static constexpr int kHalves = Tr::kHeadDim > 256 ? Tr::kHeadDim / 256 : 1;  // column halves a thread widens
  static constexpr int kUnitsPerRow = Tr::kHeadDim / kHalves / 16;  // 16 e4m3 values a unit (of one half)
  static_assert(kThreadsWidening % kUnitsPerRow == 0, "a thread keeps its column unit");
  static constexpr int kRowStep = kThreadsWidening / kUnitsPerRow;
  static constexpr int kSteps = (Tr::kBlockN + kRowStep - 1) / kRowStep;  // rows a thread visits at most
  static constexpr int kPeriod = kRowStep % 8 == 0 ? 1 : kRowStep % 4 == 0 ? 2 : kRowStep % 2 == 0 ? 4 : 8;
  static constexpr int kInFlight = 4 / kHalves;  // steps a thread loads before converting the first
  static constexpr int kStepBytes = kRowStep * Tr::kHeadDim;  // raw bytes of kRowStep rows
  static constexpr int kHalfSrcBytes = Tr::kHeadDim / kHalves;  // the second half's raw offset
  static constexpr uint32_t kHalfDstBytes = (Tr::kHeadDim / kHalves / kChunkCols) * Tr::kBlockN * kSwizzleBytes;

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
  // kv8h.long_8k 1008 -> 947; docs/perf.md, v12). D = 256 keeps the one path: the
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
    // Rows of D bytes; step s adds kRowStep rows, kStepBytes. (At D = 64 row0 * D + col is u * 16,
    // written so: the compiler does not see it.)
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
      uint4 x[kInFlight][kHalves];
#pragma unroll
      for (int i = 0; i < kInFlight; ++i) {
        const int s = base + i;
#pragma unroll
        for (int h = 0; h < kHalves; ++h) {
          x[i][h] = make_uint4(0, 0, 0, 0);
          if (s < kSteps && row0 + s * kRowStep < limit) {
            x[i][h] = sm80::ld_shared_16(src + s * kStepBytes + h * kHalfSrcBytes);
          }
        }
      }
#pragma unroll
      for (int i = 0; i < kInFlight; ++i) {
        const int s = base + i;
        if (s >= kSteps) break;
        if (row0 + s * kRowStep >= Tr::kBlockN) break;  // (only the last step can pass the tile)
        const uint32_t rows = s * kRowStep * kSwizzleBytes;
#pragma unroll
        for (int h = 0; h < kHalves; ++h) {
          // Zero bytes widen to zeros: rows past valid_rows need no separate path.
          const uint2 a = widen_e4m3x4(x[i][h].x), b = widen_e4m3x4(x[i][h].y);
          const uint2 c = widen_e4m3x4(x[i][h].z), d = widen_e4m3x4(x[i][h].w);
          sm80::st_shared_16(dst_lo[s % kPeriod] + rows + h * kHalfDstBytes, make_uint4(a.x, a.y, b.x, b.y));
          sm80::st_shared_16(dst_hi[s % kPeriod] + rows + h * kHalfDstBytes, make_uint4(c.x, c.y, d.x, d.y));
        }
      }
    }
  }
};

// Eight NVFP4 codes (one word, element 2i in the low nibble of byte i; e2m1 with bit 3 the sign)
// times a block scale (`scale`: an fp16 pair holding it twice), as four fp16 pairs times 2^-14.
// An e2m1 code's three magnitude bits placed at fp16's bits 9-11 (exponent bits 0-1 and the top
// mantissa bit), its sign at bit 15, make its value times 2^-14, the 0.5 code a subnormal: so x
// holds the fp16 high byte of element 2i in byte i (bits 1-3 and 7) and y that of element 2i + 1,
// and each pair is two bytes of them, masked to those bits, then one multiply by the scale. The product, code x scale
// x 2^-14, is an integer multiple of 2^-24 with at most 6 significant bits below 0.17: exact in
// fp16 (subnormals included). The kernel multiplies bmm1_scale and bmm2_scale by 2^14 (kernel.cuh).
__device__ __forceinline__ void e2m1x8_scaled_2m14(uint32_t w, uint32_t scale, uint32_t (&out)[4]) {
  // Bits 1-3 of byte i from the first operand, the rest from the second (one LOP3 each); only bits
  // 1-3 and 7 are kept below, the others are what the shifts brought.
  constexpr uint32_t kMagnitude = 0x0e0e0e0eu;
  const uint32_t x = ((w << 1) & kMagnitude) | ((w << 4) & ~kMagnitude);
  const uint32_t y = ((w >> 3) & kMagnitude) | (w & ~kMagnitude);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    // Bytes (x_i, x_i, y_i, y_i), each half keeping its high byte's magnitude and sign bits:
    // (x_i << 8) | (y_i << 24), nothing else.
    const uint32_t pair = __byte_perm(x, y, i * 0x1111u + 0x4400u) & 0x8e008e00u;
    const __half2 v = __hmul2(*reinterpret_cast<const __half2*>(&pair), *reinterpret_cast<const __half2*>(&scale));
    out[i] = *reinterpret_cast<const uint32_t*>(&v);
  }
}

// NVFP4 KV: the widener warps turn a raw tile (codes, then block scales: traits.cuh) into the
// fp16 stage KvWidener writes, each element times 2^-14 (e2m1x8_scaled_2m14). A unit is 16
// elements, one block scale: 8 code bytes in, 32 bytes out, so a thread takes the units and
// destinations KvWidener's thread would (first_unit, the same swizzle and bank reasoning). kV: the
// scales are V's, interleaved by 4 tokens (SPEC 8.1): block s of token t at (t / 4) * 4 S + 4 s +
// t % 4 (S = D / 16), K's at t S + s. A thread's rows step by kRowStep (8 at D = 128, 6 at
// D = 256): V's scale of step s is that of step s % kScalePeriod plus (s - s % kScalePeriod) x
// kRowStep x S, kScalePeriod steps being a whole number of 4-token groups (K's: period 1). Rows
// at and past valid_rows are written as zeros (codes and scale 0).
template <class Tr>
struct Nvfp4Widener {
  using Map = KvWidener<Tr>;
  static constexpr int kUnitsPerRow = Tr::kHeadDim / 16;
  static constexpr int kS = Tr::kRawScaleRowBytes;
  static_assert(kUnitsPerRow == Map::kUnitsPerRow && kS == kUnitsPerRow, "a unit a block scale");
  static constexpr int kScalePeriod = Map::kRowStep % 4 == 0 ? 1 : Map::kRowStep % 2 == 0 ? 2 : 4;
  static constexpr int kInFlight = 4;

  template <bool kV>
  __device__ static void widen(const char* raw, char* stage, int valid_rows, int u) {
    const int2 first = Map::first_unit(u);
    const int row0 = first.x, unit = first.y;
    const int col = unit * 16;
    const uint32_t codes = sm80::smem_addr(raw) + row0 * (Tr::kHeadDim / 2) + unit * 8;
    // The scale of the unit in row row0 + k * kRowStep, less k * kRowStep rows of scales.
    uint32_t scales[kV ? kScalePeriod : 1];
#pragma unroll
    for (int k = 0; k < (kV ? kScalePeriod : 1); ++k) {
      const int row = row0 + k * Map::kRowStep;
      const int scale_at = kV ? (row / 4) * 4 * kS + 4 * unit + row % 4 : row * kS + unit;
      scales[k] = sm80::smem_addr(raw) + Tr::kRawScaleOffset + scale_at - k * Map::kRowStep * kS;
    }
    const uint32_t dst = sm80::smem_addr(stage);
    uint32_t dst_lo[Map::kPeriod], dst_hi[Map::kPeriod];
#pragma unroll
    for (int k = 0; k < Map::kPeriod; ++k) {
      const int row = row0 + k * Map::kRowStep;
      dst_lo[k] = dst + swizzled_offset(row, col, Tr::kBlockN) - k * Map::kRowStep * kSwizzleBytes;
      dst_hi[k] = dst + swizzled_offset(row, col + 8, Tr::kBlockN) - k * Map::kRowStep * kSwizzleBytes;
    }
#pragma unroll
    for (int base = 0; base < Map::kSteps; base += kInFlight) {
      uint2 x[kInFlight];
      uint32_t sf[kInFlight];
#pragma unroll
      for (int i = 0; i < kInFlight; ++i) {
        const int s = base + i;
        x[i] = make_uint2(0, 0);
        sf[i] = 0;
        if (s < Map::kSteps && row0 + s * Map::kRowStep < valid_rows) {
          asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n"
                       : "=r"(x[i].x), "=r"(x[i].y)
                       : "r"(codes + s * Map::kRowStep * (Tr::kHeadDim / 2)));
          asm volatile("ld.shared.u8 %0, [%1];\n"
                       : "=r"(sf[i])
                       : "r"(scales[kV ? s % kScalePeriod : 0] + s * Map::kRowStep * kS));
        }
      }
#pragma unroll
      for (int i = 0; i < kInFlight; ++i) {
        const int s = base + i;
        if (s >= Map::kSteps) break;
        if (row0 + s * Map::kRowStep >= Tr::kBlockN) break;  // (only the last step can pass the tile)
        const uint32_t scale = widen_e4m3x2(sf[i] * 0x101u);
        uint32_t a[4], b[4];
        e2m1x8_scaled_2m14(x[i].x, scale, a);
        e2m1x8_scaled_2m14(x[i].y, scale, b);
        const uint32_t rows = s * Map::kRowStep * kSwizzleBytes;
        sm80::st_shared_16(dst_lo[s % Map::kPeriod] + rows, make_uint4(a[0], a[1], a[2], a[3]));
        sm80::st_shared_16(dst_hi[s % Map::kPeriod] + rows, make_uint4(b[0], b[1], b[2], b[3]));
      }
    }
  }
};

// e4m3 Q/K/V (Tr::kQkvFp8): the producer warpgroup's warps 1-3 transpose each raw V tile (kBlockN
// keys x D bytes, in the chunked 128-byte swizzle TMA wrote) into V^T, D rows of kBlockN key
// bytes, 128-byte swizzle for 128 keys, 64-byte swizzle for 64 (the nvfp4-output kernel at
// D = 256) and 32-byte swizzle for 32 (head dim 512); 192 keys (the long form at D = 128) are two
// parts, keys 0-127 in 128-byte rows and keys 128-191 in 64-byte rows after them
// (fp8::vt_offset): the K-major B operand of the FP8 P V.
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
  static_assert(Tr::kQkvFp8 && (Tr::kBlockN == 192 || Tr::kBlockN == 128 || Tr::kBlockN == 64 || Tr::kBlockN == 32),
                "V^T rows: one or two swizzle rows of keys");
  static constexpr int kGroups = Tr::kBlockN / 32;
  static constexpr int kUnits = Tr::kHeadDim / 16;
  // Groups whose reads are in flight together: all of a unit's (half of the six of a 192-key
  // tile), or two where the producer warpgroup runs on 24 registers.
  static constexpr int kBatch = Tr::kProducerRegs >= 40 ? (kGroups > 4 ? kGroups / 2 : kGroups) : 2;
  static_assert(kGroups % kBatch == 0, "whole batches of groups");
  // One group a tile (32 keys, head dim 512): units whose reads are in flight together instead
  // (a warp's 10-11 units of 32 in three batches).
  static constexpr int kUnitBatch = kGroups == 1 ? 4 : 1;

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
    if constexpr (kUnitBatch > 1) {
      constexpr int kStride = kWidenerWarps * kUnitBatch;
#pragma unroll 1
      for (int unit = u / 32; unit < kUnits; unit += kStride) {
        uint32_t r[kUnitBatch][4];
#pragma unroll
        for (int i = 0; i < kUnitBatch; ++i) {
          if (unit + i * kWidenerWarps < kUnits) ldsm_t4(unit_src(unit + i * kWidenerWarps), r[i]);
        }
#pragma unroll
        for (int i = 0; i < kUnitBatch; ++i) {
          if (unit + i * kWidenerWarps < kUnits) stsm4(unit_dst(unit + i * kWidenerWarps, 0) + group_offset[0], r[i]);
        }
      }
    } else {
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

}  // namespace sm90
}  // namespace ctxattn
