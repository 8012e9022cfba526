// GPU tests of the Hopper backend at head dim 512 (the column-split kernel: sm90/traits.cuh
// kColSplit, kernel.cuh exchange_s): the CPU reference over what it serves, and what it leaves
// to the portable kernel. Skips without an sm90 GPU.
#include <gtest/gtest.h>

#if defined(CTXATTN_TEST_CUDA)

#include <cstdint>
#include <string>

#include "sm90_harness.h"

namespace ctxattn_test {
namespace {

// Case i of the D = 512 sweeps: pages of 1 to 128 tokens (gathered below 8), group sizes 1, 4, 5
// and 8, HND and NHD, the cache forms, separate K / V page ids, sinks, a window and a non-causal
// case (vary_features), a negative scale, scales by pointer, a request of 9000 keys over one KV
// head (split-KV: each warpgroup merges its own columns), 1024 rows of one request, skip-softmax's
// vote with a factor that skips nothing (the vote's rule at its geometry:
// tests/python/test_skip_softmax.py).
void vary_d512(ProblemSpec& spec, int i) {
  const int32_t pages[] = {16, 64, 8, 128, 32, 1, 4, 2};
  const int32_t heads[][2] = {{8, 2}, {5, 1}, {8, 1}, {4, 4}};
  spec.page_size = pages[i % 8];
  spec.num_qo_heads = heads[i % 4][0];
  spec.num_kv_heads = heads[i % 4][1];
  spec.kv_layout = i % 2 == 0 ? CTXATTN_KV_LAYOUT_HND : CTXATTN_KV_LAYOUT_NHD;
  vary_features(spec, i);
  spec.bmm1_scale = i == 9 ? -0.03f : 0.0f;
  spec.scale_pointers = i == 10;
  spec.bmm2_scale = i == 10 ? 0.75f : 1.0f;
  if (i == 11) {  // one KV head, few rows, 9000 keys: split-KV
    spec.num_qo_heads = 4;
    spec.num_kv_heads = 1;
    spec.q_lens = {40};
    spec.kv_lens = {9000};
  }
  if (i == 12) {  // one long request: 16 M tiles of a KV head, 32 key tiles on the diagonal's far side
    spec.num_qo_heads = 8;
    spec.num_kv_heads = 1;
    spec.q_lens = {1024};
    spec.kv_lens = {1024};
  }
  if (i % 5 == 3) spec.skip_factor = 1e-30f;
}

// Cases 0 .. cases - 1 of make(i) (a spec of the case's dtypes), varied by vary_d512: each served by
// the Hopper kernel and matching the CPU reference.
template <class Make>
void expect_d512_cases(int cases, Make&& make) {
  int served = 0;
  for (int i = 0; i < cases; ++i) {
    ProblemSpec spec = make(i);
    vary_d512(spec, i);
    SCOPED_TRACE("case " + std::to_string(i) + ", page size " + std::to_string(spec.page_size));
    expect_sm90_serves_and_matches(spec);
    ++served;
  }
  EXPECT_EQ(served, cases);
}

// bf16 and fp16 Q/K/V at D = 512 against the CPU reference (outputs NaN-poisoned, spare pages
// too), bf16 / e4m3 / nvfp4 outputs (each warpgroup encodes its 256 columns and their block
// scales), LSE (written by one warpgroup), over vary_d512's cases; AUTO picks the Hopper kernel.
TEST(CudaSm90, HeadDim512MatchesTheReference) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  const ctxattn_dtype_t outs[] = {CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_NVFP4};
  expect_d512_cases(14, [&](int i) {
    const ctxattn_dtype_t elem = (i / 2) % 2 == 0 ? CTXATTN_DTYPE_BFLOAT16 : CTXATTN_DTYPE_FLOAT16;
    return typed_spec(512, elem, elem, outs[i % 3]);
  });
}

// 16-bit and e4m3 queries over an e4m3 cache at D = 512 (the column-split kernel on fp16 stages the
// widener warps fill: traits.cuh kColSplitFp8; e4m3 queries widened as they are copied, bf16 ones
// converted with a power of two of each row and half: kernel.cuh exchange_s) against the CPU
// reference, bf16 / e4m3 / fp16 / nvfp4 outputs, over vary_d512's cases; AUTO picks the Hopper
// kernel. (e4m3 queries reach this kernel by default only for nvfp4 output: set here for all.)
TEST(CudaSm90, HeadDim512OverAnE4m3Cache) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  setenv("CTXATTN_SM90_FP8_MMA", "0", 1);
  const ctxattn_dtype_t queries[] = {CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3};
  const ctxattn_dtype_t outs[] = {CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT16,
                                  CTXATTN_DTYPE_NVFP4};
  expect_d512_cases(13, [&](int i) { return typed_spec(512, queries[i % 3], CTXATTN_DTYPE_FLOAT8_E4M3, outs[i % 4]); });
  unsetenv("CTXATTN_SM90_FP8_MMA");
}

