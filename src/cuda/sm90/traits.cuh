// Tile shapes and the shared-memory plan of the Hopper kernel, per head dim (docs/design.md has
// the budget table). Only the element type and the head dim are template axes.
//
// Every K, V and Q tile is stored as D / 64 column chunks of [rows][64] elements, 128 bytes a
// row, with the 128-byte swizzle (16-byte unit c of row r at c ^ (r % 8)): the layout TMA writes
// with CU_TENSOR_MAP_SWIZZLE_128B and WGMMA reads through a descriptor, K-major for Q and K and
// MN-major for V. Each tile starts on 1024 bytes, the swizzle's period.
#pragma once

#include <cuda_fp16.h>
#include <stdint.h>

#include <type_traits>

#include "core/host_device.h"

namespace ctxattn {
namespace sm90 {

constexpr int kWarpgroupThreads = 128;
// Consumer warpgroups, each owning 64 rows of the M tile: two, or three (Traits::kThreeConsumers).
constexpr int kMinConsumerWarpgroups = 2;
constexpr int kMaxConsumerWarpgroups = 3;
constexpr int kProducerWarpgroups = 1;    // one warp issues TMA, the others only donate registers
constexpr int kRowsPerWarpgroup = 64;     // the M of one WGMMA
constexpr int kSwizzleBytes = 128;        // a row of one column chunk
constexpr int kChunkCols = kSwizzleBytes / 2;  // 16-bit elements per chunk row
// Pages of at least 2^kLog2MinBoxRows tokens are read by TMA, one box a page piece (the group-major
// maps address 8-row groups); smaller ones are gathered by the producer warp with cp.async
// (load.cuh KvProducer::gather).
constexpr int kLog2MinBoxRows = 3;
// Whether a call's pages (2^log2_page_size tokens) are gathered: the one rule the host (no K / V
// maps), the barrier counts and the producer share.
CTXATTN_HD constexpr bool gathers_pages(int log2_page_size) { return log2_page_size < kLog2MinBoxRows; }
// Slots of the scheduler's item ring (scheduler.cuh): the producer publishes the next item once
// the current one's loads are issued, while its readers still hold the current one.
constexpr int kSchedulerSlots = 2;

// Registers after setmaxnreg: the producer needs a handful (page-table loads, TMA coordinates),
// each consumer thread holds S (kBlockN / 2), P (kBlockN / 4) and O (D / 2) fp32/packed values.
// Two consumer warpgroups: 128 * 24 + 256 * 240 = 64512 of the 65536 registers of an SM; three
// (Traits::kThreeConsumers): 128 * 24 + 384 * 160 = 64512.
constexpr int kProducerRegisters = 24;
constexpr int kConsumerRegisters = 240;
constexpr int kConsumerRegistersOfThree = 160;
// Three consumer warpgroups beside a producer warpgroup of 40 (its warps transpose e4m3 V):
// 128 * 40 + 384 * 152 = 63488.
constexpr int kConsumerRegistersOfThreeOn40 = 152;
// What each thread holds at launch (65536 / threads, rounded down to the allocation granule of
// 8): setmaxnreg only moves registers within this allocation.
constexpr int kLaunchRegisters = 168;
constexpr int kLaunchRegistersOfThree = 128;

// kKvFp8: the KV cache holds e4m3 (under an fp16 / bf16 query). The producer loads each K / V
// tile by TMA into a raw byte tile, and the producer warpgroup's other warps widen it into the
// 16-bit stage the consumers read, so the consumers run the 16-bit kernel. K and V are widened
// to fp16 whatever the query's type (MmaElem below), since e4m3 -> fp16 is one conversion a pair
// and e4m3 -> bf16 four; bf16 queries are converted to fp16 as they are loaded (load.cuh).
// kQkvFp8: e4m3 Q, K and V on the FP8 tensor cores. Q and K are read as loaded (128-byte rows of
// 128 e4m3 values); V is loaded into a raw stage and transposed by the producer warpgroup's other
// warps into V^T (keys contiguous, the K-major B operand FP8 WGMMA needs), its keys permuted inside
// each group of 32 so that P needs no shuffle between registers (mma.cuh). Head dims 64, 128 and
// 256; at 64, Q, K and the raw V rows are 64 bytes in the 64-byte swizzle (16-byte unit c of row r
// at c ^ ((r / 2) % 4)).
// kTwoTermP_ (e4m3 Q/K/V only): P in two e4m3 terms for the P V product (mma.cuh), the kernel of
// nvfp4 output.
//
// kTake_: which requests of a call the kernel computes (the others' work items are empty,
// work.cuh). Every kernel takes all, except the one-term e4m3 Q/K/V kernel at D = 128, which runs
// as two forms, each launched over the whole call (run.cuh run_attention): kTakeShort computes the
// requests of fewer than kLongTileMinKv keys on 128-key tiles, kTakeLong the others on 192-key
// tiles. A wider tile spreads the per-tile costs (the V transpose's waits, the softmax's row
// reductions and O rescale, the pipeline hand-offs) over 1.5x the keys: fp8.long_8k 748 -> 716 us
// at page 64 and 733 -> 713 at page 16 on the H200 in ctxattn_gpu_bench, 756 -> 735 and 748 -> 735
// in the harness (docs/perf.md, v20, v21). Short
// requests lose by it (fp8.batch_1k 282 -> 295 us): their last, diagonal tile is masked and a
// 192-key tile wastes more of it, about 64 / kv_len of the request's work against the 4-5% the
// wide tile saves a key, which breaks even near 1500 keys; the 4096 threshold keeps the long form
// to requests where it wins clearly. The split code, with the split requests of 8192+ keys, goes
// to the long form alone.
enum Take { kTakeAll, kTakeShort, kTakeLong };

// The KV cache's form (Traits' second parameter): the query's 16-bit type, e4m3, or NVFP4 (SPEC
// 8.1: two e2m1 codes a byte and an e4m3 scale per 16 elements of a token). e4m3 and NVFP4 caches
// are both loaded raw and widened to fp16 by the producer warpgroup (kKvFp8 below); an NVFP4 tile
// is the codes (D / 2 bytes a row) and, after them, its block scales as the pool holds them (D / 16
// bytes a token; V's interleaved by 4 tokens), both brought by TMA.
enum KvForm { kKv16 = 0, kKvE4m3 = 1, kKvNvfp4 = 2 };
constexpr int32_t kLongTileMinKv = 4096;

template <int kHeadDim_, int kKv_ = kKv16, bool kQkvFp8_ = false, bool kTwoTermP_ = false, int kTake_ = kTakeAll>
struct Traits {
  static constexpr int kHeadDim = kHeadDim_;
  // A narrow cache widened to fp16 by the producer warpgroup (e4m3 or NVFP4; "Fp8" for the first).
  static constexpr bool kKvFp8 = kKv_ != kKv16;
  static constexpr bool kKvFp4 = kKv_ == kKvNvfp4;
  static_assert(!kKvFp4 || kHeadDim % 64 == 0, "NVFP4: whole 64-column chunks");
  static constexpr bool kQkvFp8 = kQkvFp8_;
  static constexpr bool kTwoTermP = kTwoTermP_;
  static constexpr int kTake = kTake_;
  static_assert(kQkvFp8 || !kTwoTermP, "two-term P: the FP8 P V product only");
  static_assert(kTake == kTakeAll || (kQkvFp8 && !kTwoTermP && kHeadDim == 128),
                "two forms: the one-term e4m3 Q/K/V kernel at D = 128 only");
  static_assert(!(kKvFp8 && kQkvFp8), "one e4m3 mode");
  static constexpr int kElemBytes = kQkvFp8 ? 1 : 2;      // Q, K and the stage V is read from
  static constexpr int kChunkElems = kSwizzleBytes / kElemBytes;  // elements per 128-byte chunk row
  // Bytes of one row of a Q / K chunk (and of a raw e4m3 V row on the FP8 path): 128, or 64 for
  // e4m3 Q/K/V at D = 64 (the 64-byte swizzle).
  static constexpr int kRowBytes = kHeadDim * kElemBytes < kSwizzleBytes ? kHeadDim * kElemBytes : kSwizzleBytes;
  static_assert(kRowBytes == kSwizzleBytes || kQkvFp8, "16-bit rows fill the 128-byte swizzle");
  static_assert(kHeadDim % 64 == 0 && (kHeadDim <= 256 || kHeadDim == 512),
                "head dim: whole 128-byte chunks, at most 256 (WGMMA N), or 512 split by columns");
  // Head dim 512 (16-bit): O of 64 rows x 512 would take 256 fp32 registers a thread, so the two
  // consumer warpgroups share the same 64 rows and split the columns: warpgroup c holds Q's and
  // O's columns [256 c, 256 c + 256). Each computes its half of S = Q K^T over its 256 columns of
  // Q and K; the halves are exchanged through shared memory (kSmemXchg) and added, so both hold
  // the whole S, run the same softmax on it (the same P, maxima and sums) and multiply P by their
  // own 256 columns of V. No FLOP is computed twice; the price is the exchange (a thread writes
  // and reads 16 floats a tile) and the softmax done by both warpgroups.
  // Over an e4m3 cache (kKvFp8) the same, on the widened fp16 stages. e4m3 Q/K/V (kQkvFp8) on
  // the FP8 tensor cores: each warpgroup's 256 columns of Q as e4m3 registers (mma.cuh), K as
  // loaded, V^T of 32-byte rows (the 32-byte swizzle; fp8_stage.cuh VTransposer); nvfp4 output
  // (the two-term P) stays on the widened kernel (hopper.cpp fp8_mma).
  static constexpr bool kColSplit = kHeadDim > 256;
  static_assert(!kColSplit || (kKv_ != kKvNvfp4 && !kTwoTermP_),
                "head dim 512: 16-bit Q, K and V, an e4m3 cache, or one-term e4m3 Q/K/V");
  // Columns of Q and O a consumer warpgroup holds, and its k depth of Q K^T.
  static constexpr int kOCols = kColSplit ? kHeadDim / 2 : kHeadDim;
  // Three consumer warpgroups (192-row M tiles) at D = 64 (16-bit and e4m3 Q/K/V): with two, a
  // warpgroup's softmax, slowed by the other's GEMMs beside it (docs/perf.md, v24), outlasts
  // those GEMMs (half as long as at D = 128 for the same 128-key softmax) and the tensor cores
  // idle; with three, each softmax runs under the GEMMs of two warpgroups. 160 registers a
  // consumer thread hold its S, P and O (64 + 32 + 32 values). On the H200, d64 1198 -> 1062 us
  // at page 64 and 1348 -> 1124 at page 16 (docs/perf.md, v25). At D = 128 three
  // measured slower whether P went through shared memory (S, P and O of 128 keys do not fit 160
  // registers), each warpgroup waited for every GEMM, or the tiles held 64 keys: long_8k +2.5% to
  // +8%, batch_1k +18% to +28%.
  // The one-term e4m3 Q/K/V kernel at D = 64 runs three too, at 40 / 152 registers (its FP8
  // GEMMs are shorter still): fp8.d64 1304 -> 971 us at page 64, 1294 -> 1023 at page 16. Not
  // the e4m3-KV kernels (kv8.d64 +13%: 152 registers leave their loop 10 LDL / STL a tile) nor
  // the two-term nvfp4-output one (ptxas serialises its WGMMAs at 152); nor the e4m3 Q/K/V
  // kernel at D = 128 on 64-key tiles (fp8.long_8k +8% / +13%, fp8.batch_1k +21%; docs/perf.md
  // "sm90 v26").
  static constexpr bool kThreeConsumers = !kKvFp8 && !kTwoTermP && kHeadDim == 64;
  static constexpr int kConsumerWarpgroups = kThreeConsumers ? 3 : 2;
  static_assert(kConsumerWarpgroups >= kMinConsumerWarpgroups && kConsumerWarpgroups <= kMaxConsumerWarpgroups,
                "hopper.cpp bounds rows and work items by the smallest and largest M tiles");
  static constexpr int kThreads = (kConsumerWarpgroups + kProducerWarpgroups) * kWarpgroupThreads;
  static constexpr int kLaunchRegs = kThreeConsumers ? kLaunchRegistersOfThree : kLaunchRegisters;
  // 64-row blocks of the M tile: one a consumer warpgroup, or one shared by both (kColSplit: a CTA
  // reads 1 KB of K and V a key for its 64 rows; a pair of CTAs on a 128-row item sharing each tile
  // by TMA multicast measured 17% slower on d512, its stages refilled only once both CTAs'
  // consumers had released them; docs/perf.md, v48).
  static constexpr int kRowBlocks = kColSplit ? 1 : kConsumerWarpgroups;
  static constexpr int kBlockM = kRowBlocks * kRowsPerWarpgroup;
  // Keys per tile: 128 while Q, two K and two V stages fit in 227 KB; 16-bit D = 256 halves it.
  // e4m3 Q/K/V at D = 256 keeps 128 (a 32 KB K, V^T and raw V tile, one raw stage: 224 KB): it
  // halves the per-tile costs against the FP8 GEMMs, which take half the 16-bit time (the O
  // rescale alone is D / 2 multiplies a thread a tile). fp8.d256 on the H200: 624 us at 64 keys,
  // 590 at 128 (both with the v10 V transpose; 747 before it; docs/perf.md, v10).
  // The two-term P of nvfp4 output (32 more registers) keeps 64 keys: at 128, ptxas serialises its
  // WGMMAs for want of registers.
  static constexpr bool kFp8WideTile = kQkvFp8 && kHeadDim == 256 && !kTwoTermP;
  // The long form of the e4m3 D = 128 kernel (kTake above): 192-key tiles. Shared memory: Q 32 KB
  // (one buffer: no Q ahead, below), K and V^T 2 x 24 KB each, the raw V 2 x 24 KB: 176 KB.
  static constexpr bool kFp8LongTile = kTake == kTakeLong;
  // Head dim 512: 32 keys (K and V take 1 KB of shared memory a key each; see the plan below).
  // e4m3 Q/K/V keeps 32: K, V^T and the raw V take 512 bytes a key each, two stages of each 96 KB,
  // beside 64 KB of Q / output staging and the 32 KB exchange (192 KB).
  static constexpr int kBlockN = kFp8LongTile ? 192 : kHeadDim <= 128 || kFp8WideTile ? 128 : kColSplit ? 32 : 64;
  // Rows of a TMA box at most: the largest power of two dividing kBlockN (a tile is whole boxes).
  static constexpr int kBoxRows = kBlockN & -kBlockN;
  static constexpr int kLog2BoxRows = kBoxRows == 128 ? 7 : kBoxRows == 64 ? 6 : kBoxRows == 32 ? 5 : 4;
  static_assert((1 << kLog2BoxRows) == kBoxRows, "boxes of 16, 32, 64 or 128 rows");
  // Whether the kernel compiles the split code: not the short form, whose requests never split
  // (kLongTileMinKv <= kSplitMinKeys, run.cuh).
  static constexpr bool kSplitCode = kTake != kTakeShort;
  // Two K/V stages. Three fit for D <= 128 (224 KB at D = 128) but measured slower on the H200
  // (long_8k 567 against 594 TFLOP/s, batch_1k -9%; docs/perf.md, v3). Head dim 512 over an e4m3
  // cache: one fp16 K stage and two V stages, behind one raw stage each (the plan below). The
  // consumers release V(n) at the end of tile n and need V(n + 1) right after the next Q K^T
  // issue, so a second V stage lets the wideners fill V(n + 1) under tile n; K(n) is released
  // after its Q K^T, a softmax before K(n + 1) is needed. Against one V stage behind two raw
  // stages each: kv8.d512 and fp8.d512 -3% (H100; docs/perf.md, v45).
  static constexpr bool kColSplitFp8 = kColSplit && kKvFp8;
  static constexpr int kStages = kColSplitFp8 ? 1 : 2;  // K's (and V's, but for kColSplitFp8)
  static constexpr int kVStages = 2;
  // Whether calls over keys longer than kPersistentMaxKv (scheduler.cuh) run the scheduler's walk:
  // every kernel but the one-term e4m3 Q/K/V kernel at D = 128, which measured fp8.long_8k 747 ->
  // 757 us with it on the H200 (d64 1276 -> 1203, nvfp4.long_8k 1171 -> 1114; docs/perf.md
  // "sm90 v13"). Its long form takes it again: with 192-key tiles the walk measured fp8.long_8k
  // 717 -> 681 us at page 64 (docs/perf.md, v20).
  // Not the column-split kernel at D = 512 either: it has the static walk alone (run.cuh kernel_of;
  // the scheduler's walk there is unmeasured).
  static constexpr bool kSchedulerWalk = (!(kQkvFp8 && kHeadDim == 128 && !kTwoTermP) || kFp8LongTile) && !kColSplit;
  // The D = 256 consumer schedule: lazy O rescaling (softmax.cuh) and Q K^T issued before the V
  // tile is waited for: +7% on d256 on the H200 (O is 128 registers a thread there). The same
  // schedule cost 15% at D = 64 (short GEMMs, so the softmax's extra branches show) and measured
  // even at D = 128, so those keep the plain schedule (docs/perf.md, v3).
  // Not with e4m3 P: lazy rescaling lets p reach 2^8, which the scaled e4m3 P (mma.cuh) cannot
  // hold.
  static constexpr bool kLazySchedule = kOCols == 256 && !kQkvFp8;
  // e4m3 P is quantised as 256 p (mma.cuh). Folded into the exponent (softmax.cuh: exp2 of the
  // score less the maximum plus 8), the scale costs no multiply; measured on the H200, fp8.d64 -5%,
  // nvfp4.long_8k -2%, fp8.d256 -1%, but +1.7% on the one-term D = 128 kernel's short form, whose
  // schedule came out worse, so that form keeps the multiply. The long form (192-key tiles) folds:
  // H100, fp8.long_8k and fp8out.long_8k -5% at page 64, flat at page 16 (docs/perf.md, v43).
  static constexpr bool kFoldPScale = kQkvFp8 && (kHeadDim != 128 || kTwoTermP || kFp8LongTile);
  static constexpr int kChunks = kHeadDim < kChunkElems ? 1 : kHeadDim / kChunkElems;
  // Whether the kernel (on the scheduler's walk: dynamic) broadcasts its consumer warpgroup index
  // from lane 0 (kernel.cuh), so that the compiler knows it is warp-uniform: the shared-memory
  // addresses made from it (the warpgroup's Q region) then live in uniform registers, which leaves
  // these kernels' consumer tile loops without spills. The e4m3 Q/K/V kernel at D = 256 (local
  // loads 7 -> 1 a tile): fp8.d256 595-599 -> 580-581 us at page 64, 651 -> 640 at page 16; the
  // 16-bit D = 64 kernels on the scheduler's walk (5-9 -> 0): d64 1067-1078 -> 1049-1050 us at page
  // 64, 1141-1151 -> 1123-1126 at page 16 (H100; docs/perf.md, v40, v41). Not elsewhere: the
  // 16-bit and widening kernels at D = 256 lose their spills too but measured 3-6% slower (d256
  // 731 -> 777 us, kv8.d256 1051 -> 1086), the D = 64 static split kernel spills more with it
  // (6 -> 19), and the D = 512 kernel with uniform descriptors was flat (v39).
  static constexpr bool uniform_consumer_index(bool dynamic) {
    return (kQkvFp8 && kHeadDim == 256) || (kHeadDim == 64 && dynamic && !kKvFp8 && !kQkvFp8);
  }
  // e4m3 KV: the producer warpgroup's warps 1-3 widen the raw tiles. setmaxnreg moves registers
  // inside the CTA's launch allocation (384 x 168 = 64512; 240 for the consumers would wait
  // forever): 128 * 40 + 256 * 232. At 224 the consumers' main loop spilled once the epilogue's
  // nvfp4 encoder was inlined without divisions; the wideners (fp8_stage.cuh) keep a few per-tile
  // values in local memory instead, outside their per-unit work. e4m3 Q/K/V: 40 / 232 too (the
  // transposing warps' needs).
  // e4m3 Q/K/V at D = 256 on 128-key tiles (S 64, P 16 and O 128 registers a consumer thread):
  // 24 / 240 as the 16-bit kernel; the producer warps then spill a little, outside the consumers'
  // path (232 for the consumers measured fp8.d256 640 against 590 us: spills in their main loop).
  static constexpr bool kProducerOn40 = kKvFp8 || (kQkvFp8 && !kFp8WideTile);
  static constexpr int kProducerRegs = kProducerOn40 ? 40 : kProducerRegisters;
  static constexpr int kConsumerRegs =
      kThreeConsumers ? (kProducerOn40 ? kConsumerRegistersOfThreeOn40 : kConsumerRegistersOfThree)
      : kProducerOn40 ? 232
                      : kConsumerRegisters;
  static_assert(kWarpgroupThreads * (kProducerRegs + kConsumerWarpgroups * kConsumerRegs) <= kThreads * kLaunchRegs,
                "setmaxnreg redistributes the launch allocation only");
  // A split piece's partial per consumer warpgroup (cuda/common/split.cuh): O (D / 2 fp32 a
  // thread), a maximum and a denominator for each of a thread's two rows.
  static constexpr int kSplitGroupFloats = (kOCols / 2 + 2 * 2) * kWarpgroupThreads;
  // Partials a work item stores: one a consumer warpgroup.
  static constexpr int kSplitGroups = kConsumerWarpgroups;

