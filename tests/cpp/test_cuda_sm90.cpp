// GPU tests of the Hopper backend's edges (the rest of the GPU suite runs against it through
// CTXATTN_TEST_BACKEND=cuda_sm90): what it refuses, forced by name, is UNSUPPORTED with the reason,
// never a wrong answer; AUTO sends those calls to the portable backend, which answers them right.
// Skips without an sm90 GPU.
#include <gtest/gtest.h>

#if defined(CTXATTN_TEST_CUDA)

#include <cuda_runtime.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/common/workspace.h"
#include "sm90_harness.h"

namespace ctxattn_test {
namespace {

struct Refusal {
  const char* what;
  const char* argument;  // the message must name it
  void (*edit)(ProblemSpec&);
};

TEST(CudaSm90, RefusesWhatItDoesNotServeAndAutoAnswersIt) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  const std::vector<Refusal> refusals = {
      // The 16-bit kernels at D >= 128 number (page, KV head) pairs as one TMA coordinate
      // (hopper.cpp pool_units): 8 elements after each page break page = k * head stride.
      {"a page stride that is no multiple of the head stride", "kv_cache", [](ProblemSpec& s) { s.page_pad = 8; }},
  };
  for (const Refusal& r : refusals) {
    SCOPED_TRACE(r.what);
    ProblemSpec spec = base_spec();
    r.edit(spec);
    PagedProblem want(spec);
    ASSERT_EQ(run_cpu_reference(want), CTXATTN_STATUS_OK) << ctxattn_last_error();

    PagedProblem forced(spec);
    forced.poison_outputs();
    DeviceProblem dev(forced);
    ASSERT_TRUE(dev.ok());
    expect_sm90_refuses(forced, dev, r.argument);
    if (HasFatalFailure()) return;
    ASSERT_EQ(dev.run(), CTXATTN_STATUS_OK) << ctxattn_last_error();
    ASSERT_TRUE(dev.download());
    const std::string diff = compare_outputs(forced, want);
    EXPECT_TRUE(diff.empty()) << diff;
  }
}

// e4m3 K/V under fp16 and bf16 queries on the Hopper kernel (widened to 16 bits in shared
// memory): against the CPU reference with the SPEC's fp8 tolerances, every output kind, odd
// lengths, pages of 8 to 64, NaN-poisoned spare pages; AUTO picks the Hopper kernel for them.
TEST(CudaSm90, E4m3KvUnderSixteenBitQueriesMatchesTheReference) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  int served = 0;
  for (int head_dim : {64, 128, 256}) {
    for (ctxattn_dtype_t q : {CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_FLOAT16}) {
      for (ctxattn_dtype_t out : {CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_NVFP4}) {
        ProblemSpec spec = base_spec();
        spec.head_dim = head_dim;
        spec.q_dtype = q;
        spec.kv_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
        spec.out_dtype = out == CTXATTN_DTYPE_BFLOAT16 ? q : out;
        spec.page_size = head_dim == 64 ? 8 : head_dim == 128 ? 16 : 64;
        spec.q_lens = {37, 1, 130, 0};
        spec.kv_lens = {300, 129, 130, 17};
        spec.with_sinks = head_dim == 128;
        spec.causal = head_dim != 256;
        SCOPED_TRACE("D=" + std::to_string(head_dim) + " q=" + std::to_string(q) + " out=" + std::to_string(out));
        expect_sm90_serves_and_matches(spec);
        ++served;
      }
    }
  }
  EXPECT_EQ(served, 18);
}

// e4m3 queries over an e4m3 cache on the Hopper kernel (the fp16 kernel: Q widened exactly as it
// is copied in): every output kind, head dims 64 / 128 / 256, sinks, a sliding window, a negative
// bmm1_scale (Q negated), scales by pointer, padded query rows, NaN-poisoned spare pages.
TEST(CudaSm90, E4m3QueriesAndKvMatchTheReference) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  setenv("CTXATTN_SM90_FP8_MMA", "0", 1);  // the widened kernel at every head dim
  int served = 0;
  for (int head_dim : {64, 128, 256}) {
    for (ctxattn_dtype_t out :
         {CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_NVFP4}) {
      ProblemSpec spec = base_spec();
      spec.head_dim = head_dim;
      spec.q_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
      spec.kv_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
      spec.out_dtype = out;
      spec.page_size = head_dim == 64 ? 8 : head_dim == 128 ? 16 : 64;
      spec.q_lens = {37, 1, 130, 0};
      spec.kv_lens = {300, 129, 130, 17};
      spec.with_sinks = out == CTXATTN_DTYPE_BFLOAT16;
      spec.window_left = out == CTXATTN_DTYPE_FLOAT16 ? 300 : -1;
      spec.bmm1_scale = out == CTXATTN_DTYPE_FLOAT8_E4M3 ? -0.05f : 0.0f;
      spec.scale_pointers = out == CTXATTN_DTYPE_NVFP4;
      spec.q_pad = head_dim == 128 ? 16 : 0;  // 16 codes: rows stay 16-byte aligned
      SCOPED_TRACE("D=" + std::to_string(head_dim) + " out=" + std::to_string(out));
      expect_sm90_serves_and_matches(spec);
      ++served;
    }
  }
  unsetenv("CTXATTN_SM90_FP8_MMA");
  EXPECT_EQ(served, 12);
}

