// cpu_reference_run: SPEC section 3 written as plain loops, in double precision, one query row at
// a time. It is the oracle of every other backend, so it favours obviousness over speed; the only
// concession is that blocks of rows run on the CPU backend's threads (each row is computed alone,
// so the result does not depend on how many threads there are or which takes which block).
// With skip-softmax (SPEC 8.2) the unit is a vote group instead: its rows walk the key tiles
// together, each tile scored for every row, voted on, then applied or skipped.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "core/backends.h"
#include "cpu/access.h"
#include "cpu/output.h"
#include "cpu/skip.h"
#include "cpu/thread_pool.h"

namespace ctxattn {
namespace {

constexpr double kLog2e = 1.4426950408889634;

// Row (t, h) of request r, query row i. A sink of -inf contributes exp(-inf) = 0, i.e. nothing.
// With no allowed key and no sink the softmax is empty: O = 0 and LSE = -inf.
void reference_row(const Params& p, int32_t b, const cpu::Request& r, int64_t i, int32_t h,
                   std::vector<float>& q, std::vector<float>& kv, std::vector<double>& scores,
                   std::vector<double>& acc, std::vector<float>& o) {
  const int32_t d = p.head_dim;
  const int32_t g = h / p.group_size;
  const int64_t t = r.q_begin + i;
  for (int32_t c = 0; c < d; ++c) q[c] = cpu::load_element(p.q, p.q_dtype, cpu::q_offset(p, t, h) + c);

  const cpu::KeyRange keys = cpu::allowed_keys(p, r, i);
  const bool has_sink = p.sinks != nullptr && p.sinks[h] != -std::numeric_limits<float>::infinity();
  double m = has_sink ? static_cast<double>(p.sinks[h]) : -std::numeric_limits<double>::infinity();
  scores.clear();
  for (int64_t j = keys.lo; j <= keys.hi; ++j) {
    cpu::load_kv_row(p, false, b, j, g, kv.data());
    double dot = 0.0;
    for (int32_t c = 0; c < d; ++c) dot += static_cast<double>(q[c]) * kv[c];
    const double s = static_cast<double>(cpu::bmm1_scale(p)) * dot;
    scores.push_back(s);
    m = std::max(m, s);
  }

  double l = has_sink ? std::exp(static_cast<double>(p.sinks[h]) - m) : 0.0;
  acc.assign(d, 0.0);
  for (int64_t j = keys.lo; j <= keys.hi; ++j) {
    const double w = std::exp(scores[j - keys.lo] - m);
    l += w;
    cpu::load_kv_row(p, true, b, j, g, kv.data());
    for (int32_t c = 0; c < d; ++c) acc[c] += w * kv[c];
  }

  const bool empty = keys.lo > keys.hi && !has_sink;
  for (int32_t c = 0; c < d; ++c) {
    o[c] = empty ? 0.0f : static_cast<float>(static_cast<double>(cpu::bmm2_scale(p)) * acc[c] / l);
  }
  cpu::store_output_row(p, t, h, o.data());
  const double lse = empty ? -std::numeric_limits<double>::infinity() : m * kLog2e + std::log2(l);
  cpu::store_lse(p, t, h, static_cast<float>(lse));
}

// The finished row of a vote group: the sink joins once (SPEC 8.2), then O and LSE are stored.
void finish_row(const Params& p, int64_t t, int32_t h, double m, double l, std::vector<double>& acc,
                std::vector<float>& o) {
  const double kInf = std::numeric_limits<double>::infinity();
  const bool has_sink = p.sinks != nullptr && p.sinks[h] != -std::numeric_limits<float>::infinity();
  if (has_sink) {
    const double sink = p.sinks[h];
    const double m_all = std::max(m, sink);
    const double alpha = m == -kInf ? 0.0 : std::exp(m - m_all);
    l = l * alpha + std::exp(sink - m_all);
    for (double& x : acc) x *= alpha;
    m = m_all;
  }
  const bool empty = l == 0.0;
  for (int32_t c = 0; c < p.head_dim; ++c) {
    o[c] = empty ? 0.0f : static_cast<float>(static_cast<double>(cpu::bmm2_scale(p)) * acc[c] / l);
  }
  cpu::store_output_row(p, t, h, o.data());
  cpu::store_lse(p, t, h, static_cast<float>(empty ? -kInf : m * kLog2e + std::log2(l)));
}

// Packed rows [r0, r1) of request b under KV head g (packed row r: query row r / G, head
// g * G + r % G) as one vote group: every tile is scored for all rows, then skipped when it is
// not the group's first and exp(tile_max - running_max) < lambda holds for every row.
void reference_group(const Params& p, int32_t b, const cpu::Request& r, int32_t g, int64_t r0, int64_t r1,
                     cpu::SkipStats& stats) {
  const double kInf = std::numeric_limits<double>::infinity();
  const int32_t d = p.head_dim, G = p.group_size;
  const int64_t rows = r1 - r0;
  const double lambda = cpu::skip_threshold(p, r);
  std::vector<float> q(static_cast<size_t>(rows) * d), kv(d), o(d);
  std::vector<cpu::KeyRange> band(rows);
  std::vector<double> m(rows, -kInf), l(rows, 0.0), acc(static_cast<size_t>(rows) * d, 0.0);
  for (int64_t k = 0; k < rows; ++k) {
    const int64_t i = (r0 + k) / G;
    const int32_t h = g * G + static_cast<int32_t>((r0 + k) % G);
    for (int32_t c = 0; c < d; ++c) q[k * d + c] = cpu::load_element(p.q, p.q_dtype, cpu::q_offset(p, r.q_begin + i, h) + c);
    band[k] = cpu::allowed_keys(p, r, i);
  }
  const cpu::TileWalk walk = cpu::tile_walk(p, band.front().lo, band.back().hi);
  std::vector<double> s(static_cast<size_t>(rows) * walk.width);
  std::vector<double> tile_max(rows);
  uint64_t counted = 0, skipped = 0;
  for (int64_t n = 0; n < walk.count(); ++n) {
    const int64_t j0 = walk.begin_key(n);
    bool any_key = false;
    for (int64_t k = 0; k < rows; ++k) {
      tile_max[k] = -kInf;
      const int64_t lo = std::max(j0, band[k].lo), hi = std::min(j0 + walk.width - 1, band[k].hi);
      for (int64_t j = lo; j <= hi; ++j) {
        cpu::load_kv_row(p, false, b, j, g, kv.data());
        double dot = 0.0;
        for (int32_t c = 0; c < d; ++c) dot += static_cast<double>(q[k * d + c]) * kv[c];
        s[k * walk.width + (j - j0)] = static_cast<double>(cpu::bmm1_scale(p)) * dot;
        tile_max[k] = std::max(tile_max[k], s[k * walk.width + (j - j0)]);
        any_key = true;
      }
    }
    if (!any_key) continue;  // no row attends a key here: no work, no vote
    const bool first = counted++ == 0;
    bool skip = !first;
    for (int64_t k = 0; k < rows && skip; ++k) {
      // A row without keys here agrees; one that has seen nothing yet (m = -inf) does not.
      skip = tile_max[k] == -kInf || std::exp(tile_max[k] - m[k]) < lambda;
    }
    if (skip) {
      ++skipped;
      continue;
    }
    for (int64_t k = 0; k < rows; ++k) {
      if (tile_max[k] == -kInf) continue;
      const double m_new = std::max(m[k], tile_max[k]);
      const double alpha = m[k] == -kInf ? 0.0 : std::exp(m[k] - m_new);
      l[k] *= alpha;
      for (int32_t c = 0; c < d; ++c) acc[k * d + c] *= alpha;
      const int64_t lo = std::max(j0, band[k].lo), hi = std::min(j0 + walk.width - 1, band[k].hi);
      for (int64_t j = lo; j <= hi; ++j) {
        const double w = std::exp(s[k * walk.width + (j - j0)] - m_new);
        l[k] += w;
        cpu::load_kv_row(p, true, b, j, g, kv.data());
        for (int32_t c = 0; c < d; ++c) acc[k * d + c] += w * kv[c];
      }
      m[k] = m_new;
    }
  }
  stats.add(counted, skipped);
  std::vector<double> row_acc(d);
  for (int64_t k = 0; k < rows; ++k) {
    const int32_t h = g * G + static_cast<int32_t>((r0 + k) % G);
    std::copy(acc.begin() + k * d, acc.begin() + (k + 1) * d, row_acc.begin());
    finish_row(p, r.q_begin + (r0 + k) / G, h, m[k], l[k], row_acc, o);
  }
}

Status reference_skip_run(const Params& p) {
  struct Group {
    int32_t b, g;
    int64_t r0, r1;
  };
  std::vector<Group> groups;
  for (int32_t b = 0; b < p.batch_size; ++b) {
    const int64_t packed = static_cast<int64_t>(cpu::request(p, b).q_len) * p.group_size;
    for (int32_t g = 0; g < p.num_kv_heads; ++g) {
      for (int64_t r0 = 0; r0 < packed; r0 += p.skip_rows) groups.push_back({b, g, r0, std::min<int64_t>(r0 + p.skip_rows, packed)});
    }
  }
  cpu::SkipStats stats;
  const int threads =
      static_cast<int>(std::min<size_t>(static_cast<size_t>(cpu::resolve_num_threads(p.num_threads)), std::max<size_t>(groups.size(), 1)));
  std::atomic<bool> alloc_failed{false};
  cpu::run_items(threads, groups.size(), [&](size_t n) {
    if (alloc_failed) return;
    try {
      const Group& gr = groups[n];
      reference_group(p, gr.b, cpu::request(p, gr.b), gr.g, gr.r0, gr.r1, stats);
    } catch (...) {
      alloc_failed = true;
    }
  });
  if (alloc_failed) return Status::Error(CTXATTN_STATUS_INTERNAL_ERROR, "out of host memory for the CPU reference");
  stats.store(p);
  return Status::Ok();
}

}  // namespace

Status cpu_reference_run(const Params& p) {
  if (cpu::skips_softmax(p)) return reference_skip_run(p);
  cpu::SkipStats().store(p);  // dense: nothing voted, nothing skipped
  // Work items: up to kRows query rows of one request, every head of each.
  constexpr int64_t kRows = 16;
  struct Item {
    int32_t b;
    int64_t i0, i1;
  };
  std::vector<Item> items;
  for (int32_t b = 0; b < p.batch_size; ++b) {
    const cpu::Request r = cpu::request(p, b);
    for (int64_t i0 = 0; i0 < r.q_len; i0 += kRows) items.push_back({b, i0, std::min<int64_t>(i0 + kRows, r.q_len)});
  }
  if (items.empty()) return Status::Ok();
  const int threads =
      static_cast<int>(std::min<size_t>(static_cast<size_t>(cpu::resolve_num_threads(p.num_threads)), items.size()));
  std::atomic<bool> alloc_failed{false};
  cpu::run_items(threads, items.size(), [&](size_t n) {
    if (alloc_failed) return;
    try {
      std::vector<float> q(p.head_dim), kv(p.head_dim), o(p.head_dim);
      std::vector<double> scores, acc;
      const Item& it = items[n];
      const cpu::Request r = cpu::request(p, it.b);
      for (int64_t i = it.i0; i < it.i1; ++i) {
        for (int32_t h = 0; h < p.num_qo_heads; ++h) reference_row(p, it.b, r, i, h, q, kv, scores, acc, o);
      }
    } catch (...) {
      alloc_failed = true;  // the other threads skip their remaining items
    }
  });
  if (alloc_failed) return Status::Error(CTXATTN_STATUS_INTERNAL_ERROR, "out of host memory for the CPU reference");
  return Status::Ok();
}

}  // namespace ctxattn
