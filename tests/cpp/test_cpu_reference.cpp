// The CPU reference against the float64 oracle of dense_reference.h (written independently from
// SPEC section 3), on small problems covering every branch of the math; then the fast path
// against the same oracle with the SPEC section 6 tolerances, and nvfp4 blocks (scales read
// through the test's own swizzle formula) against quantizing the float64 values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cpu_harness.h"
#include "dense_reference.h"
#include "paged_cache.h"

namespace ctxattn_test {
namespace {

std::vector<ProblemSpec> small_cases() {
  std::vector<ProblemSpec> cases;
  ProblemSpec s;
  s.q_lens = {1, 17, 0, 33};
  s.kv_lens = {5, 17, 3, 70};
  s.num_qo_heads = 6, s.num_kv_heads = 2, s.head_dim = 32, s.page_size = 8, s.with_lse = true;
  cases.push_back(s);
  s.with_sinks = true, s.window_left = 9;
  cases.push_back(s);
  s.causal = false, s.window_left = -1, s.kv_lens = {0, 9, 3, 12};  // request 0: sink only
  cases.push_back(s);
  s.with_sinks = false;  // request 0 rows: no key, no sink -> O = 0, LSE = -inf
  cases.push_back(s);
  s = cases[0];
  s.q_dtype = s.kv_dtype = CTXATTN_DTYPE_FLOAT16, s.out_dtype = CTXATTN_DTYPE_FLOAT16, s.bmm2_scale = 0.7f;
  cases.push_back(s);
  s.q_dtype = s.kv_dtype = s.out_dtype = CTXATTN_DTYPE_FLOAT8_E4M3, s.scale_pointers = true;
  cases.push_back(s);
  s.kv_layout = CTXATTN_KV_LAYOUT_NHD, s.kv_form = KvForm::kShared, s.q_dtype = CTXATTN_DTYPE_BFLOAT16;
  s.out_dtype = CTXATTN_DTYPE_BFLOAT16;
  cases.push_back(s);
  // Separate K / V page indices: V's ids a shuffle of K's, each form of the pool.
  for (KvForm form : {KvForm::kTuple, KvForm::kOneTensor, KvForm::kShared}) {
    s = cases[1];
    s.separate_kv_idx = true, s.kv_form = form;
    cases.push_back(s);
  }
  // NVFP4 caches (D a multiple of 64): each query dtype, both layouts, each pool form, both index
  // layouts; the oracle decodes codes and scales through paged_cache.h's own arithmetic.
  s = cases[1];
  s.head_dim = 64, s.kv_dtype = CTXATTN_DTYPE_NVFP4;
  cases.push_back(s);
  s.q_dtype = CTXATTN_DTYPE_FLOAT8_E4M3, s.out_dtype = CTXATTN_DTYPE_FLOAT8_E4M3, s.kv_layout = CTXATTN_KV_LAYOUT_NHD;
  s.kv_form = KvForm::kOneTensor, s.separate_kv_idx = true, s.kv_pad = 32;
  cases.push_back(s);
  s.q_dtype = CTXATTN_DTYPE_FLOAT16, s.out_dtype = CTXATTN_DTYPE_FLOAT16, s.kv_form = KvForm::kShared;
  s.head_dim = 128, s.page_size = 4, s.separate_kv_idx = false;
  cases.push_back(s);
  return cases;
}

// The reference is computed in double and rounded through fp32 into the output dtype: within half
// a unit in the last place of the oracle, plus one fp32 rounding (|O| <= max |V| stays below 8 here).
TEST(CpuReference, MatchesFloat64Oracle) {
  int index = 0;
  for (const ProblemSpec& spec : small_cases()) {
    SCOPED_TRACE("case " + std::to_string(index++));
    PagedProblem pb(spec);
    const Outcome ref = run_cpu(pb, CTXATTN_BACKEND_CPU_REFERENCE);
    ASSERT_EQ(ref.status, CTXATTN_STATUS_OK) << ref.error;
    EXPECT_EQ(ref.coverage, "");
    const DenseResult want = dense_reference(pb);
    const Mismatch m = compare_ulps(pb, ref.out, want.o, 0.5, 8.0 * 0x1p-24);
    EXPECT_EQ(m.count, 0) << "worst " << m.worst << "x the bound at " << m.where;
    EXPECT_LE(lse_max_diff(pb, ref.lse, want.lse), 1e-5);
  }
}

TEST(CpuReference, EmptyRowsAreZeroWithMinusInfinityLse) {
  ProblemSpec s = small_cases()[3];
  PagedProblem pb(s);
  const Outcome ref = run_cpu(pb, CTXATTN_BACKEND_CPU_REFERENCE);
  ASSERT_EQ(ref.status, CTXATTN_STATUS_OK) << ref.error;
  const Outcome fast = run_cpu(pb, CTXATTN_BACKEND_CPU);
  ASSERT_EQ(fast.status, CTXATTN_STATUS_OK) << fast.error;
  // Request 0: one query row over zero keys, no sinks.
  for (const Outcome* o : {&ref, &fast}) {
    for (int32_t h = 0; h < s.num_qo_heads; ++h) {
      for (int32_t d = 0; d < s.head_dim; ++d) EXPECT_EQ(o->out[h * s.head_dim + d], 0.0);
      EXPECT_EQ(o->lse[h], -INFINITY);
    }
  }
}

// SPEC section 6 against the float64 oracle: |got - want| <= atol + rtol * |want|.
void expect_within_spec(PagedProblem& pb, double rtol, double atol) {
  const Outcome fast = run_cpu(pb, CTXATTN_BACKEND_CPU);
  ASSERT_EQ(fast.status, CTXATTN_STATUS_OK) << fast.error;
  const DenseResult want = dense_reference(pb);
  const int64_t n = pb.q_begin(pb.batch_size()) * pb.spec().num_qo_heads * pb.spec().head_dim;
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!(std::fabs(fast.out[i] - want.o[i]) <= atol + rtol * std::fabs(want.o[i]))) {
      if (bad++ == 0) ADD_FAILURE() << "element " << i << ": got " << fast.out[i] << ", want " << want.o[i];
    }
  }
  EXPECT_EQ(bad, 0);
  if (pb.spec().with_lse) EXPECT_LE(lse_max_diff(pb, fast.lse, want.lse), 1e-3);
}