// bf16 queries over an e4m3 cache run on fp16 WGMMA, Q converted with a power of two of each row
// (load.cuh; at D = 512 a power of two of each row's half: kernel.cuh exchange_s): rows from 2^-60 to 2^20 times N(0, 1), mixed in every warp's 16 rows, must each keep
// their own precision (a 2^20 row overflows fp16 unscaled), and an infinity and a NaN must stay in
// their rows (cuda_harness.h query_magnitude_differences). The range stops at 2^20: rows of 2^40
// and more give NaN on every sm90 kernel, the 16-bit ones too (scores past ~2^24:
// docs/perf.md, v11).
TEST(CudaSm90, Bf16QueriesOfEveryMagnitudeOverAnE4m3Cache) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  for (int head_dim : {64, 128, 256, 512}) {
    ProblemSpec spec = base_spec();
    spec.head_dim = head_dim;
    spec.out_dtype = CTXATTN_DTYPE_BFLOAT16;
    spec.kv_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
    spec.q_lens = {37, 130};
    spec.kv_lens = {300, 130};
    SCOPED_TRACE("D=" + std::to_string(head_dim));
    EXPECT_EQ(query_magnitude_differences(spec, CTXATTN_BACKEND_CUDA_SM90, 20), "");
  }
}

// Every one of the 256 e4m3 codes, widened on the Hopper kernel, comes out exactly: one query
// over one key (P = 1, the output is bmm2_scale * V = V), V of KV head g holding codes
// g * 128 + d: every finite code, subnormals included, keeps its value, and the NaN codes
// 0x7f / 0xff stay NaN.
TEST(CudaSm90, EveryE4m3CodeWidensExactly) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  for (ctxattn_dtype_t q : {CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_FLOAT16}) {
    const ProblemSpec spec = one_key_spec(q, CTXATTN_DTYPE_FLOAT8_E4M3, q);
    SCOPED_TRACE("q=" + std::to_string(q));
    PagedProblem got(spec);
    const int64_t page = got.block_tables[0];
    for (int32_t g = 0; g < 2; ++g) {
      for (int32_t d = 0; d < 128; ++d) {
        got.v_cache[page * got.args.v_strides[0] + g * got.args.v_strides[1] + d] = static_cast<uint8_t>(g * 128 + d);
      }
    }
    ASSERT_NO_FATAL_FAILURE(run_forced_sm90(got));
    EXPECT_EQ(outputs_equal_to_v(got), 256);
  }
}

// e4m3 Q, K and V on the FP8 tensor cores (P quantised to e4m3, V transposed with permuted keys):
// against the CPU reference with the SPEC's fp8 tolerances, head dims 64, 128 and 256, every output
// kind, odd lengths, causal and not, sinks, pages of 8 to 64, NaN-poisoned spare pages, a
// negative bmm1_scale; AUTO picks the Hopper kernel for them.
TEST(CudaSm90, E4m3QueriesAndKvOnFp8TensorCoresMatchTheReference) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  // FP8 WGMMA is the default for these head dims (hopper.cpp fp8_mma); set it whatever the
  // environment says.
  setenv("CTXATTN_SM90_FP8_MMA", "1", 1);
  int served = 0;
  for (int head_dim : {64, 128, 256}) {
    for (ctxattn_dtype_t out : {CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3,
                                CTXATTN_DTYPE_NVFP4}) {
      ProblemSpec spec = base_spec();
      spec.head_dim = head_dim;
      spec.q_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
      spec.kv_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
      spec.out_dtype = out;
      spec.page_size = out == CTXATTN_DTYPE_FLOAT16 ? 8 : head_dim == 128 ? 16 : 64;
      spec.q_lens = {37, 1, 130, 0, 257};
      spec.kv_lens = {300, 129, 130, 17, 400};
      spec.with_sinks = out == CTXATTN_DTYPE_BFLOAT16;
      spec.causal = out != CTXATTN_DTYPE_FLOAT8_E4M3;
      if (out == CTXATTN_DTYPE_FLOAT16) spec.bmm1_scale = -0.07f;
      SCOPED_TRACE("D=" + std::to_string(head_dim) + " out=" + std::to_string(out));
      expect_sm90_serves_and_matches(spec);
      ++served;
    }
  }
  unsetenv("CTXATTN_SM90_FP8_MMA");
  EXPECT_EQ(served, 12);
}

