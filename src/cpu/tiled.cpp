// cpu_run: the tiled, multi-threaded CPU path.
//
// Work item = (request, KV head, block of query tokens). Its rows are the block's tokens times
// the G query heads that share the KV head, so every K/V tile is gathered and converted once and
// used by all G heads. For each 64-key tile inside the item's causal / window band:
//   S = Q K^T  ->  online softmax (base 2, running max m and sum l per row)  ->  O = alpha*O + P V,
// masking only the tiles that straddle a row's band edge; tiles wholly outside are never read.
// Items are sorted by cost and handed out through one atomic counter. Each output row is written
// by exactly one item and its arithmetic does not depend on the item's extent, so the result is
// bitwise the same for every thread count.
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
  int32_t i0, i1;   // query rows [i0, i1) of the request
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

std::vector<WorkItem> make_items(const Params& p, int block) {
  std::vector<WorkItem> items;
  for (int32_t b = 0; b < p.batch_size; ++b) {
    const cpu::Request req = cpu::request(p, b);
    for (int32_t i0 = 0; i0 < req.q_len; i0 += block) {
      const int32_t i1 = std::min(req.q_len, i0 + block);
      const int64_t lo = cpu::allowed_keys(p, req, i0).lo;
      const int64_t hi = cpu::allowed_keys(p, req, i1 - 1).hi;
      const int64_t tiles = hi < lo ? 0 : hi / kTileKeys - lo / kTileKeys + 1;
      const int64_t cost = (tiles + 1) * (i1 - i0) * p.group_size;
      for (int32_t g = 0; g < p.num_kv_heads; ++g) items.push_back({b, g, i0, i1, cost});
    }
  }
  std::stable_sort(items.begin(), items.end(), [](const WorkItem& x, const WorkItem& y) { return x.cost > y.cost; });
  return items;
}

// Per-thread buffers, grown to the largest item and kept between calls. They only ever grow, so a
// call of another user thread between this call's reservation and its compute phase (the pool
// serves one job at a time, not one call) can never leave them too small.
struct Scratch {
  std::vector<int64_t> q_offsets, key_lo, key_hi, k_offsets, v_offsets;
  std::vector<float> row_max, row_sum, alpha, s, o, q_f32, kt_f32, v_f32;
  std::vector<uint32_t> q_bf16, kt_bf16;

  template <typename T>
  static void grow(std::vector<T>& v, size_t n) {
    if (v.size() < n) v.resize(n);
  }

