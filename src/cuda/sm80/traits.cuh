// Tile shapes and the shared-memory plan of the portable kernel, per (matrix type, KV storage,
// head dim): the only template axes. Every number is derived here, with its reason.
//
// Rows of a tile are "packed" rows: the G query heads that share one KV head are interleaved
// with the query tokens (packed row = token * G + head-in-group), so one CTA reuses each K/V tile
// for all G heads (GQA packing). Each warp owns kWarpRows consecutive packed rows.
#pragma once

#include <stdint.h>

namespace ctxattn {
namespace sm80 {

// The matrix (MMA operand) type; the C++ type lives in the instantiation (kernel.cuh).
enum class MmaType { kFloat16, kBFloat16 };

// How the cache stores K and V: in the matrix type itself, as float8_e4m3fn, or as NVFP4 (two
// e2m1 codes a byte plus one e4m3 block scale per 16 elements of a token row, SPEC 8.1).
enum class KvStore { k16, kE4m3, kNvfp4 };

template <int kHeadDim_, KvStore kStore_>
struct Traits {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr KvStore kStore = kStore_;
  static constexpr bool kKvFp8 = kStore == KvStore::kE4m3;
  static constexpr bool kKvFp4 = kStore == KvStore::kNvfp4;
  // e4m3 and NVFP4 K/V land in a raw tile and are widened into the 16-bit tile in shared memory.
  static constexpr bool kKvRaw = kStore != KvStore::k16;

  // 128 packed rows with 4 warps of 32 rows for D <= 128: each warp runs two m16 atoms off
  // every K/V fragment it loads, which halves shared-memory traffic per MMA against 16-row
  // warps. 64 keys a tile, except where that spills (O 128 + S 64 floats a thread at D = 128,
  // plus the fp8 widening): fp8 KV at D = 128 takes 32. Both stay <= 255 registers, so two CTAs
  // share an SM and their independent barriers let one CTA's softmax overlap the other's MMAs.
  // D = 256 keeps one atom (O alone is 128 floats) and a 64 x 32 tile.
  // D = 512 (Gemma-4): O of 512 columns would be 256 floats a thread, beyond the register file, so
  // kVSplit = 2 CTAs share a tile (blockIdx.y): each computes S over all 512 dimensions and O for
  // one half of V's columns (1.5x the FLOPs of one CTA, as trtllm-gen does). 64 x 16 tiles keep Q
  // (64 KB), two 16-key K and V stages (64 KB; V whole, each CTA reading its half) within the
  // 163 KB of sm80 (sm86 / sm89 allow 99 KB: cuda_portable_supports refuses D = 512 there).
  static constexpr int kVSplit = kHeadDim > 256 ? 2 : 1;
  static constexpr int kHeadDimV = kHeadDim / kVSplit;  // O columns of one CTA
  static constexpr int kMAtoms = kHeadDim <= 128 ? 2 : 1;
  static constexpr int kBlockM = kHeadDim <= 128 ? 128 : 64;
  static constexpr int kBlockN = kHeadDim > 256 ? 16 : kHeadDim <= 64 || (kHeadDim <= 128 && !kKvRaw) ? 64 : 32;
  static constexpr int kWarpRows = 16 * kMAtoms;
  static constexpr int kWarps = kBlockM / kWarpRows;
  static constexpr int kThreads = kWarps * 32;
  // Rows of the accumulators a thread holds (lane/4 and lane/4 + 8 of every atom).
  static constexpr int kThreadRows = 2 * kMAtoms;
  // Two CTAs of 4 warps a SM (registers capped at 255); shared memory allows it on sm90.
  static constexpr int kMinBlocksPerSm = kHeadDim <= 128 ? 2 : 1;
  // A split piece's partial (cuda/common/split.cuh): O (kMAtoms * D / 2 fp32 a thread), a
  // maximum and a denominator for each of a thread's rows. D = 512 never splits (run.cuh).
  static constexpr bool kSplits = kVSplit == 1;
  static constexpr int kSplitGroupFloats = (kMAtoms * kHeadDimV / 2 + 2 * 2 * kMAtoms) * kWarps * 32;

