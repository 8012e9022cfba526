// cpu_run: the tiled, multi-threaded CPU path.
//
// Work item = (request, KV head, block of packed rows). Packed row r of a request is query row
// r / G under query head g*G + r % G, so the G heads that share a KV head are adjacent and every
// K/V tile is gathered and converted once and used by all of them. For each 64-key tile inside
// the item's causal / window band:
//   S = Q K^T  ->  online softmax (base 2, running max m and sum l per row)  ->  O = alpha*O + P V,
// masking only the tiles that straddle a row's band edge; tiles wholly outside are never read.
// Sinks join each row once at the end. Items are sorted by cost and handed out through one
// atomic counter. Each output row is written by exactly one item and its arithmetic does not
// depend on the item's extent, so the result is bitwise the same for every thread count.
//
// Skip-softmax (SPEC 8.2): an item is one vote group (skip_rows packed rows); its tiles of
// skip_keys keys (a whole number of 64-key tiles) are visited in the call's order, Q K^T of a
// tile is computed for every row, and the group skips the tile's softmax, P V and V load when
// exp(tile_max - running_max) < lambda holds for all of its rows (never for its first tile).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "core/backends.h"
#include "cpu/access.h"
#include "cpu/kernels.h"
#include "cpu/output.h"
#include "cpu/pack.h"
#include "cpu/skip.h"
#include "cpu/thread_pool.h"

namespace ctxattn {
namespace {

using cpu::kTileKeys;

// Rows (tokens x group heads) per work item: the fp32 accumulator (rows x D) and the score tile
// (rows x 64) stay in L2, and each converted K/V tile is reused by this many rows.
constexpr int kTargetRows = 128;
// Enough items per thread that sorting by cost balances the triangular causal workload.
constexpr int kItemsPerThread = 4;
constexpr float kLog2e = 1.4426950408889634f;

struct WorkItem {
  int32_t b, g;     // request, KV head
  int64_t r0, r1;   // packed rows [r0, r1) of the request
  int64_t cost;     // rows x KV tiles, for scheduling
};

// Q K^T runs on the avx512_bf16 dot product only when Q and K are exactly bf16 values (bf16 or
// e4m3 data): the products are then exact and only the fp32 summation order differs. P V always
// runs in fp32, so P is never rounded (rounding it to bf16 would be about 25% faster on
// bf16 output, at up to half a bf16 step of extra error).
struct Mode {
  bool qk_bf16;
};

Mode choose_mode(const Params& p, const cpu::Kernels& k) {
  return {k.qk_bf16 != nullptr && cpu::exact_in_bf16(p.q_dtype) && cpu::exact_in_bf16(p.kv_dtype)};
}

// Items of `block` packed rows each (the request's last item may be shorter).
std::vector<WorkItem> make_items(const Params& p, int64_t block) {
  std::vector<WorkItem> items;
  const int64_t G = p.group_size;
  for (int32_t b = 0; b < p.batch_size; ++b) {
    const cpu::Request req = cpu::request(p, b);
    const int64_t packed = static_cast<int64_t>(req.q_len) * G;
    for (int64_t r0 = 0; r0 < packed; r0 += block) {
      const int64_t r1 = std::min(packed, r0 + block);
      const int64_t lo = cpu::allowed_keys(p, req, r0 / G).lo;
      const int64_t hi = cpu::allowed_keys(p, req, (r1 - 1) / G).hi;
      const int64_t tiles = hi < lo ? 0 : hi / kTileKeys - lo / kTileKeys + 1;
      const int64_t cost = (tiles + 1) * (r1 - r0);
      for (int32_t g = 0; g < p.num_kv_heads; ++g) items.push_back({b, g, r0, r1, cost});
    }
  }
  std::stable_sort(items.begin(), items.end(), [](const WorkItem& x, const WorkItem& y) { return x.cost > y.cost; });
  return items;
}

// Per-thread buffers, grown to the largest item and kept between calls. They only ever grow, so a
// call of another user thread between this call's reservation and its compute phase (the pool
// serves one job at a time, not one call) can never leave them too small.
struct Scratch {
  std::vector<int64_t> q_offsets, key_lo, key_hi, k_offsets, v_offsets, k_scales, v_scales, slots;
  std::vector<float> row_max, row_sum, alpha, s, o, q_f32, kt_f32, v_f32;
  std::vector<uint32_t> q_bf16, kt_bf16;

  template <typename T>
  static void grow(std::vector<T>& v, size_t n) {
    if (v.size() < n) v.resize(n);
  }

