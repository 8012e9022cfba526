// Running a PagedProblem through the C API on a CPU backend and comparing two backends: the
// pieces shared by the CPU test files.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <string>
#include <vector>

#include "ctxattn/ctxattn.h"
#include "dense_reference.h"
#include "output_checks.h"
#include "paged_cache.h"

namespace ctxattn_test {

// What one call produced, decoded.
struct Outcome {
  ctxattn_status_t status = CTXATTN_STATUS_OK;
  std::string error;
  std::vector<double> out;  // decode_out
  std::vector<double> lse;  // lse_values (zeros without an lse tensor)
  Nvfp4Result nvfp4;
  std::vector<uint8_t> out_bytes;
  std::vector<float> lse_raw;
  std::string coverage;     // check_coverage
};

// Poisons the outputs, calls `backend`, and decodes what it wrote.
inline Outcome run_cpu(PagedProblem& pb, ctxattn_backend_t backend, int num_threads = 0) {
  pb.poison_outputs();
  pb.args.device_type = CTXATTN_DEVICE_CPU;
  pb.args.backend = backend;
  pb.args.num_threads = num_threads;
  Outcome r;
  r.status = ctxattn_batch_context_with_kv_cache(&pb.args);
  r.error = ctxattn_last_error();
  if (r.status != CTXATTN_STATUS_OK) return r;
  r.out = decode_out(pb);
  if (pb.spec().with_lse) r.lse = lse_values(pb);
  if (pb.spec().out_dtype == CTXATTN_DTYPE_NVFP4) r.nvfp4 = read_nvfp4(pb);
  r.out_bytes = pb.out;
  r.lse_raw = pb.lse;
  r.coverage = check_coverage(pb);
  return r;
}

// Fast path against the reference, far inside SPEC section 6: dense outputs within one unit in
// the last place of the output dtype (plus 1e-5 of the output scale for values that cancel
// to near zero), nvfp4 within one e4m3 scale step / one e2m1 step, LSE within 1e-4.
inline void expect_fast_matches_reference(PagedProblem& pb) {
  const Outcome ref = run_cpu(pb, CTXATTN_BACKEND_CPU_REFERENCE);
  ASSERT_EQ(ref.status, CTXATTN_STATUS_OK) << ref.error;
  EXPECT_EQ(ref.coverage, "");
  const Outcome fast = run_cpu(pb, CTXATTN_BACKEND_CPU);
  ASSERT_EQ(fast.status, CTXATTN_STATUS_OK) << fast.error;
  EXPECT_EQ(fast.coverage, "");
  const ProblemSpec& s = pb.spec();
  if (s.out_dtype == CTXATTN_DTYPE_NVFP4) {
    EXPECT_EQ(nvfp4_mismatches(fast.nvfp4, ref.nvfp4), 0);
  } else {
    const double atol = 1e-5 * std::fabs(pb.bmm2()) * s.input_scale;
    const Mismatch m = compare_ulps(pb, fast.out, ref.out, 1.0, atol);
    EXPECT_EQ(m.count, 0) << "worst " << m.worst << "x the bound at " << m.where;
  }
  if (s.with_lse) EXPECT_LE(lse_max_diff(pb, fast.lse, ref.lse), 1e-4);
}

// Sets CTXATTN_CPU_ISA for the lifetime of the object.
class ScopedIsa {
 public:
  explicit ScopedIsa(const char* isa) { setenv("CTXATTN_CPU_ISA", isa, 1); }
  ~ScopedIsa() { unsetenv("CTXATTN_CPU_ISA"); }
  ScopedIsa(const ScopedIsa&) = delete;
  ScopedIsa& operator=(const ScopedIsa&) = delete;
};

}  // namespace ctxattn_test