  // 16-bit tiles: rows of D elements in 16-byte chunks, XOR-swizzled by (row % 8) so that the
  // eight rows an ldmatrix phase reads fall in eight different bank groups.
  static constexpr int kRowChunks = kHeadDim * 2 / 16;
  static_assert(kRowChunks >= 8, "the swizzle needs at least 8 chunks a row");

  // KV as it sits in memory: 16-byte chunks of 8 (16-bit), 16 (fp8) or 32 (NVFP4) elements. A
  // thread loads kKvCols chunks of each of kKvRows rows: few rows, so few page ids held in
  // registers; its chunks of a row are kKvThreadsPerRow apart, so each warp-wide copy reads whole
  // sectors. kKvStrideBytes: bytes a unit of the cache's strides (NVFP4 strides count bytes).
  static constexpr int kKvStrideBytes = kStore == KvStore::k16 ? 2 : 1;
  static constexpr int kKvElemsPerChunk = kKvFp4 ? 32 : 16 / kKvStrideBytes;
  static constexpr int kKvRowChunks = kHeadDim / kKvElemsPerChunk;
  static constexpr int kKvChunksPerThread = kBlockN * kKvRowChunks / kThreads;
  static constexpr int kKvCols = kKvChunksPerThread < 4 ? kKvChunksPerThread : 4;
  static constexpr int kKvThreadsPerRow = kKvRowChunks / kKvCols;
  static constexpr int kKvRowsPerPass = kThreads / kKvThreadsPerRow;
  static constexpr int kKvRows = kBlockN / kKvRowsPerPass;
  static_assert(kKvRowChunks % kKvCols == 0 && kThreads % kKvThreadsPerRow == 0, "whole rows per pass");
  static_assert(kKvRows * kKvCols == kKvChunksPerThread, "every chunk of a tile is loaded once");

  // 16-bit KV: two stages, the next tile lands while this one is used (one barrier an iteration).
  // e4m3 / NVFP4 KV: the raw bytes are the in-flight stage, widened into a single 16-bit tile.
  static constexpr int kStages = kKvRaw ? 1 : 2;

  static constexpr int kQTileBytes = kBlockM * kHeadDim * 2;
  static constexpr int kKvTileBytes = kBlockN * kHeadDim * 2;
  static constexpr int kRawTileBytes = kKvRaw ? kBlockN * kKvRowChunks * 16 : 0;

  // NVFP4 block scales: kScaleRowBytes (D / 16) a token row, one row of each tile row copied by
  // one thread. The raw scale tile of K is [kBlockN][D / 16] as K's scales are stored (linear);
  // V's holds the same rows of its page x head tiles, so its 4-token interleave is kept (a tile
  // starts on a multiple of 4 tokens, and a group of 4 tokens never crosses a page).
  static constexpr int kScaleRowBytes = kKvFp4 ? kHeadDim / 16 : 0;
  static constexpr int kScaleTileBytes = kBlockN * kScaleRowBytes;
  static_assert(!kKvFp4 || 2 * kBlockN <= kThreads, "one thread a scale row of K and of V");

  static constexpr int kSmemQ = 0;
  static constexpr int kSmemK = kSmemQ + kQTileBytes;
  static constexpr int kSmemV = kSmemK + kStages * kKvTileBytes;
  static constexpr int kSmemRawK = kSmemV + kStages * kKvTileBytes;
  static constexpr int kSmemRawV = kSmemRawK + kRawTileBytes;
  static constexpr int kSmemScaleK = kSmemRawV + kRawTileBytes;
  static constexpr int kSmemScaleV = kSmemScaleK + kScaleTileBytes;
  static constexpr int kSmemBytes = kSmemScaleV + kScaleTileBytes;
  // 99 KB is the opt-in limit of sm86/sm89, the smallest of the architectures served; D = 512
  // needs sm80's or sm90's (163 KB and more; checked at run time).
  static_assert(kSmemBytes <= (kHeadDim > 256 ? 163 : 99) * 1024, "the plan must fit its sm80+ GPUs");

  // The output tile is staged in the Q region once the main loop is done.
  static_assert(kQTileBytes >= kBlockM * kHeadDimV * 2, "out staging needs up to 2 bytes an element");
};

}  // namespace sm80
}  // namespace ctxattn