  void reserve(int rows, int dp, Mode mode) {
    const size_t r = static_cast<size_t>(rows), d = static_cast<size_t>(dp), keys = kTileKeys;
    for (auto* v : {&q_offsets, &key_lo, &key_hi}) grow(*v, r);
    for (auto* v : {&k_offsets, &v_offsets}) grow(*v, keys);
    for (auto* v : {&row_max, &row_sum, &alpha}) grow(*v, r);
    grow(s, r * keys);
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

// Gathers the K and V tile of keys [first_key, first_key + live); `live` never passes Lk.
void load_tile(const Job& job, const WorkItem& w, int64_t first_key, int keys, Scratch& sc) {
  const Params& p = job.p;
  for (int j = 0; j < keys; ++j) {
    sc.k_offsets[j] = cpu::k_offset(p, w.b, first_key + j, w.g);
    sc.v_offsets[j] = cpu::v_offset(p, w.b, first_key + j, w.g);
  }
  if (job.mode.qk_bf16) {
    cpu::pack_k_bf16(p, sc.k_offsets.data(), keys, job.dp, sc.kt_bf16.data());
  } else {
    cpu::pack_k_f32(p, job.k, sc.k_offsets.data(), keys, job.dp, sc.kt_f32.data());
  }
  cpu::pack_v_f32(p, job.k, sc.v_offsets.data(), keys, job.dp, sc.v_f32.data());
}

// Row r of an item is query row i0 + r / G of the request under query head g*G + r % G, so the
// G rows of one token are adjacent and share their key band.
void run_item(const Job& job, const WorkItem& w, Scratch& sc) {
  const Params& p = job.p;
  const cpu::Kernels& k = job.k;
  const int G = p.group_size;
  const int rows = (w.i1 - w.i0) * G;
  const int dp = job.dp;
  const cpu::Request req = cpu::request(p, w.b);
  const float kNegInf = -std::numeric_limits<float>::infinity();

  for (int r = 0; r < rows; ++r) {
    const int64_t i = w.i0 + r / G;
    const int32_t h = w.g * G + r % G;
    sc.q_offsets[r] = cpu::q_offset(p, req.q_begin + i, h);
    const cpu::KeyRange keys = cpu::allowed_keys(p, req, i);
    sc.key_lo[r] = keys.lo;
    sc.key_hi[r] = keys.hi;
    // A sink starts the row as a key of logit sink_h and a zero value: m = sink, l = 1.
    const bool sink = p.sinks != nullptr && p.sinks[h] != kNegInf;
    sc.row_max[r] = sink ? p.sinks[h] * kLog2e : kNegInf;
    sc.row_sum[r] = sink ? 1.0f : 0.0f;
  }
  if (job.mode.qk_bf16) {
    cpu::pack_q_bf16(p, sc.q_offsets.data(), rows, dp, sc.q_bf16.data());
  } else {
    cpu::pack_q_f32(p, k, sc.q_offsets.data(), rows, dp, sc.q_f32.data());
  }
  std::fill(sc.o.begin(), sc.o.begin() + static_cast<size_t>(rows) * dp, 0.0f);

  // Bands move right with the row: the first row has the lowest start, the last the highest end.
  const int64_t band_lo_min = sc.key_lo[0], band_lo_max = sc.key_lo[rows - 1];
  const int64_t band_hi_min = sc.key_hi[0], band_hi_max = sc.key_hi[rows - 1];
  for (int64_t j0 = band_lo_min / kTileKeys * kTileKeys; j0 <= band_hi_max; j0 += kTileKeys) {
    // Keys past the block's last allowed key (on the causal diagonal) are skipped by both products.
    const int live = static_cast<int>(std::min<int64_t>(kTileKeys, band_hi_max - j0 + 1));
    load_tile(job, w, j0, live, sc);
    if (job.mode.qk_bf16) {
      k.qk_bf16(sc.q_bf16.data(), dp / 2, rows, sc.kt_bf16.data(), dp, live, sc.s.data());
    } else {
      k.qk_f32(sc.q_f32.data(), dp, rows, sc.kt_f32.data(), dp, live, sc.s.data());
    }
    cpu::SoftmaxStep step;
    step.rows = rows;
    step.first_key = j0;
    step.masked = !(band_lo_max <= j0 && band_hi_min >= j0 + kTileKeys - 1);
    step.key_lo = sc.key_lo.data();
    step.key_hi = sc.key_hi.data();
    step.scale_log2 = job.scale_log2;
    step.row_max = sc.row_max.data();
    step.row_sum = sc.row_sum.data();
    step.alpha = sc.alpha.data();
    k.softmax(sc.s.data(), step);
    k.pv_f32(sc.s.data(), rows, live, sc.v_f32.data(), dp, sc.alpha.data(), sc.o.data());
  }

  // A row with no allowed key and no sink has an empty softmax: O = 0, LSE = -inf.
  for (int r = 0; r < rows; ++r) {
    const int64_t t = req.q_begin + w.i0 + r / G;
    const int32_t h = w.g * G + r % G;
    float* o = sc.o.data() + static_cast<size_t>(r) * dp;
    const bool empty = sc.key_lo[r] > sc.key_hi[r] && sc.row_sum[r] == 0.0f;
    const float factor = empty ? 0.0f : job.out_scale / sc.row_sum[r];
    for (int c = 0; c < p.head_dim; ++c) o[c] *= factor;
    cpu::store_output_row(p, t, h, o);
    cpu::store_lse(p, t, h, empty ? kNegInf : sc.row_max[r] + std::log2(sc.row_sum[r]));
  }
}

int count_items(const Params& p, int block) {
  int64_t n = 0;
  for (int32_t b = 0; b < p.batch_size; ++b) n += (cpu::request(p, b).q_len + block - 1) / block;
  return static_cast<int>(std::min<int64_t>(n * p.num_kv_heads, 1 << 30));
}

}  // namespace

Status cpu_run(const Params& p) {
  const cpu::Kernels& kernels = cpu::select_kernels();
  const Mode mode = choose_mode(p, kernels);
  const int dp = (p.head_dim + cpu::kDimAlign - 1) / cpu::kDimAlign * cpu::kDimAlign;
  const int threads_wanted = cpu::resolve_num_threads(p.num_threads);

  // Token block: kTargetRows rows, smaller while there are too few items to keep threads busy.
  int block = std::max(1, kTargetRows / p.group_size);
  while (block > 1 && count_items(p, block) < kItemsPerThread * threads_wanted) block = (block + 1) / 2;
  const std::vector<WorkItem> items = make_items(p, block);
  if (items.empty()) return Status::Ok();
  const int threads = std::min<int>(threads_wanted, static_cast<int>(items.size()));
  const int max_rows = block * p.group_size;

  // Buffers first, on every thread, so a failed allocation leaves out and lse untouched.
  std::atomic<bool> alloc_failed{false};
  cpu::ThreadPool::instance().run(threads, [&](int) {
    try {
      t_scratch.reserve(max_rows, dp, mode);
    } catch (...) {
      alloc_failed = true;
    }
  });
  if (alloc_failed) return Status::Error(CTXATTN_STATUS_INTERNAL_ERROR, "out of host memory for CPU scratch buffers");

  const Job job{p, kernels, mode, dp, cpu::bmm1_scale(p) * kLog2e, cpu::bmm2_scale(p)};
  cpu::run_items(threads, items.size(), [&](size_t n) { run_item(job, items[n], t_scratch); });
  return Status::Ok();
}

}  // namespace ctxattn
