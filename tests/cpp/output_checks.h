// Checks on what a call wrote, for problems whose outputs were poisoned first
// (PagedProblem::poison_outputs): every element the requests own was written (no poison, no NaN),
// every other byte of out / out_scale / lse kept its poison, and nvfp4 results agree with a
// second result or with float64 values block by block.
#pragma once

#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "core/numeric.h"
#include "dense_reference.h"
#include "paged_cache.h"

namespace ctxattn_test {

// "" when the call wrote exactly the owned elements; otherwise what went wrong first.
inline std::string check_coverage(const PagedProblem& pb) {
  const ProblemSpec& s = pb.spec();
  const int64_t rows = pb.q_begin(pb.batch_size());
  const bool nvfp4 = s.out_dtype == CTXATTN_DTYPE_NVFP4;
  const size_t esize = dtype_size(s.out_dtype);
  const int64_t row_elems = nvfp4 ? s.head_dim / 2 : s.head_dim;

  std::vector<bool> owned(pb.out.size(), false);
  for (int64_t t = 0; t < rows; ++t) {
    for (int32_t h = 0; h < s.num_qo_heads; ++h) {
      for (int64_t e = 0; e < row_elems; ++e) {
        const int64_t byte = pb.out_offset(t, h, static_cast<int32_t>(e)) * esize;
        for (size_t k = 0; k < esize; ++k) owned[byte + k] = true;
        if (!nvfp4 && std::isnan(pb.out_value(t, h, static_cast<int32_t>(e)))) {
          std::ostringstream os;
          os << "out[" << t << ", " << h << ", " << e << "] is NaN (not written?)";
          return os.str();
        }
      }
    }
  }
  for (size_t i = 0; i < pb.out.size(); ++i) {
    if (!owned[i] && pb.out[i] != 0xFF) return "out byte " + std::to_string(i) + " outside every owned row was written";
  }

  if (nvfp4) {
    const int64_t cols = static_cast<int64_t>(s.num_qo_heads) * s.head_dim / 16;
    std::vector<bool> scale_owned(pb.out_scale.size(), false);
    for (int64_t t = 0; t < rows; ++t) {
      for (int64_t c = 0; c < cols; ++c) scale_owned[swizzled_scale_byte(s.scale_start_index + t, c, cols)] = true;
    }
    for (size_t i = 0; i < pb.out_scale.size(); ++i) {
      // 0xFF is e4m3 NaN, which a finite result never produces.
      if (scale_owned[i] && pb.out_scale[i] == 0xFF) return "out_scale byte " + std::to_string(i) + " not written";
      if (!scale_owned[i] && pb.out_scale[i] != 0xFF) {
        return "out_scale byte " + std::to_string(i) + " outside the owned rows was written";
      }
    }
  }

  if (s.with_lse) {
    std::vector<bool> lse_owned(pb.lse.size(), false);
    for (int64_t t = 0; t < rows; ++t) {
      for (int32_t h = 0; h < s.num_qo_heads; ++h) {
        const int64_t i = t * pb.args.lse_stride_token + h * pb.args.lse_stride_head;
        lse_owned[i] = true;
        if (std::isnan(pb.lse[i])) return "lse[" + std::to_string(t) + ", " + std::to_string(h) + "] not written";
      }
    }
    for (size_t i = 0; i < pb.lse.size(); ++i) {
      if (!lse_owned[i] && !std::isnan(pb.lse[i])) return "lse element " + std::to_string(i) + " outside every owned row was written";
    }
  }
  return "";
}

// Largest |a - b| over the owned LSE entries (infinities must match exactly).
inline double lse_max_diff(const PagedProblem& pb, const std::vector<double>& a, const std::vector<double>& b) {
  const int64_t rows = pb.q_begin(pb.batch_size());
  double worst = 0.0;
  for (int64_t i = 0; i < rows * pb.spec().num_qo_heads; ++i) {
    if (std::isinf(a[i]) || std::isinf(b[i])) {
      if (a[i] != b[i]) return INFINITY;
      continue;
    }
    const double d = std::fabs(a[i] - b[i]);
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

// The owned LSE entries as [T][Hq] doubles.
inline std::vector<double> lse_values(const PagedProblem& pb) {
  const int64_t T = pb.num_tokens();
  const int32_t Hq = pb.spec().num_qo_heads;
  std::vector<double> v(T * Hq, 0.0);
  for (int64_t t = 0; t < pb.q_begin(pb.batch_size()); ++t) {
    for (int32_t h = 0; h < Hq; ++h) v[t * Hq + h] = pb.lse_value(t, h);
  }
  return v;
}

// e2m1 magnitude index 0..7 of a code, signed.
inline int e2m1_step(uint8_t code) { return (code & 8) ? -static_cast<int>(code & 7) : static_cast<int>(code & 7); }

// nvfp4 against a second nvfp4 result (codes, scales) of the same problem: scales within one e4m3
// step, codes within one e2m1 step when the scales agree. Returns the number of violations.
struct Nvfp4Result {
  std::vector<uint8_t> codes;   // [T][Hq][D]
  std::vector<uint8_t> scales;  // [T][Hq][D/16]
};

inline Nvfp4Result read_nvfp4(const PagedProblem& pb) {
  const ProblemSpec& s = pb.spec();
  Nvfp4Result r;
  for (int64_t t = 0; t < pb.q_begin(pb.batch_size()); ++t) {
    for (int32_t h = 0; h < s.num_qo_heads; ++h) {
      for (int32_t d = 0; d < s.head_dim; ++d) r.codes.push_back(nvfp4_code(pb, t, h, d));
      for (int32_t k = 0; k < s.head_dim / 16; ++k) r.scales.push_back(nvfp4_scale(pb, t, h, k));
    }
  }
  return r;
}

inline int64_t nvfp4_mismatches(const Nvfp4Result& a, const Nvfp4Result& b) {
  int64_t bad = 0;
  for (size_t i = 0; i < a.scales.size(); ++i) {
    const int ds = std::abs(static_cast<int>(a.scales[i]) - static_cast<int>(b.scales[i]));
    if (ds > 1 || ((a.scales[i] ^ b.scales[i]) & 0x80)) ++bad;
    if (ds != 0) continue;
    for (size_t k = i * 16; k < i * 16 + 16; ++k) {
      if (std::abs(e2m1_step(a.codes[k]) - e2m1_step(b.codes[k])) > 1) ++bad;
    }
  }
  return bad;
}

}  // namespace ctxattn_test