  // `score_keys`: the keys of the score tiles kept at once (a vote tile with skip-softmax).
  void reserve(int rows, int dp, Mode mode, int score_keys) {
    const size_t r = static_cast<size_t>(rows), d = static_cast<size_t>(dp), keys = kTileKeys;
    for (auto* v : {&q_offsets, &key_lo, &key_hi}) grow(*v, r);
    for (auto* v : {&k_offsets, &v_offsets, &k_scales, &v_scales, &slots}) grow(*v, keys);
    for (auto* v : {&row_max, &row_sum, &alpha}) grow(*v, r);
    grow(s, r * static_cast<size_t>(score_keys));
    grow(o, r * d);
    if (mode.qk_bf16) {
      grow(q_bf16, r * d / 2);
      grow(kt_bf16, d / 2 * keys);
    } else {
      grow(q_f32, r * d);
      grow(kt_f32, d * keys);
    }
    grow(v_f32, keys * d);
  }
};

thread_local Scratch t_scratch;

struct Job {
  const Params& p;
  const cpu::Kernels& k;
  Mode mode;
  int dp;
  float scale_log2;
  float out_scale;
};

// Where the keys [first_key, first_key + keys) of K (or V) lie in the cache.
cpu::TileRows tile_rows(const Job& job, const WorkItem& w, int64_t first_key, int keys, bool is_v, Scratch& sc) {
  const Params& p = job.p;
  int64_t* data = is_v ? sc.v_offsets.data() : sc.k_offsets.data();
  int64_t* scale = is_v ? sc.v_scales.data() : sc.k_scales.data();
  const bool nvfp4 = p.kv_dtype == CTXATTN_DTYPE_NVFP4;
  for (int j = 0; j < keys; ++j) {
    const int64_t key = first_key + j;
    data[j] = is_v ? cpu::v_offset(p, w.b, key, w.g) : cpu::k_offset(p, w.b, key, w.g);
    if (!nvfp4) continue;
    scale[j] = is_v ? cpu::v_scale_tile(p, w.b, key, w.g) : cpu::k_scale_offset(p, w.b, key, w.g);
    sc.slots[j] = key & (p.page_size - 1);
  }
  return {keys, data, scale, sc.slots.data()};
}

// Gathers and converts the K tile of keys [first_key, first_key + keys); keys never pass Lk.
void load_k(const Job& job, const WorkItem& w, int64_t first_key, int keys, Scratch& sc) {
  const cpu::TileRows rows = tile_rows(job, w, first_key, keys, false, sc);
  if (job.mode.qk_bf16) {
    cpu::pack_k_bf16(job.p, rows, job.dp, sc.kt_bf16.data());
  } else {
    cpu::pack_k_f32(job.p, job.k, rows, job.dp, sc.kt_f32.data());
  }
}

void load_v(const Job& job, const WorkItem& w, int64_t first_key, int keys, Scratch& sc) {
  cpu::pack_v_f32(job.p, job.k, tile_rows(job, w, first_key, keys, true, sc), job.dp, sc.v_f32.data());
}

// S (rows x kTileKeys at `s`) = Q K^T of the converted K tile.
void qk(const Job& job, int rows, int keys, Scratch& sc, float* s) {
  if (job.mode.qk_bf16) {
    job.k.qk_bf16(sc.q_bf16.data(), job.dp / 2, rows, sc.kt_bf16.data(), job.dp, keys, s);
  } else {
    job.k.qk_f32(sc.q_f32.data(), job.dp, rows, sc.kt_f32.data(), job.dp, keys, s);
  }
}

// The online-softmax step and P V of rows [r0, r1) over one 64-key tile of scores at `s`.
void softmax_pv(const Job& job, Scratch& sc, int r0, int r1, int64_t j0, int keys, float* s) {
  const int64_t lo_max = sc.key_lo[r1 - 1], hi_min = sc.key_hi[r0];
  cpu::SoftmaxStep step;
  step.rows = r1 - r0;
  step.first_key = j0;
  step.masked = !(lo_max <= j0 && hi_min >= j0 + kTileKeys - 1);
  step.key_lo = sc.key_lo.data() + r0;
  step.key_hi = sc.key_hi.data() + r0;
  step.scale_log2 = job.scale_log2;
  step.row_max = sc.row_max.data() + r0;
  step.row_sum = sc.row_sum.data() + r0;
  step.alpha = sc.alpha.data() + r0;
  float* s_rows = s + static_cast<size_t>(r0) * kTileKeys;
  job.k.softmax(s_rows, step);
  job.k.pv_f32(s_rows, step.rows, keys, sc.v_f32.data(), job.dp, step.alpha,
               sc.o.data() + static_cast<size_t>(r0) * job.dp);
}

// The item's rows: query offsets, key bands and empty running statistics; Q packed; O zeroed.
void begin_item(const Job& job, const WorkItem& w, const cpu::Request& req, int rows, Scratch& sc) {
  const Params& p = job.p;
  const int G = p.group_size;
  for (int r = 0; r < rows; ++r) {
    const int64_t i = (w.r0 + r) / G;
    const int32_t h = w.g * G + static_cast<int32_t>((w.r0 + r) % G);
    sc.q_offsets[r] = cpu::q_offset(p, req.q_begin + i, h);
    const cpu::KeyRange keys = cpu::allowed_keys(p, req, i);
    sc.key_lo[r] = keys.lo;
    sc.key_hi[r] = keys.hi;
    sc.row_max[r] = -std::numeric_limits<float>::infinity();
    sc.row_sum[r] = 0.0f;
  }
  if (job.mode.qk_bf16) {
    cpu::pack_q_bf16(p, sc.q_offsets.data(), rows, job.dp, sc.q_bf16.data());
  } else {
    cpu::pack_q_f32(p, job.k, sc.q_offsets.data(), rows, job.dp, sc.q_f32.data());
  }
  std::fill(sc.o.begin(), sc.o.begin() + static_cast<size_t>(rows) * job.dp, 0.0f);
}

// Normalises and stores the item's rows. A sink is a key of logit sink_h and a zero value,
// joined here, once; a row with no allowed key and no sink has an empty softmax: O = 0, LSE = -inf.
void end_item(const Job& job, const WorkItem& w, const cpu::Request& req, int rows, Scratch& sc) {
  const Params& p = job.p;
  const int G = p.group_size;
  const float kNegInf = -std::numeric_limits<float>::infinity();
  for (int r = 0; r < rows; ++r) {
    const int64_t t = req.q_begin + (w.r0 + r) / G;
    const int32_t h = w.g * G + static_cast<int32_t>((w.r0 + r) % G);
    float m = sc.row_max[r], l = sc.row_sum[r], alpha = 1.0f;
    if (p.sinks != nullptr && p.sinks[h] != kNegInf) {
      const float sink = p.sinks[h] * kLog2e;
      const float m_all = std::max(m, sink);
      alpha = m == kNegInf ? 0.0f : std::exp2(m - m_all);
      l = l * alpha + std::exp2(sink - m_all);
      m = m_all;
    }
    float* o = sc.o.data() + static_cast<size_t>(r) * job.dp;
    const bool empty = l == 0.0f;
    const float factor = empty ? 0.0f : job.out_scale * alpha / l;
    for (int c = 0; c < p.head_dim; ++c) o[c] *= factor;
    cpu::store_output_row(p, t, h, o);
    cpu::store_lse(p, t, h, empty ? kNegInf : m + std::log2(l));
  }
}

void run_item(const Job& job, const WorkItem& w, Scratch& sc) {
  const cpu::Request req = cpu::request(job.p, w.b);
  const int rows = static_cast<int>(w.r1 - w.r0);
  begin_item(job, w, req, rows, sc);
  // Bands move right with the row: the first row has the lowest start, the last the highest end.
  const int64_t band_lo_min = sc.key_lo[0], band_hi_max = sc.key_hi[rows - 1];
  for (int64_t j0 = band_lo_min / kTileKeys * kTileKeys; j0 <= band_hi_max; j0 += kTileKeys) {
    // Keys past the block's last allowed key (on the causal diagonal) are skipped by both products.
    const int live = static_cast<int>(std::min<int64_t>(kTileKeys, band_hi_max - j0 + 1));
    load_k(job, w, j0, live, sc);
    load_v(job, w, j0, live, sc);
    qk(job, rows, live, sc, sc.s.data());
    softmax_pv(job, sc, 0, rows, j0, live, sc.s.data());
  }
  end_item(job, w, req, rows, sc);
}

// One vote group (the item): tiles of p.skip_keys keys in the call's order, each scored for
// every row, then skipped or applied as a whole.
void run_group(const Job& job, const WorkItem& w, Scratch& sc, cpu::SkipStats& stats) {
  const Params& p = job.p;
  const cpu::Request req = cpu::request(p, w.b);
  const int rows = static_cast<int>(w.r1 - w.r0);
  begin_item(job, w, req, rows, sc);
  const int64_t band_hi_max = sc.key_hi[rows - 1];
  const cpu::TileWalk walk = cpu::tile_walk(p, sc.key_lo[0], band_hi_max);
  // exp(tile_max - m) < lambda on base-2 logits: tile_max2 - m2 < log2(lambda); none when lambda
  // is not positive (a negative or NaN factor never skips).
  const double lambda = cpu::skip_threshold(p, req);
  const bool can_skip = lambda > 0.0;
  const float log2_lambda = can_skip ? static_cast<float>(std::log2(lambda)) : 0.0f;
  const float kNegInf = -std::numeric_limits<float>::infinity();
  uint64_t counted = 0, skipped = 0;
  for (int64_t n = 0; n < walk.count(); ++n) {
    const int64_t j0 = walk.begin_key(n);
    const int64_t j1 = std::min(j0 + walk.width - 1, band_hi_max);  // last key any row may attend
    const int subtiles = static_cast<int>((j1 - j0) / kTileKeys + 1);
    for (int u = 0; u < subtiles; ++u) {
      const int64_t k0 = j0 + static_cast<int64_t>(u) * kTileKeys;
      const int live = static_cast<int>(std::min<int64_t>(kTileKeys, j1 - k0 + 1));
      load_k(job, w, k0, live, sc);
      qk(job, rows, live, sc, sc.s.data() + static_cast<size_t>(u) * rows * kTileKeys);
    }
    // The vote: every row's masked maximum over the tile against its running maximum.
    bool any_key = false, skip = true;
    for (int r = 0; r < rows; ++r) {
      const int64_t lo = std::max(j0, sc.key_lo[r]), hi = std::min(j1, sc.key_hi[r]);
      float tile_max = kNegInf;
      for (int64_t j = lo; j <= hi; ++j) {
        const int64_t u = (j - j0) / kTileKeys, c = (j - j0) % kTileKeys;
        tile_max = std::max(tile_max, sc.s[(static_cast<size_t>(u) * rows + r) * kTileKeys + c] * job.scale_log2);
      }
      if (tile_max == kNegInf) continue;  // no key of this row here: it agrees
      any_key = true;
      skip = skip && can_skip && tile_max - sc.row_max[r] < log2_lambda;
    }
    if (!any_key) continue;  // no row attends a key here: no work, no vote
    if (counted++ > 0 && skip) {
      ++skipped;
      continue;
    }
    for (int u = 0; u < subtiles; ++u) {
      const int64_t k0 = j0 + static_cast<int64_t>(u) * kTileKeys;
      const int live = static_cast<int>(std::min<int64_t>(kTileKeys, j1 - k0 + 1));
      load_v(job, w, k0, live, sc);
      softmax_pv(job, sc, 0, rows, k0, live, sc.s.data() + static_cast<size_t>(u) * rows * kTileKeys);
    }
  }
  stats.add(counted, skipped);
  end_item(job, w, req, rows, sc);
}

int count_items(const Params& p, int64_t block) {
  int64_t n = 0;
  for (int32_t b = 0; b < p.batch_size; ++b) {
    n += (static_cast<int64_t>(cpu::request(p, b).q_len) * p.group_size + block - 1) / block;
  }
  return static_cast<int>(std::min<int64_t>(n * p.num_kv_heads, 1 << 30));
}

}  // namespace

Status cpu_run(const Params& p) {
  const cpu::Kernels& kernels = cpu::select_kernels();
  const Mode mode = choose_mode(p, kernels);
  const int dp = (p.head_dim + cpu::kDimAlign - 1) / cpu::kDimAlign * cpu::kDimAlign;
  const int threads_wanted = cpu::resolve_num_threads(p.num_threads);
  const bool skip = cpu::skips_softmax(p);

  // Dense: items of whole tokens, kTargetRows rows, fewer while there are too few items to keep
  // threads busy. Skip-softmax: one vote group an item.
  int64_t block = p.skip_rows;
  if (!skip) {
    int tokens = std::max(1, kTargetRows / p.group_size);
    while (tokens > 1 && count_items(p, static_cast<int64_t>(tokens) * p.group_size) < kItemsPerThread * threads_wanted) {
      tokens = (tokens + 1) / 2;
    }
    block = static_cast<int64_t>(tokens) * p.group_size;
  }
  const std::vector<WorkItem> items = make_items(p, block);
  cpu::SkipStats stats;
  if (items.empty()) {
    stats.store(p);
    return Status::Ok();
  }
  const int threads = std::min<int>(threads_wanted, static_cast<int>(items.size()));
  const int score_keys = skip ? p.skip_keys : kTileKeys;

  // Buffers first, on every thread, so a failed allocation leaves out and lse untouched.
  std::atomic<bool> alloc_failed{false};
  cpu::ThreadPool::instance().run(threads, [&](int) {
    try {
      t_scratch.reserve(static_cast<int>(block), dp, mode, score_keys);
    } catch (...) {
      alloc_failed = true;
    }
  });
  if (alloc_failed) return Status::Error(CTXATTN_STATUS_INTERNAL_ERROR, "out of host memory for CPU scratch buffers");

  const Job job{p, kernels, mode, dp, cpu::bmm1_scale(p) * kLog2e, cpu::bmm2_scale(p)};
  if (skip) {
    cpu::run_items(threads, items.size(), [&](size_t n) { run_group(job, items[n], t_scratch, stats); });
  } else {
    cpu::run_items(threads, items.size(), [&](size_t n) { run_item(job, items[n], t_scratch); });
  }
  stats.store(p);
  return Status::Ok();
}

}  // namespace ctxattn