  // A consumer warpgroup's Q region; it also stages the 16-bit output rows, so e4m3 Q (half of
  // it) keeps the 16-bit size.
  static constexpr int kQWarpgroupBytes = kRowsPerWarpgroup * kOCols * 2;
  static constexpr int kKvTileBytes = kBlockN * kHeadDim * kElemBytes;  // kQkvFp8: V^T, D rows of kBlockN bytes
  static constexpr int kKvChunkBytes = kBlockN * kRowBytes;  // one column chunk of a K/V tile
  // Where the 8-row groups and column chunks of a K / V stage lie. 16-bit K / V from a 16-bit
  // cache at D >= 128 are group-major: the D / 64 chunks of each 8-row group side by side (group
  // g at g * kChunks * 1024, chunk c at + c * 1024), so that one TMA box brings all the chunks of
  // a page piece (load.cuh; 8 boxes a K tile at page size 16 and D = 128 instead of 16: long_8k
  // at page 16 973 -> 855 us on the H200, docs/perf.md, v9). The stages the e4m3
  // wideners and transposers write, and the FP8 K tile, stay chunk-major (chunk c at
  // c * kKvChunkBytes, group g at g * 1024); with one chunk (D = 64) the two are the same, and
  // D = 64 keeps the 4-D map of the chunk-major path.
  static constexpr bool kKvGroupMajor = !kKvFp8 && !kQkvFp8 && kChunks > 1;
  static constexpr int kKvGroupStride = kKvGroupMajor ? kChunks * 8 * kSwizzleBytes : 8 * kSwizzleBytes;
  static constexpr int kKvChunkStride = kKvGroupMajor ? 8 * kSwizzleBytes : kKvChunkBytes;