// Fewer CTAs than work items: each CTA walks several, striped (calls over short keys, split calls,
// the FP8 D = 128 kernel) or drawn from the scheduler's counter (the other calls over long keys;
// empty items skipped a request at a time),
// its K/V pipeline, row tables, Q / staging region and split counters carried into its next
// item. CTXATTN_SM90_GRID_CTAS caps the grid: 1 and 5 CTAs over 18+ items, on every kernel family
// (16-bit, e4m3 KV widened, e4m3 Q/K/V on FP8 WGMMA), with sinks, a window, a negative
// bmm1_scale, every output kind, calls over keys past 1024 (the scheduler's walk, and the static
// one of the FP8 D = 128 kernel) and a split call (short queries over a long KV).
TEST(CudaSm90, PersistentGridMatchesTheReference) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  enum Keys { kShort, kLong, kSplit };
  struct Case {
    int head_dim;
    ctxattn_dtype_t q, kv, out;
    Keys keys;
  };
  const std::vector<Case> cases = {
      {128, CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_BFLOAT16, kShort},
      {64, CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3, kShort},
      {256, CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_NVFP4, kShort},
      {128, CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT16, kShort},
      {128, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_BFLOAT16, kShort},
      {256, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT8_E4M3, kShort},
      {64, CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3, kLong},
      {128, CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_BFLOAT16, kLong},
      {128, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_NVFP4, kLong},
      {128, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT16, kLong},
      {256, CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_BFLOAT16, kLong},
      {128, CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_BFLOAT16, kSplit},
  };
  for (const char* cap : {"1", "5"}) {
    setenv("CTXATTN_SM90_GRID_CTAS", cap, 1);
    for (const Case& c : cases) {
      ProblemSpec spec = typed_spec(c.head_dim, c.q, c.kv, c.out);
      spec.page_size = c.head_dim == 256 ? 64 : 16;
      spec.with_sinks = c.head_dim == 64;
      spec.window_left = c.head_dim == 64 ? 100 : -1;
      if (c.head_dim == 64) spec.bmm1_scale = -0.06f;   // Q negated as it lands
      if (c.keys == kLong) {
        spec.q_lens = {37, 0, 150};
        spec.kv_lens = {1500, 40, 1100};  // past 1024 keys (scheduler.cuh kPersistentMaxKv)
      } else if (c.keys == kSplit) {
        spec.q_lens = {16, 3};
        spec.kv_lens = {9000, 8300};  // 8192+ keys: the call splits (split_policy.h)
      }
      SCOPED_TRACE(std::string("grid ") + cap + " D=" + std::to_string(c.head_dim) + " q=" + std::to_string(c.q) +
                   " kv=" + std::to_string(c.kv) + " out=" + std::to_string(c.out) +
                   (c.keys == kLong ? " long KV" : c.keys == kSplit ? " split" : ""));
      expect_sm90_serves_and_matches(spec);
    }
  }
  unsetenv("CTXATTN_SM90_GRID_CTAS");
}

