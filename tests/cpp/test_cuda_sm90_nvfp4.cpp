// GPU tests of the Hopper backend's NVFP4-KV kernel (sm90/fp8_stage.cuh Nvfp4Widener, hopper.cpp
// make_scale_map): the exact decode of every code and scale, the CPU reference over the forms it
// serves, and what it leaves to the portable kernel. Skips without an sm90 GPU.
#include <gtest/gtest.h>

#if defined(CTXATTN_TEST_CUDA)

#include <cstdint>
#include <string>

#include "sm90_harness.h"

namespace ctxattn_test {
namespace {

// NVFP4 V decoded on the Hopper kernel (producer warps: codes times block scales, times 2^-14,
// which the kernel's scales undo): one query over one key returns V itself, so every e2m1 code
// under scales from e4m3's smallest subnormal to its largest value must come out exactly, in fp16
// and bf16 outputs (e4m3, fp16 and bf16 queries).
TEST(CudaSm90, EveryNvfp4CodeAndScaleDecodesExactly) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  const uint8_t scales[2][8] = {{0x01, 0x07, 0x08, 0x38, 0x7e, 0x35, 0x4b, 0x12},
                                {0x66, 0x40, 0x02, 0x3f, 0x77, 0x20, 0x5a, 0x09}};
  for (ctxattn_dtype_t q : {CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_BFLOAT16}) {
    const ProblemSpec spec =
        one_key_spec(q, CTXATTN_DTYPE_NVFP4, q == CTXATTN_DTYPE_FLOAT16 ? q : CTXATTN_DTYPE_BFLOAT16);
    SCOPED_TRACE("q=" + std::to_string(q));
    PagedProblem got(spec);
    const int64_t page = got.block_tables[0];
    for (int32_t g = 0; g < 2; ++g) {
      for (int32_t d = 0; d < 128; d += 2) {  // element d: code d % 16 (head 1: reversed)
        const int lo = g == 0 ? d % 16 : 15 - d % 16, hi = g == 0 ? (d + 1) % 16 : 15 - (d + 1) % 16;
        got.v_cache[page * got.args.v_strides[0] + g * got.args.v_strides[1] + d / 2] = static_cast<uint8_t>(lo | hi << 4);
      }
      for (int32_t s = 0; s < 8; ++s) {
        const ctxattn::ScaleSlot at = ctxattn::nvfp4_v_scale_slot(0, s, 8);
        got.v_cache_sf[page * got.args.v_sf_strides[0] + g * got.args.v_sf_strides[1] + at.slot * got.args.v_sf_strides[2] +
                       at.block] = scales[g][s];
      }
    }
    ASSERT_NO_FATAL_FAILURE(run_forced_sm90(got));
    EXPECT_EQ(outputs_equal_to_v(got), 256);
  }
}

// NVFP4 KV on the Hopper kernel against the CPU reference (SPEC 8.1 tolerances): e4m3, fp16 and
// bf16 queries, head dims 128 and 256 (where a widener thread's rows step by 6, across V's 4-token
// scale groups), every output kind, pages of 16 to 128, the three cache forms, separate K / V page
// ids, sinks, a window, LSE, NaN-poisoned spare pages and unused scale bytes; AUTO picks the Hopper
// kernel; a request of 9000 keys over one KV head splits. NHD scales (tiles not contiguous) and
// pages under 2048 / D tokens (TMA destinations of scales under 128-byte aligned) are refused by
// name and left to the portable kernel.
TEST(CudaSm90, Nvfp4KvMatchesTheReference) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  int served = 0;
  const ctxattn_dtype_t qs[] = {CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_BFLOAT16};
  const ctxattn_dtype_t outs[] = {CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT16,
                                  CTXATTN_DTYPE_NVFP4};
  const int32_t pages[] = {16, 32, 64, 128};
  for (int i = 0; i < 12; ++i) {
    ProblemSpec spec = base_spec();
    spec.q_dtype = qs[i % 3];
    spec.kv_dtype = CTXATTN_DTYPE_NVFP4;
    spec.out_dtype = outs[i % 4];
    spec.kv_layout = CTXATTN_KV_LAYOUT_HND;
    spec.page_size = pages[i % 4];
    if (i % 3 == 1) spec.head_dim = 256;
    vary_features(spec, i);
    if (i == 11) {  // one KV head, few rows, 9000 keys: split-KV
      spec.num_qo_heads = 4;
      spec.num_kv_heads = 1;
      spec.q_lens = {40};
      spec.kv_lens = {9000};
    }
    SCOPED_TRACE("case " + std::to_string(i));
    expect_sm90_serves_and_matches(spec);
    ++served;
  }
  EXPECT_EQ(served, 12);
  const char* names[] = {"NHD scales", "pages of 8", "pages of 4 at D = 256"};
  const char* arguments[] = {"kv_cache_sf", "page_size", "page_size"};
  for (int refused = 0; refused < 3; ++refused) {
    ProblemSpec spec = base_spec();
    if (refused == 2) spec.head_dim = 256;
    spec.q_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
    spec.kv_dtype = CTXATTN_DTYPE_NVFP4;
    spec.out_dtype = CTXATTN_DTYPE_BFLOAT16;
    spec.kv_layout = refused == 0 ? CTXATTN_KV_LAYOUT_NHD : CTXATTN_KV_LAYOUT_HND;
    spec.page_size = refused == 1 ? 8 : refused == 2 ? 4 : 16;
    SCOPED_TRACE(names[refused]);
    PagedProblem forced(spec);
    forced.poison_outputs();
    DeviceProblem dev(forced);
    ASSERT_TRUE(dev.ok());
    expect_sm90_refuses(forced, dev, arguments[refused]);
  }
}

}  // namespace
}  // namespace ctxattn_test

#endif  // CTXATTN_TEST_CUDA