  // Q ahead: where it fits (D <= 128, but not e4m3 KV widened for 16-bit queries), each consumer warpgroup has
  // two Q regions and two row tables, used by alternate work items, so that in a grid smaller
  // than the item list it copies its next item's Q while it computes the current one.
  // Not in the long form of the e4m3 D = 128 kernel: its items are long (8192-key requests take
  // about 15 a CTA), so a Q copy is cheap beside one, while the second buffer's state left the
  // consumers' main loop with spills on 232 registers (6 LDL in each scheduler kernel's loop);
  // without it the loop has none. On the H200, fp8.long_8k 717-742 -> 700-708 us at page 16 and
  // 716-736 -> 711-715 at page 64 (docs/perf.md, v22).
  static constexpr bool kQAhead = kHeadDim <= 128 && !kKvFp8 && !kFp8LongTile;
  static constexpr int kQBuffers = kQAhead ? 2 : 1;
  // Q by TMA (16-bit Q over a 16-bit cache at D = 128, where the call's Q map is described:
  // launch.h TmaMaps; kernel.cuh says which of its kernels use it): one thread of a consumer
  // warpgroup loads its 64 packed rows as two boxes of 64 / G tokens x G heads onto an mbarrier of
  // its own (one a Q region), instead of 128 threads' row-table lookups and cp.async copies. The
  // short form of the e4m3 Q/K/V kernel at D = 128 (one 128-byte box of 128 codes a row group;
  // fp8.batch_1k -2.2-2.6%) too; the other e4m3 paths keep the copies (their Q is widened or converted, or the kernel
  // serves long requests); so do D = 64 and D = 256, where Q by TMA measured slower
  // (d64.short_256 +3%, d256 +1%).
  static constexpr bool kQByTma = kHeadDim == 128 && !kKvFp8 && (!kQkvFp8 || kTake == kTakeShort);
  static constexpr int kQBarriers = kQByTma ? kQBuffers * kConsumerWarpgroups : 0;