// e4m3 Q, K and V at D = 512 on the FP8 tensor cores (the column-split kernel with e4m3 Q in
// registers, V^T of 32-byte rows: traits.cuh kColSplit, fp8_stage.cuh VTransposer) against the CPU
// reference with the SPEC's fp8 tolerances: bf16 / e4m3 / fp16 outputs (nvfp4 output, on the
// widened kernel, too), over vary_d512's cases (pages of 1 to 128, G 1 to 8, both layouts, sinks,
// window, non-causal, negative and pointer scales, split-KV over 9000 keys, 1024 rows, the vote);
// AUTO picks the Hopper kernel.
TEST(CudaSm90, HeadDim512E4m3OnFp8TensorCores) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  setenv("CTXATTN_SM90_FP8_MMA", "1", 1);  // the default; set whatever the environment says
  const ctxattn_dtype_t outs[] = {CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT16,
                                  CTXATTN_DTYPE_NVFP4};
  expect_d512_cases(16, [&](int i) {
    return typed_spec(512, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT8_E4M3, outs[i % 4]);
  });
  unsetenv("CTXATTN_SM90_FP8_MMA");
}

// NVFP4 caches at D = 512 (no kernel on either GPU backend; the CPU backend runs them): refused
// by name when forced, output untouched, and AUTO does not pick the Hopper kernel.
TEST(CudaSm90, HeadDim512RefusesWhatItDoesNotServe) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  const char* names[] = {"e4m3 over NVFP4", "bf16 over NVFP4"};
  for (int refused = 0; refused < 2; ++refused) {
    const ctxattn_dtype_t q = refused == 0 ? CTXATTN_DTYPE_FLOAT8_E4M3 : CTXATTN_DTYPE_BFLOAT16;
    ProblemSpec spec = typed_spec(512, q, CTXATTN_DTYPE_NVFP4, CTXATTN_DTYPE_BFLOAT16);
    SCOPED_TRACE(names[refused]);
    PagedProblem forced(spec);
    forced.poison_outputs();
    DeviceProblem dev(forced);
    ASSERT_TRUE(dev.ok());
    dev.args.backend = CTXATTN_BACKEND_CUDA_SM90;
    EXPECT_EQ(dev.run(), CTXATTN_STATUS_UNSUPPORTED);
    const std::string message = ctxattn_last_error();
    EXPECT_NE(message.find("head_dim"), std::string::npos) << message;
    ASSERT_TRUE(dev.download());
    for (uint8_t byte : forced.out) ASSERT_EQ(byte, 0xFF) << "a refused call wrote its output";
    dev.args.backend = CTXATTN_BACKEND_AUTO;
    ctxattn_backend_t chosen = CTXATTN_BACKEND_AUTO;
    const ctxattn_status_t st = ctxattn_select_backend(&dev.args, &chosen);
    EXPECT_TRUE(st != CTXATTN_STATUS_OK || chosen != CTXATTN_BACKEND_CUDA_SM90);
  }
}

}  // namespace
}  // namespace ctxattn_test

#endif  // CTXATTN_TEST_CUDA
