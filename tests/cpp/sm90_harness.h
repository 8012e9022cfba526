// Helpers of the Hopper backend's GPU tests (test_cuda_sm90*.cpp): whether an sm90 GPU is
// present, the base problem, the checks of a call forced onto the Hopper kernel, and the
// one-key problem whose output is V itself (exact-widening tests).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "cuda_harness.h"

namespace ctxattn_test {

inline bool hopper_present() {
  if (!gpu_present()) return false;
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0) != cudaSuccess) return false;
  return major == 9 && minor == 0;
}

inline ProblemSpec base_spec() {
  ProblemSpec s;
  s.q_lens = {37, 1, 90};
  s.kv_lens = {300, 129, 90};
  s.num_qo_heads = 8;
  s.num_kv_heads = 2;
  s.head_dim = 128;
  s.page_size = 16;
  s.with_lse = true;
  return s;
}

// base_spec at another head dim and dtypes.
inline ProblemSpec typed_spec(int head_dim, ctxattn_dtype_t q, ctxattn_dtype_t kv, ctxattn_dtype_t out) {
  ProblemSpec s = base_spec();
  s.head_dim = head_dim;
  s.q_dtype = q;
  s.kv_dtype = kv;
  s.out_dtype = out;
  return s;
}

// Case i of a feature sweep: the cache form, separate K / V page ids, lengths with an empty
// request, sinks, a window and one non-causal case, cycling with i.
inline void vary_features(ProblemSpec& spec, int i) {
  spec.kv_form = static_cast<KvForm>(i % 3);
  spec.separate_kv_idx = i % 5 == 1;
  spec.q_lens = {37, 1, 130, 0};
  spec.kv_lens = {300, 129, 1030, 17};
  spec.with_sinks = i % 4 == 2;
  spec.window_left = i % 6 == 3 ? 200 : -1;
  spec.causal = i != 7;
}

// `spec` on the Hopper kernel against the CPU reference: AUTO must choose `auto_choice` (the
// Hopper kernel, unless the dispatch policy sends the call elsewhere), the outputs (NaN-poisoned
// first) must be within the SPEC's tolerances, and rows outside every request untouched.
inline void expect_sm90_serves_and_matches(const ProblemSpec& spec,
                                           ctxattn_backend_t auto_choice = CTXATTN_BACKEND_CUDA_SM90) {
  PagedProblem want(spec);
  ASSERT_EQ(run_cpu_reference(want), CTXATTN_STATUS_OK) << ctxattn_last_error();
  PagedProblem got(spec);
  got.poison_outputs();
  DeviceProblem dev(got);
  ASSERT_TRUE(dev.ok());
  dev.args.backend = CTXATTN_BACKEND_AUTO;
  ctxattn_backend_t chosen = CTXATTN_BACKEND_AUTO;
  ASSERT_EQ(ctxattn_select_backend(&dev.args, &chosen), CTXATTN_STATUS_OK) << ctxattn_last_error();
  EXPECT_EQ(chosen, auto_choice) << ctxattn_backend_name(chosen);
  dev.args.backend = CTXATTN_BACKEND_CUDA_SM90;
  ASSERT_TRUE(dev.fit_workspace());  // sized for the Hopper kernel's split partials (D = 512: its own)
  ASSERT_EQ(dev.run(), CTXATTN_STATUS_OK) << ctxattn_last_error();
  ASSERT_TRUE(dev.download());
  const std::string diff = compare_outputs(got, want);
  EXPECT_TRUE(diff.empty()) << diff;
  EXPECT_EQ(untouched_outside_rows(got), "");
}

// `forced` (its outputs poisoned before `dev` was made from it) refused by the Hopper kernel:
// UNSUPPORTED with a message that names `argument`, nothing written (rows outside every request
// included), and AUTO answers the call with the portable kernel. `dev` is left on AUTO, so a caller
// may run the call through it.
inline void expect_sm90_refuses(PagedProblem& forced, DeviceProblem& dev, const std::string& argument) {
  dev.args.backend = CTXATTN_BACKEND_CUDA_SM90;
  EXPECT_EQ(dev.run(), CTXATTN_STATUS_UNSUPPORTED);
  const std::string message = ctxattn_last_error();
  EXPECT_NE(message.find(argument), std::string::npos) << message;
  ASSERT_TRUE(dev.download());
  EXPECT_EQ(untouched_outside_rows(forced), "");
  for (uint8_t byte : forced.out) ASSERT_EQ(byte, 0xFF) << "a refused call wrote its output";
  dev.args.backend = CTXATTN_BACKEND_AUTO;
  ctxattn_backend_t chosen = CTXATTN_BACKEND_AUTO;
  ASSERT_EQ(ctxattn_select_backend(&dev.args, &chosen), CTXATTN_STATUS_OK) << ctxattn_last_error();
  EXPECT_EQ(chosen, CTXATTN_BACKEND_CUDA_PORTABLE);
}

// `pb` on the Hopper kernel, forced (outputs NaN-poisoned first), its outputs downloaded into it.
inline void run_forced_sm90(PagedProblem& pb) {
  pb.poison_outputs();
  DeviceProblem dev(pb);
  ASSERT_TRUE(dev.ok());
  dev.args.backend = CTXATTN_BACKEND_CUDA_SM90;
  ASSERT_TRUE(dev.fit_workspace());
  ASSERT_EQ(dev.run(), CTXATTN_STATUS_OK) << ctxattn_last_error();
  ASSERT_TRUE(dev.download());
}

// One query over one key (P = 1: the output is bmm2_scale * V = V), two KV heads at D = 128 (HND).
inline ProblemSpec one_key_spec(ctxattn_dtype_t q, ctxattn_dtype_t kv, ctxattn_dtype_t out) {
  ProblemSpec spec;
  spec.q_lens = {1};
  spec.kv_lens = {1};
  spec.num_qo_heads = 2;
  spec.num_kv_heads = 2;
  spec.head_dim = 128;
  spec.page_size = 16;
  spec.kv_layout = CTXATTN_KV_LAYOUT_HND;
  spec.q_dtype = q;
  spec.kv_dtype = kv;
  spec.out_dtype = out;
  return spec;
}

// one_key_spec's output against its V, element by element (V's value as the problem decodes it):
// how many of the 2 x 128 are equal. Zeros compare by value (the output is a sum, 0 + -0 = +0,
// so it cannot show a zero's sign); NaN must stay NaN.
inline int outputs_equal_to_v(const PagedProblem& got) {
  int exact = 0;
  for (int32_t g = 0; g < 2; ++g) {
    for (int32_t d = 0; d < 128; ++d) {
      const float want = got.v(0, 0, g, d);
      const float have = got.out_value(0, g, d);
      const bool same = std::isnan(want) ? std::isnan(have) : have == want;
      EXPECT_TRUE(same) << "KV head " << g << ", d " << d << ": want " << want << ", got " << have;
      exact += same;
    }
  }
  return exact;
}

}  // namespace ctxattn_test