TEST(CpuFast, WithinSpecTolerancesOfFloat64) {
  int index = 0;
  for (ProblemSpec s : small_cases()) {
    SCOPED_TRACE("case " + std::to_string(index++));
    // An NVFP4 cache counts as fp8 inputs (SPEC 8.1).
    const bool fp8 = s.q_dtype == CTXATTN_DTYPE_FLOAT8_E4M3 || s.kv_dtype == CTXATTN_DTYPE_FLOAT8_E4M3 ||
                     s.kv_dtype == CTXATTN_DTYPE_NVFP4;
    PagedProblem pb(s);
    if (s.out_dtype == CTXATTN_DTYPE_FLOAT8_E4M3) {
      expect_within_spec(pb, 5e-2, 7e-2);
    } else if (fp8) {
      expect_within_spec(pb, 4e-2, 6e-2);
    } else {
      expect_within_spec(pb, 1e-2, 1e-2);
    }
  }
}

// nvfp4: every block's scale must be e4m3(o_sf_scale * amax / 6) of the float64 values (one e4m3
// step of slack where the float64 amax sits on a rounding edge), and every code the e2m1 rounding
// of value * o_sf_scale / scale, within one step; RMS code error well under SPEC's 0.3.
TEST(CpuNvfp4, BlocksMatchFloat64Quantization) {
  for (ctxattn_backend_t backend : {CTXATTN_BACKEND_CPU_REFERENCE, CTXATTN_BACKEND_CPU}) {
    ProblemSpec s = small_cases()[1];
    s.out_dtype = CTXATTN_DTYPE_NVFP4, s.o_sf_scale = 3.0f, s.scale_start_index = 126;  // rows cross a 128-row tile
    s.head_dim = 48, s.q_pad = 2, s.out_pad = 5, s.extra_rows = 2;
    PagedProblem pb(s);
    const Outcome got = run_cpu(pb, backend);
    ASSERT_EQ(got.status, CTXATTN_STATUS_OK) << got.error;
    EXPECT_EQ(got.coverage, "");
    const DenseResult want = dense_reference(pb);
    double sq = 0.0;
    int64_t n = 0, bad_scales = 0, bad_codes = 0;
    for (int64_t t = 0; t < pb.q_begin(pb.batch_size()); ++t) {
      for (int32_t h = 0; h < s.num_qo_heads; ++h) {
        for (int32_t k = 0; k < s.head_dim / 16; ++k) {
          const double* x = &want.o[(t * s.num_qo_heads + h) * s.head_dim + k * 16];
          double amax = 0.0;
          for (int i = 0; i < 16; ++i) amax = std::max(amax, std::fabs(x[i]));
          const uint8_t want_sf = ctxattn::float_to_e4m3(static_cast<float>(s.o_sf_scale * amax / 6.0));
          const uint8_t got_sf = nvfp4_scale(pb, t, h, k);
          if (std::abs(static_cast<int>(want_sf) - static_cast<int>(got_sf)) > 1) ++bad_scales;
          const double sf = ctxattn::e4m3_to_float(got_sf);
          for (int i = 0; i < 16; ++i) {
            const double scaled = sf == 0 ? 0.0 : std::min(6.0, std::max(-6.0, x[i] * s.o_sf_scale / sf));
            const int got_step = e2m1_step(nvfp4_code(pb, t, h, k * 16 + i));
            const int want_step = e2m1_step(ctxattn::float_to_e2m1(static_cast<float>(scaled)));
            if (std::abs(got_step - want_step) > 1) ++bad_codes;
            const double err = e2m1_value(nvfp4_code(pb, t, h, k * 16 + i)) - scaled;
            sq += err * err;
            ++n;
          }
        }
      }
    }
    EXPECT_EQ(bad_scales, 0);
    EXPECT_EQ(bad_codes, 0);
    EXPECT_LT(std::sqrt(sq / std::max<int64_t>(n, 1)), 0.3);
  }
}

}  // namespace
}  // namespace ctxattn_test
