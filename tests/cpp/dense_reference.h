// An independent float64 oracle for test problems: SPEC section 3 evaluated straight from a
// PagedProblem's accessors (no library code), plus decoding of every output kind and
// unit-in-the-last-place comparisons. Shared by the CPU and GPU tests.
#pragma once

#include <stdint.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/numeric.h"
#include "paged_cache.h"

namespace ctxattn_test {

// O (bmm2 applied, before output conversion) as [T][Hq][D] and LSE (base 2) as [T][Hq]; rows no
// request owns stay NaN.
struct DenseResult {
  std::vector<double> o;
  std::vector<double> lse;
};

inline DenseResult dense_reference(const PagedProblem& pb) {
  const ProblemSpec& s = pb.spec();
  const int64_t T = pb.num_tokens();
  const int32_t Hq = s.num_qo_heads, D = s.head_dim, G = pb.group_size();
  DenseResult r;
  r.o.assign(T * Hq * D, std::numeric_limits<double>::quiet_NaN());
  r.lse.assign(T * Hq, std::numeric_limits<double>::quiet_NaN());
  for (int32_t b = 0; b < pb.batch_size(); ++b) {
    const int64_t lq = s.q_lens[b], lk = s.kv_lens[b];
    for (int64_t i = 0; i < lq; ++i) {
      const int64_t t = pb.q_begin(b) + i;
      int64_t first = 0, last = lk - 1;  // allowed keys, inclusive
      if (s.causal) {
        last = lk - lq + i;
        if (s.window_left >= 0) first = std::max<int64_t>(0, last - s.window_left);
      }
      for (int32_t h = 0; h < Hq; ++h) {
        const int32_t g = h / G;
        std::vector<double> logits;
        for (int64_t j = first; j <= last; ++j) {
          double dot = 0.0;
          for (int32_t d = 0; d < D; ++d) dot += static_cast<double>(pb.q(t, h, d)) * pb.k(b, j, g, d);
          logits.push_back(pb.bmm1() * dot);
        }
        const bool sink = s.with_sinks;
        double m = sink ? pb.sinks[h] : -std::numeric_limits<double>::infinity();
        for (double x : logits) m = std::max(m, x);
        double l = sink ? std::exp(pb.sinks[h] - m) : 0.0;
        std::vector<double> acc(D, 0.0);
        for (int64_t j = first; j <= last; ++j) {
          const double w = std::exp(logits[j - first] - m);
          l += w;
          for (int32_t d = 0; d < D; ++d) acc[d] += w * pb.v(b, j, g, d);
        }
        const bool empty = logits.empty() && !sink;
        for (int32_t d = 0; d < D; ++d) r.o[(t * Hq + h) * D + d] = empty ? 0.0 : pb.bmm2() * acc[d] / l;
        r.lse[t * Hq + h] = empty ? -std::numeric_limits<double>::infinity() : m / std::log(2.0) + std::log2(l);
      }
    }
  }
  return r;
}

// Byte offset of scale (row, col) in the 128x4 swizzled layout, derived as a nested tiling:
// [row tiles of 128][col tiles of 4][32 rows][4 row groups][4 cols].
inline int64_t swizzled_scale_byte(int64_t row, int64_t col, int64_t num_cols) {
  const int64_t col_tiles = (num_cols + 3) / 4;
  const int64_t tile = (row / 128) * col_tiles + col / 4;
  const int64_t row_in_tile = row % 128;
  const int64_t line = row_in_tile % 32;
  const int64_t group = row_in_tile / 32;
  return ((tile * 32 + line) * 4 + group) * 4 + col % 4;
}

// nvfp4 pieces of out: the e2m1 code of element (t, h, d) and the e4m3 scale byte of block k.
inline uint8_t nvfp4_code(const PagedProblem& pb, int64_t t, int32_t h, int32_t d) {
  const uint8_t byte = pb.out[pb.out_offset(t, h, d / 2)];
  return d % 2 == 0 ? byte & 0xF : byte >> 4;
}
inline uint8_t nvfp4_scale(const PagedProblem& pb, int64_t t, int32_t h, int32_t k) {
  const ProblemSpec& s = pb.spec();
  const int64_t cols = static_cast<int64_t>(s.num_qo_heads) * s.head_dim / 16;
  return pb.out_scale[swizzled_scale_byte(s.scale_start_index + t, h * (s.head_dim / 16) + k, cols)];
}

// e2m1 code -> value on the grid {0, .5, 1, 1.5, 2, 3, 4, 6} (sign in bit 3).
inline double e2m1_value(uint8_t code) {
  static const double grid[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  return (code & 8) ? -grid[code & 7] : grid[code & 7];
}

// out decoded to doubles, [T][Hq][D]; nvfp4 as code * scale / o_sf_scale.
inline std::vector<double> decode_out(const PagedProblem& pb) {
  const ProblemSpec& s = pb.spec();
  const int64_t T = pb.num_tokens();
  std::vector<double> o(T * s.num_qo_heads * s.head_dim);
  for (int64_t t = 0; t < T; ++t) {
    for (int32_t h = 0; h < s.num_qo_heads; ++h) {
      for (int32_t d = 0; d < s.head_dim; ++d) {
        double x;
        if (s.out_dtype == CTXATTN_DTYPE_NVFP4) {
          const double sf = ctxattn::e4m3_to_float(nvfp4_scale(pb, t, h, d / 16));
          x = e2m1_value(nvfp4_code(pb, t, h, d)) * sf / s.o_sf_scale;
        } else {
          x = pb.out_value(t, h, d);
        }
        o[(t * s.num_qo_heads + h) * s.head_dim + d] = x;
      }
    }
  }
  return o;
}

// Spacing of representable values of a dense output dtype around |x| (its unit in the last place).
inline double ulp(ctxattn_dtype_t dtype, double x) {
  int mant_bits = 7, min_exp = -126;
  if (dtype == CTXATTN_DTYPE_FLOAT16) mant_bits = 10, min_exp = -14;
  if (dtype == CTXATTN_DTYPE_FLOAT8_E4M3) mant_bits = 3, min_exp = -6;
  const double a = std::fabs(x);
  const int e = a > 0 ? std::max(static_cast<int>(std::floor(std::log2(a))), min_exp) : min_exp;
  return std::ldexp(1.0, e - mant_bits);
}

// Counts elements with |got - want| > ulps * ulp(want) + atol over the rows requests own; NaN
// anywhere counts. Keeps a description of the worst one.
struct Mismatch {
  int64_t count = 0;
  double worst = 0.0;  // largest |got - want| / (ulps * ulp + atol)
  std::string where;
};

inline Mismatch compare_ulps(const PagedProblem& pb, const std::vector<double>& got, const std::vector<double>& want,
                             double ulps, double atol) {
  const ProblemSpec& s = pb.spec();
  Mismatch m;
  const int64_t rows = pb.q_begin(pb.batch_size());
  for (int64_t e = 0; e < rows * s.num_qo_heads * s.head_dim; ++e) {
    const double bound = ulps * ulp(s.out_dtype, want[e]) + atol;
    const double err = std::fabs(got[e] - want[e]);
    const double ratio = std::isnan(err) ? std::numeric_limits<double>::infinity() : err / bound;
    if (ratio > 1.0) ++m.count;
    if (ratio > m.worst) {
      m.worst = ratio;
      std::ostringstream os;
      const int64_t row = e / s.head_dim;
      os << "t=" << row / s.num_qo_heads << " h=" << row % s.num_qo_heads << " d=" << e % s.head_dim
         << " got=" << got[e] << " want=" << want[e];
      m.where = os.str();
    }
  }
  return m;
}

}  // namespace ctxattn_test
