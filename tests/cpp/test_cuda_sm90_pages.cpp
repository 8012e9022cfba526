// GPU tests of the Hopper backend on pages of 1, 2 and 4 tokens, which its producer gathers with
// cp.async (sm90/load.cuh KvProducer::gather; the layout arithmetic has a host test,
// test_sm90_gather_layout.cpp). Skips without an sm90 GPU.
#include <gtest/gtest.h>

#if defined(CTXATTN_TEST_CUDA)

#include <cstdlib>
#include <string>
#include <vector>

#include "sm90_harness.h"

namespace ctxattn_test {
namespace {

// Pages of 1, 2 and 4 tokens, gathered by the producer warp with cp.async into the layouts its
// TMA boxes make (sm90/load.cuh KvProducer::gather), on every kernel family: 16-bit at D = 64 /
// 128 / 256, bf16 queries over an e4m3 cache (the raw tile the wideners read), e4m3 Q/K/V on FP8
// WGMMA at D = 64 (the 64-byte swizzle) / 128 (both tile forms: a request of 4096+ keys takes the
// 192-key tiles) / 256 (nvfp4 output: the two-term kernel); NHD and HND, the one-tensor form,
// padded token rows and a page stride that is no multiple of the head stride (which the TMA maps
// refuse: gathered pages take any), sinks, a window, a split call (short queries over 8192+ keys)
// and a grid of 5 CTAs. Forced by name; AUTO takes the sm90 kernel for such pages with an e4m3
// operand or at D = 256 and leaves 16-bit D = 64 and 128 to the portable kernel (core/dispatch.h).
TEST(CudaSm90, SmallPagesAreGatheredOnEveryKernelFamily) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  struct Case {
    int head_dim;
    ctxattn_dtype_t q, kv, out;
    int32_t page_size;
    const char* what;
    void (*edit)(ProblemSpec&);
    ctxattn_backend_t auto_choice = CTXATTN_BACKEND_CUDA_PORTABLE;
  };
  const auto none = [](ProblemSpec&) {};
  const std::vector<Case> cases = {
      {128, CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_BFLOAT16, 1, "HND", none},
      {64, CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_FLOAT16, 2, "NHD one tensor, sinks, window",
       [](ProblemSpec& s) {
         s.kv_layout = CTXATTN_KV_LAYOUT_NHD;
         s.kv_form = KvForm::kOneTensor;
         s.with_sinks = true;
         s.window_left = 70;
       }},
      {256, CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_BFLOAT16, 4, "padded rows and pages",
       [](ProblemSpec& s) {
         s.kv_pad = 8;
         s.page_pad = 8;
       },
       CTXATTN_BACKEND_CUDA_SM90},
      {128, CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_BFLOAT16, 2, "e4m3 cache", none,
       CTXATTN_BACKEND_CUDA_SM90},
      {64, CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT8_E4M3, 4, "e4m3 cache, NHD",
       [](ProblemSpec& s) { s.kv_layout = CTXATTN_KV_LAYOUT_NHD; }, CTXATTN_BACKEND_CUDA_SM90},
      {64, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_BFLOAT16, 1, "FP8 WGMMA", none,
       CTXATTN_BACKEND_CUDA_SM90},
      {128, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT16, 4, "FP8 WGMMA, both forms",
       [](ProblemSpec& s) {
         s.q_lens = {37, 70};
         s.kv_lens = {300, 4200};
       },
       CTXATTN_BACKEND_CUDA_SM90},
      {256, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_NVFP4, 2, "FP8 WGMMA, nvfp4", none,
       CTXATTN_BACKEND_CUDA_SM90},
      {128, CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_BFLOAT16, 4, "split",
       [](ProblemSpec& s) {
         s.q_lens = {16, 3};
         s.kv_lens = {9000, 8300};
       }},
      {128, CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_FLOAT16, 1, "grid of 5 CTAs, long KV",
       [](ProblemSpec& s) {
         s.q_lens = {37, 0, 150};
         s.kv_lens = {1500, 40, 1100};
         setenv("CTXATTN_SM90_GRID_CTAS", "5", 1);
       }},
  };
  for (const Case& c : cases) {
    ProblemSpec spec = typed_spec(c.head_dim, c.q, c.kv, c.out);
    spec.page_size = c.page_size;  // with base_spec's NaN-poisoned spare pages
    c.edit(spec);
    SCOPED_TRACE(std::string(c.what) + ": D=" + std::to_string(c.head_dim) + " page " + std::to_string(c.page_size));
    expect_sm90_serves_and_matches(spec, c.auto_choice);
    unsetenv("CTXATTN_SM90_GRID_CTAS");
  }
}

}  // namespace
}  // namespace ctxattn_test

#endif  // CTXATTN_TEST_CUDA
