// cpu_reference_run: SPEC section 3 written as plain loops, in double precision, one query row at
// a time. It is the oracle of every other backend, so it favours obviousness over speed; the only
// concession is that blocks of rows run on the CPU backend's threads (each row is computed alone,
// so the result does not depend on how many threads there are or which takes which block).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "core/backends.h"
#include "cpu/access.h"
#include "cpu/output.h"
#include "cpu/thread_pool.h"

namespace ctxattn {
namespace {

constexpr double kLog2e = 1.4426950408889634;

// Row (t, h) of request r, query row i. A sink of -inf contributes exp(-inf) = 0, i.e. nothing.
// With no allowed key and no sink the softmax is empty: O = 0 and LSE = -inf.
void reference_row(const Params& p, int32_t b, const cpu::Request& r, int64_t i, int32_t h,
                   std::vector<float>& q, std::vector<double>& scores, std::vector<double>& acc,
                   std::vector<float>& o) {
  const int32_t d = p.head_dim;
  const int32_t g = h / p.group_size;
  const int64_t t = r.q_begin + i;
  for (int32_t c = 0; c < d; ++c) q[c] = cpu::load_element(p.q, p.q_dtype, cpu::q_offset(p, t, h) + c);

  const cpu::KeyRange keys = cpu::allowed_keys(p, r, i);
  const bool has_sink = p.sinks != nullptr && p.sinks[h] != -std::numeric_limits<float>::infinity();
  double m = has_sink ? static_cast<double>(p.sinks[h]) : -std::numeric_limits<double>::infinity();
  scores.clear();
  for (int64_t j = keys.lo; j <= keys.hi; ++j) {
    const int64_t k_row = cpu::k_offset(p, b, j, g);
    double dot = 0.0;
    for (int32_t c = 0; c < d; ++c) dot += static_cast<double>(q[c]) * cpu::load_element(p.k, p.kv_dtype, k_row + c);
    const double s = static_cast<double>(cpu::bmm1_scale(p)) * dot;
    scores.push_back(s);
    m = std::max(m, s);
  }

  double l = has_sink ? std::exp(static_cast<double>(p.sinks[h]) - m) : 0.0;
  acc.assign(d, 0.0);
  for (int64_t j = keys.lo; j <= keys.hi; ++j) {
    const double w = std::exp(scores[j - keys.lo] - m);
    l += w;
    const int64_t v_row = cpu::v_offset(p, b, j, g);
    for (int32_t c = 0; c < d; ++c) acc[c] += w * cpu::load_element(p.v, p.kv_dtype, v_row + c);
  }

  const bool empty = keys.lo > keys.hi && !has_sink;
  for (int32_t c = 0; c < d; ++c) {
    o[c] = empty ? 0.0f : static_cast<float>(static_cast<double>(cpu::bmm2_scale(p)) * acc[c] / l);
  }
  cpu::store_output_row(p, t, h, o.data());
  const double lse = empty ? -std::numeric_limits<double>::infinity() : m * kLog2e + std::log2(l);
  cpu::store_lse(p, t, h, static_cast<float>(lse));
}

}  // namespace

Status cpu_reference_run(const Params& p) {
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
      std::vector<float> q(p.head_dim), o(p.head_dim);
      std::vector<double> scores, acc;
      const Item& it = items[n];
      const cpu::Request r = cpu::request(p, it.b);
      for (int64_t i = it.i0; i < it.i1; ++i) {
        for (int32_t h = 0; h < p.num_qo_heads; ++h) reference_row(p, it.b, r, i, h, q, scores, acc, o);
      }
    } catch (...) {
      alloc_failed = true;  // the other threads skip their remaining items
    }
  });
  if (alloc_failed) return Status::Error(CTXATTN_STATUS_INTERNAL_ERROR, "out of host memory for the CPU reference");
  return Status::Ok();
}

}  // namespace ctxattn
