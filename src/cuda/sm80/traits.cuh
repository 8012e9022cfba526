// Tile shapes and the shared-memory plan of the portable kernel, per (matrix type, KV storage,
// head dim): the only template axes. Every number is derived here, with its reason.
//
// Rows of a tile are "packed" rows: the G query heads that share one KV head are interleaved
// with the query tokens (packed row = token * G + head-in-group), so one CTA reuses each K/V tile
// for all G heads (GQA packing). Each warp owns 16 packed rows.
#pragma once

#include <stdint.h>

namespace ctxattn {
namespace sm80 {

// The matrix (MMA operand) type; the C++ type lives in the instantiation (kernel.cuh).
enum class MmaType { kFloat16, kBFloat16 };

template <int kHeadDim_, bool kKvFp8_>
struct Traits {
  static constexpr int kHeadDim = kHeadDim_;
  // K/V are stored as float8_e4m3fn in the cache and widened in shared memory.
  static constexpr bool kKvFp8 = kKvFp8_;

  // 128 packed rows x 64 keys for D <= 128 (the shape of the reference FA2 kernels on sm80: 8
  // warps of 16 rows keep the accumulator at 64 floats a thread for D = 128). D = 256 halves both
  // so the accumulator (128 floats) and shared memory still fit (see kSmemBytes).
  static constexpr int kBlockM = kHeadDim <= 128 ? 128 : 64;
  static constexpr int kBlockN = kHeadDim <= 128 ? 64 : 32;
  static constexpr int kWarps = kBlockM / 16;
  static constexpr int kThreads = kWarps * 32;
  // One CTA of 4-8 warps per SM: asking for two caps registers at 128 and spills at D = 64.
  static constexpr int kMinBlocksPerSm = 1;

  // Q fragments live in registers for the whole CTA when they fit (D/16 x 4 registers); at
  // D = 256 that would be 64 registers on top of a 128-float accumulator, so Q stays in shared
  // memory and is re-read with ldmatrix for every K tile.
  static constexpr bool kQInRegs = kHeadDim <= 128;

  // 16-bit tiles: rows of D elements in 16-byte chunks, XOR-swizzled by (row % 8) so that the
  // eight rows an ldmatrix phase reads fall in eight different bank groups.
  static constexpr int kRowChunks = kHeadDim * 2 / 16;
  static_assert(kRowChunks >= 8, "the swizzle needs at least 8 chunks a row");

  // KV as it sits in memory: 16-byte chunks of 8 (16-bit) or 16 (fp8) elements.
  static constexpr int kKvBytes = kKvFp8 ? 1 : 2;
  static constexpr int kKvElemsPerChunk = 16 / kKvBytes;
  static constexpr int kKvRowChunks = kHeadDim / kKvElemsPerChunk;
  static_assert(kThreads % kKvRowChunks == 0, "a thread must load the same column in every row it loads");
  static constexpr int kKvRowsPerPass = kThreads / kKvRowChunks;
  static constexpr int kKvChunksPerThread = kBlockN / kKvRowsPerPass;
  static_assert(kBlockN % kKvRowsPerPass == 0, "every thread loads the same number of chunks");

  // 16-bit KV: two stages, the next tile lands while this one is used (one barrier an iteration).
  // fp8 KV: the raw bytes are the in-flight stage, widened into a single 16-bit tile.
  static constexpr int kStages = kKvFp8 ? 1 : 2;

  static constexpr int kQTileBytes = kBlockM * kHeadDim * 2;
  static constexpr int kKvTileBytes = kBlockN * kHeadDim * 2;
  static constexpr int kRawTileBytes = kKvFp8 ? kBlockN * kHeadDim : 0;

  static constexpr int kSmemQ = 0;
  static constexpr int kSmemK = kSmemQ + kQTileBytes;
  static constexpr int kSmemV = kSmemK + kStages * kKvTileBytes;
  static constexpr int kSmemRawK = kSmemV + kStages * kKvTileBytes;
  static constexpr int kSmemRawV = kSmemRawK + kRawTileBytes;
  static constexpr int kSmemBytes = kSmemRawV + kRawTileBytes;
  // 99 KB is the opt-in limit of sm86/sm89, the smallest of the architectures served.
  static_assert(kSmemBytes <= 99 * 1024, "the plan must fit every sm80+ GPU");

  // The output tile is staged in the Q region once the main loop is done.
  static_assert(kQTileBytes >= kBlockM * kHeadDim * 2, "out staging needs up to 2 bytes an element");
};

}  // namespace sm80
}  // namespace ctxattn