  // Shared-memory plan (bytes from the 1024-aligned base).
  // Consumer warpgroup w's Q (then its output staging) in buffer b at (b * 2 + w) * kQWarpgroupBytes.
  static constexpr int kSmemQ = 0;
  static constexpr int kSmemK = kSmemQ + kQBuffers * kConsumerWarpgroups * kQWarpgroupBytes;
  static constexpr int kSmemV = kSmemK + kStages * kKvTileBytes;
  // e4m3 K and V as loaded, [kBlockN][D] bytes, row-major (no swizzle): two raw stages each,
  // so the next tile's load is under way while the wideners read this one (D = 256: one, as
  // 2 x 32 KB more would not fit; D = 512: one, beside a second fp16 V stage, kVStages). e4m3
  // Q/K/V, with V alone raw: two, but one on the 128-key
  // tiles at D = 256.
  // NVFP4: the codes, kBlockN x D / 2 bytes, then the block scales, kBlockN x D / 16.
  static constexpr int kRawRowBytes = kKvFp4 ? kHeadDim / 2 : kHeadDim;
  static constexpr int kRawScaleRowBytes = kKvFp4 ? kHeadDim / 16 : 0;
  static constexpr int kRawScaleOffset = kBlockN * kRawRowBytes;
  static constexpr int kRawTileBytes = kKvFp8 || kQkvFp8 ? kBlockN * (kRawRowBytes + kRawScaleRowBytes) : 0;
  static_assert(kRawTileBytes % 128 == 0, "raw stages on 128-byte boundaries");
  static constexpr int kRawStages = kHeadDim <= 128 || (kQkvFp8 && !kFp8WideTile) ? 2 : 1;
  static constexpr int kSmemRawK = kSmemV + kVStages * kKvTileBytes;
  static constexpr int kSmemRawV = kSmemRawK + (kKvFp8 ? kRawStages * kRawTileBytes : 0);  // kQkvFp8: V only
  // kColSplit: the S halves exchanged between the two consumer warpgroups, by thread: two
  // buffers (alternate tiles) x 2 warpgroups x 128 threads x kBlockN / 2 floats (32 KB).
  static constexpr int kXchgBytes = kColSplit ? 2 * 2 * kWarpgroupThreads * (kBlockN / 2) * 4 : 0;
  static constexpr int kSmemXchg = kSmemRawV + kRawStages * kRawTileBytes;
  static constexpr int kSmemBarriers = kSmemXchg + kXchgBytes;
  // full/empty for K and V per stage, V tail, (e4m3) full/empty for the raw K and V stages, and
  // (Q by TMA) one a Q region.
  static constexpr int kNumBarriers = 2 * (kStages + kVStages) + 1 + (kKvFp8 || kQkvFp8 ? 4 * kRawStages : 0) + kQBarriers;
  // Each consumer warpgroup's row table (load.cuh fill_row_table): 64 row offsets.
  static constexpr int kSmemRows = (kSmemBarriers + kNumBarriers * 8 + 15) / 16 * 16;
  static constexpr int kRowTableBytes = kRowsPerWarpgroup * 8;
  // The scheduler's item ring (scheduler.cuh): kSchedulerSlots slots of 64 bytes, then a full and
  // an empty mbarrier a slot.
  static constexpr int kSmemItems = kSmemRows + kQBuffers * kConsumerWarpgroups * kRowTableBytes;
  static constexpr int kItemSlotBytes = 64;
  static constexpr int kSmemItemBarriers = kSmemItems + kSchedulerSlots * kItemSlotBytes;
  static constexpr int kItemBarrierBytes = 2 * kSchedulerSlots * 8;
  // +1024: the dynamic shared-memory base is only 16-byte aligned; the kernel rounds it up.
  static constexpr int kSmemBytes = kSmemItemBarriers + kItemBarrierBytes + 1024;
  static_assert(kSmemBytes <= 227 * 1024, "shared memory of one Hopper CTA");
};

// The first of the Q / O columns consumer warpgroup c holds (Traits::kColSplit: columns 256 c on;
// its rows: work.cuh row_block_of).
template <class Tr>
CTXATTN_HD constexpr int first_col_of(int c) {
  return Tr::kColSplit ? c * Tr::kOCols : 0;
}

// The element type of both GEMMs of a 16-bit kernel: the query's, except over an e4m3 cache,
// where everything is fp16: K and V widened exactly (every e4m3 value is an fp16 value), bf16 Q
// converted with a power-of-two scale per row (load.cuh: exact down to 2^-31 of the row's largest
// element), and P rounded to fp16 (p <= 2^8 with lazy rescaling, far below fp16's 65504;
// 11 significant bits against bf16's 8; p < 2^-24 of the row maximum flushes to 0, each under
// 2^-24 of the row's sum).
template <typename T, class Tr>
using MmaElem = typename std::conditional<Tr::kKvFp8, __half, T>::type;

}  // namespace sm90
}  // namespace ctxattn
