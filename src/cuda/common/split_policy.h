// Split-KV policy, shared by the host (grid and workspace sizing) and both GPU kernels (the plan
// itself). A request whose work tiles alone would leave most SMs idle -- a short chunk over a
// long cached prefix, few heads per GPU -- has each (KV head, m-block) tile cut along the KV axis
// into `splits` pieces that run on different CTAs; the last piece of a tile to finish merges the
// partial results (cuda/common/split.cuh).
//
// The split count is a function of the request's own lengths, the head counts and the device's
// SM count, nothing else: a request gives bitwise the same output alone or inside any batch, and
// the plan is made on the GPU from the device metadata (graph-safe, no host synchronisation).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/fastdiv.h"
#include "core/host_device.h"
#include "core/params.h"

namespace ctxattn {

// Requests over fewer keys are never split. A request's split partials take one workspace slot
// of kBlockM x D fp32 per work item (about 9 MB a request at D = 128 on 132 SMs), and the
// workspace must hold them for every request of a call that could split; below 8192 keys the
// gain is a few tens of microseconds, so calls whose max_kv_len is shorter (batched prefill
// without long prefixes) need no split workspace at all.
constexpr int kSplitMinKeys = 8192;
// Keys a split piece covers at least: below this the fixed cost of a piece (Q load, partial
// write, its share of the merge: about 4 us on the H200) outweighs the shorter critical path.
constexpr int kSplitMinPieceKeys = 2048;
// At most this many pieces a tile: the merge reads every piece's partial output, and 16 already
// fill 132 SMs from 8 tiles (one request, 8 KV heads, one m-block).
constexpr int kSplitMaxPieces = 16;

// Work items a request is spread up to: the device's SM count (one wave of one CTA an SM). The
// request is split only as far as it stays within one wave, so a split never adds a second,
// mostly idle wave of its own.
struct SplitShape {
  int target;        // SM count; 0 when the call cannot split (no request could be split)
  int block_m;       // packed rows a tile
  int num_kv_heads;
  int group_size;
};

// Host-made description of a call's grid and split workspace.
struct SplitPlan {
  SplitShape shape;        // shape.target == 0: no request of this call splits
  int slots;               // work items (CTAs) a request owns in the grid
  FastDiv by_slots;        // division by slots
  FastDiv by_kv_heads;     // division by num_kv_heads
  int groups;              // thread groups of a CTA that store and merge on their own
  int group_floats;        // floats of one group's partial
  unsigned int* counters;  // [batch][target][groups]: pieces of a tile finished so far
  float* partials;         // [batch][target][groups][group_floats]
};

// Pieces for a request of q_len query rows over kv_len keys. 1: not split. 32-bit arithmetic
// (the kernels' producers run on few registers): q_len * G <= T * Hq fits int32 with room for a
// block (the backends' gates), so do the tile counts.
CTXATTN_HD int split_pieces(const SplitShape& s, int q_len, int kv_len) {
  if (s.target <= 1 || q_len <= 0 || kv_len < kSplitMinKeys) return 1;
  const int m_blocks = static_cast<int>((static_cast<unsigned>(q_len * s.group_size) + s.block_m - 1) / s.block_m);
  const int tiles = m_blocks * s.num_kv_heads;
  if (2 * tiles > s.target) return 1;  // fills half a wave alone (and spares a division)
  int pieces = s.target / tiles;  // as many as keep the request within one wave
  if (pieces > kSplitMaxPieces) pieces = kSplitMaxPieces;
  const int by_keys = kv_len / kSplitMinPieceKeys;
  if (pieces > by_keys) pieces = by_keys;
  return pieces > 1 ? pieces : 1;
}

// Whether any request of a call can split, from host integers alone: a request needs
// kSplitMinKeys keys, and a request of one query row (the fewest tiles: one per KV head) must
// leave room for two pieces a tile within one wave.
inline bool split_possible(int target, int num_kv_heads, int max_kv_len) {
  return target > 1 && max_kv_len >= kSplitMinKeys && 2 * static_cast<int64_t>(num_kv_heads) <= target;
}

// Split piece `piece` of `pieces` of the key tiles n_min .. n_max: tiles lo .. hi (none when
// hi < lo). Pieces differ by at most one tile; the one holding n_max (the diagonal) is the last.
CTXATTN_HD void split_tiles(int n_min, int n_max, int piece, int pieces, int* lo, int* hi) {
  // count * pieces stays far inside int32: count <= kv_len / 64 < 2^25, pieces <= 16.
  const int count = n_max - n_min + 1;
  if (count <= 0 || pieces <= 1) {
    *lo = n_min;
    *hi = n_max;
    return;
  }
  *lo = n_min + count * piece / pieces;
  *hi = n_min + count * (piece + 1) / pieces - 1;
}

// ---- host: the grid and the workspace of a call, from host integers only ----

// Work items a request owns in the grid: its m-blocks times the KV heads at max_q_len, or one
// wave when a request of the call may split (a split request's items never exceed the wave).
inline int64_t split_slots(const Params& p, int target, int block_m) {
  const int64_t m_blocks = (static_cast<int64_t>(p.max_q_len) * p.group_size + block_m - 1) / block_m;
  const int64_t tiles = m_blocks * p.num_kv_heads;
  if (!split_possible(target, p.num_kv_heads, p.max_kv_len)) return tiles;
  return tiles > target ? tiles : target;
}

// Workspace bytes past the common header: a counter per tile and group, then a partial per work
// item and group, for every item of a wave of every request (a split request owns at most
// `target` items). Zero when no request of the call can split.
constexpr size_t kSplitAlign = 256;
inline size_t split_counter_bytes(const Params& p, int target, int groups) {
  const size_t bytes = static_cast<size_t>(p.batch_size) * target * groups * sizeof(unsigned int);
  return (bytes + kSplitAlign - 1) / kSplitAlign * kSplitAlign;
}
inline size_t split_workspace_bytes(const Params& p, int target, int groups, int group_floats) {
  if (!split_possible(target, p.num_kv_heads, p.max_kv_len)) return 0;
  return split_counter_bytes(p, target, groups) +
         static_cast<size_t>(p.batch_size) * target * groups * group_floats * sizeof(float);
}

// The plan of a call whose workspace holds split_workspace_bytes past `header` bytes.
inline SplitPlan make_split_plan(const Params& p, int target, int block_m, int groups, int group_floats,
                                 size_t header) {
  SplitPlan plan;
  const bool possible = split_possible(target, p.num_kv_heads, p.max_kv_len);
  plan.shape.target = possible ? target : 0;
  plan.shape.block_m = block_m;
  plan.shape.num_kv_heads = p.num_kv_heads;
  plan.shape.group_size = p.group_size;
  plan.slots = static_cast<int>(split_slots(p, target, block_m));
  plan.by_slots = FastDiv::make(plan.slots);
  plan.by_kv_heads = FastDiv::make(p.num_kv_heads);
  plan.groups = groups;
  plan.group_floats = group_floats;
  char* base = static_cast<char*>(p.workspace) + header;
  plan.counters = possible ? reinterpret_cast<unsigned int*>(base) : nullptr;
  plan.partials = possible ? reinterpret_cast<float*>(base + split_counter_bytes(p, target, groups)) : nullptr;
  return plan;
}

}  // namespace ctxattn