// The one-term e4m3 Q/K/V kernel at D = 128 runs as two forms (sm90/traits.cuh kTake): requests
// of fewer than 4096 keys on 128-key tiles, the others on 192-key tiles with TMA boxes of at most
// 64 rows. Calls that mix both, on every page size (boxes of 8 to 64 rows; pages of 128 and 256
// tokens read through the long form's own maps), with requests on both sides of the threshold
// and of a 192-key tile (4095 / 4096, 4224 = 22 tiles, 4225 one key past), a request of one row,
// sinks, a window, e4m3 output, a non-causal call, and a call whose long requests split.
TEST(CudaSm90, E4m3TileFormsByRequestLengthOverEveryPageSize) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  setenv("CTXATTN_SM90_FP8_MMA", "1", 1);
  for (int page_size : {8, 16, 32, 64, 128, 256}) {
    ProblemSpec spec = base_spec();
    spec.q_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
    spec.kv_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
    spec.page_size = page_size;
    spec.q_lens = {191, 1, 64, 65, 300, 100};
    spec.kv_lens = {4287, 4096, 4224, 4225, 300, 4095};
    spec.with_sinks = page_size == 16;
    if (page_size == 64) spec.window_left = 300;
    if (page_size == 32) spec.out_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
    if (page_size == 128) spec.causal = false;
    SCOPED_TRACE("page size " + std::to_string(page_size));
    expect_sm90_serves_and_matches(spec);
  }
  ProblemSpec split = base_spec();
  split.q_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
  split.kv_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
  split.page_size = 64;
  split.q_lens = {16, 3, 40};
  split.kv_lens = {9000, 8300, 1000};  // 8192+ keys: the long requests split (split_policy.h)
  SCOPED_TRACE("split call");
  expect_sm90_serves_and_matches(split);
  unsetenv("CTXATTN_SM90_FP8_MMA");
}

// A request's outputs do not depend on the batch around it: each request of a mixed call (one
// short, one long, one long enough to split), run alone as a batch of one (the metadata pointers
// moved to it, max_q_len and max_kv_len its own, so that it takes one form, a different grid and
// walk), writes the same bits as in the batch.
TEST(CudaSm90, E4m3RequestBitsDoNotDependOnItsBatch) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  setenv("CTXATTN_SM90_FP8_MMA", "1", 1);
  ProblemSpec spec = base_spec();
  spec.q_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
  spec.kv_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
  spec.page_size = 64;
  spec.q_lens = {300, 700, 2};
  spec.kv_lens = {300, 5000, 9000};
  expect_sm90_serves_and_matches(spec);
  PagedProblem pb(spec);
  DeviceProblem dev(pb);
  ASSERT_TRUE(dev.ok());
  dev.args.backend = CTXATTN_BACKEND_CUDA_SM90;
  ASSERT_EQ(dev.run(), CTXATTN_STATUS_OK) << ctxattn_last_error();
  ASSERT_TRUE(dev.download());
  auto bits = [](float x) {
    uint32_t u;
    std::memcpy(&u, &x, sizeof(u));
    return u;
  };
  // The batch's bits of every request, before any run alone overwrites the host copy.
  std::vector<std::vector<uint32_t>> batch(pb.batch_size());
  for (int32_t b = 0; b < pb.batch_size(); ++b) {
    for (int64_t t = pb.q_begin(b); t < pb.q_begin(b + 1); ++t) {
      for (int32_t h = 0; h < spec.num_qo_heads; ++h) {
        for (int32_t d = 0; d < spec.head_dim; ++d) batch[b].push_back(bits(pb.out_value(t, h, d)));
        batch[b].push_back(bits(pb.lse_value(t, h)));
      }
    }
  }
  const ctxattn_args_t whole = dev.args;
  for (int32_t b = 0; b < pb.batch_size(); ++b) {
    SCOPED_TRACE("request " + std::to_string(b));
    const std::vector<uint32_t>& want = batch[b];
    pb.poison_outputs();
    ASSERT_TRUE(dev.upload(pb));
    dev.args = whole;
    dev.args.batch_size = 1;
    dev.args.max_q_len = spec.q_lens[b];
    dev.args.max_kv_len = spec.kv_lens[b];
    dev.args.block_tables = whole.block_tables + b * whole.block_tables_stride;
    dev.args.seq_lens = static_cast<const int32_t*>(whole.seq_lens) + b;
    dev.args.cum_seq_lens_q = whole.cum_seq_lens_q + b;
    dev.args.cum_seq_lens_kv = whole.cum_seq_lens_kv + b;
    ASSERT_EQ(dev.run(), CTXATTN_STATUS_OK) << ctxattn_last_error();
    ASSERT_TRUE(dev.download());
    size_t i = 0, differ = 0;
    for (int64_t t = pb.q_begin(b); t < pb.q_begin(b + 1); ++t) {
      for (int32_t h = 0; h < spec.num_qo_heads; ++h) {
        for (int32_t d = 0; d < spec.head_dim; ++d) differ += bits(pb.out_value(t, h, d)) != want[i++];
        differ += bits(pb.lse_value(t, h)) != want[i++];
      }
    }
    EXPECT_EQ(i, want.size());
    EXPECT_EQ(differ, 0u) << "of " << want.size() << " values";
  }
  unsetenv("CTXATTN_SM90_FP8_MMA");
}

