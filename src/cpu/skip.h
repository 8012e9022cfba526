// Skip-softmax (SPEC 8.2) on the CPU backends: the vote geometry of a call, the tiles a vote
// group visits in order, and the statistics written into the workspace header. The reference
// loops and the tiled path share these, so both vote on the same (group, tile) pairs.
#pragma once

#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/backends.h"
#include "core/params.h"
#include "cpu/access.h"

namespace ctxattn {
namespace cpu {

static_assert(CTXATTN_WORKSPACE_SKIP_STATS_OFFSET + 2 * sizeof(uint64_t) <= kWorkspaceHeaderBytes,
              "the skip statistics live in the workspace header");

inline bool skips_softmax(const Params& p) { return p.skip_softmax_factor != 0.0f; }

// The threshold of request b: lambda = f / seq_lens[b]. A tile is skipped for a group when
// exp(tile_max - running_max) < lambda for every row (NaN or negative f: never).
inline double skip_threshold(const Params& p, const Request& r) {
  return static_cast<double>(p.skip_softmax_factor) / static_cast<double>(r.kv_len);
}

// The key tiles of width p.skip_keys (aligned at key 0) that a group of rows whose allowed keys
// lie in [lo, hi] visits, in the call's order: tile(k) for k in [0, count).
struct TileWalk {
  int64_t first, last;  // tile indices, first <= last unless empty
  bool descending;
  int64_t width;
  int64_t count() const { return last < first ? 0 : last - first + 1; }
  int64_t tile(int64_t k) const { return descending ? last - k : first + k; }
  int64_t begin_key(int64_t k) const { return tile(k) * width; }
};

inline TileWalk tile_walk(const Params& p, int64_t lo, int64_t hi) {
  if (hi < lo) return {0, -1, p.skip_descending, p.skip_keys};
  return {lo / p.skip_keys, hi / p.skip_keys, p.skip_descending, p.skip_keys};
}

// (group, tile) pairs with an allowed key, and how many were skipped, summed over a call's
// threads, then stored at CTXATTN_WORKSPACE_SKIP_STATS_OFFSET (the header every call has).
struct SkipStats {
  std::atomic<uint64_t> counted{0};
  std::atomic<uint64_t> skipped{0};

  void add(uint64_t c, uint64_t s) {
    counted.fetch_add(c, std::memory_order_relaxed);
    skipped.fetch_add(s, std::memory_order_relaxed);
  }
  void store(const Params& p) const {
    const uint64_t v[2] = {counted.load(), skipped.load()};
    memcpy(static_cast<uint8_t*>(p.workspace) + CTXATTN_WORKSPACE_SKIP_STATS_OFFSET, v, sizeof(v));
  }
};

}  // namespace cpu
}  // namespace ctxattn