// The scheduler's counters (workspace header, sm90/scheduler.cuh) are zero again after every
// call, whatever the grid, so that the next call and a graph replay start from the first item;
// reruns are bitwise identical although CTAs take different items; a batch with an empty request
// and requests of one row (runs of empty items to skip) matches the reference.
TEST(CudaSm90, SchedulerCountersReturnToZero) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  for (const char* cap : {"", "1", "7"}) {
    if (*cap) setenv("CTXATTN_SM90_GRID_CTAS", cap, 1);
    ProblemSpec spec = base_spec();
    spec.q_lens = {1, 0, 200, 1, 57};
    spec.kv_lens = {700, 33, 200, 1, 4000};
    SCOPED_TRACE(std::string("grid cap '") + cap + "'");
    expect_sm90_serves_and_matches(spec);
    PagedProblem pb(spec);
    DeviceProblem dev(pb);
    ASSERT_TRUE(dev.ok());
    dev.args.backend = CTXATTN_BACKEND_CUDA_SM90;
    EXPECT_EQ(rerun_differences(dev, pb, 4), "");
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    unsigned int counters[2] = {1u, 1u};  // sm90/scheduler.cuh SchedulerCounters
    const char* header = static_cast<const char*>(dev.args.workspace);
    ASSERT_EQ(cudaMemcpy(counters, header + ctxattn::kSchedulerOffset, sizeof(counters), cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(counters[0], 0u);
    EXPECT_EQ(counters[1], 0u);
    unsetenv("CTXATTN_SM90_GRID_CTAS");
  }
}

// Q by TMA (16-bit or e4m3 queries over a cache of their type at D = 128, G dividing 64, in the
// kernels of short requests: sm90/kernel.cuh kQTma) gives the bits of the consumers' row copies
// (CTXATTN_SM90_TMA_Q=0): the rows past a request's end, which TMA fills with the next tokens'
// queries (or zeros past the tensor), are computed but never written. Padded query rows, rows after
// the last request or none, one CTA walking every item (Q ahead from item to item), Q negated as
// it lands with sinks and a window; G = 3 and G = 64 at the edges of the map's rule (3 takes the
// row copies either way).
TEST(CudaSm90, QueriesByTmaMatchTheRowCopiesBitwise) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  struct Case {
    int32_t num_qo_heads, num_kv_heads;
    ctxattn_dtype_t dtype;
    const char* grid_ctas;  // "" : the kernel's own grid
    int32_t extra_rows;
    bool negate;
  };
  const std::vector<Case> cases = {
      {8, 2, CTXATTN_DTYPE_BFLOAT16, "", 5, false},  {16, 2, CTXATTN_DTYPE_FLOAT16, "1", 0, true},
      {64, 1, CTXATTN_DTYPE_BFLOAT16, "1", 3, false}, {6, 2, CTXATTN_DTYPE_FLOAT16, "", 5, false},
      {32, 8, CTXATTN_DTYPE_BFLOAT16, "5", 0, false},
      // e4m3 Q, K and V on FP8 WGMMA: the short form loads Q by TMA too (boxes of 128 codes)
      {8, 2, CTXATTN_DTYPE_FLOAT8_E4M3, "", 5, false}, {16, 2, CTXATTN_DTYPE_FLOAT8_E4M3, "1", 0, true},
  };
  auto bits = [](float x) {
    uint32_t u;
    std::memcpy(&u, &x, sizeof(u));
    return u;
  };
  for (const Case& c : cases) {
    ProblemSpec spec = base_spec();  // D = 128, at most 1024 keys: the static walk
    spec.num_qo_heads = c.num_qo_heads;
    spec.num_kv_heads = c.num_kv_heads;
    spec.q_dtype = spec.kv_dtype = spec.out_dtype = c.dtype;
    spec.q_pad = c.dtype == CTXATTN_DTYPE_FLOAT8_E4M3 ? 16 : 8;  // 16 bytes of padding a token row
    spec.extra_rows = c.extra_rows;
    if (c.negate) {
      spec.bmm1_scale = -0.06f;  // Q negated as it lands
      spec.with_sinks = true;
      spec.window_left = 100;
    }
    SCOPED_TRACE("heads " + std::to_string(c.num_qo_heads) + "/" + std::to_string(c.num_kv_heads) + " grid '" +
                 c.grid_ctas + "' extra rows " + std::to_string(c.extra_rows));
    if (*c.grid_ctas) setenv("CTXATTN_SM90_GRID_CTAS", c.grid_ctas, 1);
    expect_sm90_serves_and_matches(spec);
    std::vector<uint32_t> runs[2];
    for (int copies = 0; copies < 2; ++copies) {
      if (copies) setenv("CTXATTN_SM90_TMA_Q", "0", 1);
      PagedProblem pb(spec);
      run_forced_sm90(pb);
      for (int32_t b = 0; b < pb.batch_size(); ++b) {
        for (int64_t t = pb.q_begin(b); t < pb.q_begin(b + 1); ++t) {
          for (int32_t h = 0; h < spec.num_qo_heads; ++h) {
            for (int32_t d = 0; d < spec.head_dim; ++d) runs[copies].push_back(bits(pb.out_value(t, h, d)));
            runs[copies].push_back(bits(pb.lse_value(t, h)));
          }
        }
      }
      unsetenv("CTXATTN_SM90_TMA_Q");
    }
    unsetenv("CTXATTN_SM90_GRID_CTAS");
    ASSERT_EQ(runs[0].size(), runs[1].size());
    size_t differ = 0;
    for (size_t i = 0; i < runs[0].size(); ++i) differ += runs[0][i] != runs[1][i];
    EXPECT_EQ(differ, 0u) << "of " << runs[0].size() << " values";
  }
}

// AUTO takes the Hopper kernel for what it serves, short sliding windows included; pages of fewer
// than 8 tokens only with an e4m3 operand or at D = 256 (core/dispatch.h, sm90_takes_small_pages),
// else the portable kernel, whatever the lengths.
TEST(CudaSm90, AutoChoosesByTheDispatchPolicy) {
  if (!hopper_present()) GTEST_SKIP() << "no sm90 GPU on this machine";
  struct Case {
    int32_t window_left;
    int32_t page_size;
    int head_dim;
    ctxattn_dtype_t dtype;
    int32_t kv_len;  // of the last request; 0: base_spec's
    ctxattn_backend_t expected;
  };
  constexpr ctxattn_dtype_t bf16 = CTXATTN_DTYPE_BFLOAT16, e4m3 = CTXATTN_DTYPE_FLOAT8_E4M3;
  constexpr ctxattn_backend_t sm90 = CTXATTN_BACKEND_CUDA_SM90, portable = CTXATTN_BACKEND_CUDA_PORTABLE;
  for (const Case c :
       {Case{-1, 16, 128, bf16, 0, sm90}, Case{0, 16, 128, bf16, 0, sm90}, Case{127, 16, 128, bf16, 0, sm90},
        Case{256, 16, 128, bf16, 0, sm90}, Case{-1, 8, 128, bf16, 0, sm90}, Case{-1, 4, 128, bf16, 0, portable},
        Case{-1, 1, 128, bf16, 0, portable}, Case{-1, 2, 64, bf16, 9000, portable}, Case{-1, 4, 256, bf16, 0, sm90},
        Case{-1, 1, 128, e4m3, 0, sm90}, Case{-1, 1, 64, e4m3, 9000, sm90}}) {
    SCOPED_TRACE("window_left " + std::to_string(c.window_left) + " page_size " + std::to_string(c.page_size) +
                 " D " + std::to_string(c.head_dim) + " dtype " + std::to_string(c.dtype) + " kv_len " +
                 std::to_string(c.kv_len));
    ProblemSpec spec = typed_spec(c.head_dim, c.dtype, c.dtype, CTXATTN_DTYPE_BFLOAT16);
    spec.window_left = c.window_left;
    spec.page_size = c.page_size;
    if (c.kv_len) spec.kv_lens.back() = c.kv_len;
    PagedProblem pb(spec);
    DeviceProblem dev(pb);
    ASSERT_TRUE(dev.ok());
    dev.args.backend = CTXATTN_BACKEND_AUTO;
    ctxattn_backend_t chosen = CTXATTN_BACKEND_AUTO;
    ASSERT_EQ(ctxattn_select_backend(&dev.args, &chosen), CTXATTN_STATUS_OK) << ctxattn_last_error();
    EXPECT_EQ(chosen, c.expected) << ctxattn_backend_name(chosen);
  }
}

}  // namespace
}  // namespace ctxattn_test

#endif  // CTXATTN_TEST_CUDA
