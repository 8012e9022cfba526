// GPU tests of the portable CUDA backend against the CPU reference backend: a random sweep over
// dtypes, output kinds, head dims, page sizes, GQA ratios, layouts, KV forms, masks, sinks, LSE
// and strides (NaN in every byte no call may read, poisoned outputs), plus determinism, PDL,
// CUDA-graph replay with new inputs, the metadata check and lying metadata. Every test skips
// without a GPU. CTXATTN_GPU_SWEEP=<count>[:small] sizes the sweep (compute-sanitizer runs use
// a small one).
#include <gtest/gtest.h>

#if defined(CTXATTN_TEST_CUDA)

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_harness.h"

namespace ctxattn_test {
namespace {

struct SweepSize {
  int count = 150;
  bool small = false;
};

SweepSize sweep_size() {
  SweepSize s;
  if (const char* env = std::getenv("CTXATTN_GPU_SWEEP")) {
    s.count = std::atoi(env);
    s.small = std::strstr(env, ":small") != nullptr;
  }
  return s;
}

const char* dtype_label(ctxattn_dtype_t d) {
  switch (d) {
    case CTXATTN_DTYPE_FLOAT16: return "f16";
    case CTXATTN_DTYPE_BFLOAT16: return "bf16";
    case CTXATTN_DTYPE_FLOAT8_E4M3: return "e4m3";
    case CTXATTN_DTYPE_NVFP4: return "nvfp4";
    default: return "?";
  }
}

std::string describe(const ProblemSpec& s) {
  std::ostringstream o;
  o << "q=" << dtype_label(s.q_dtype) << " kv=" << dtype_label(s.kv_dtype) << " out=" << dtype_label(s.out_dtype)
    << " D=" << s.head_dim << " Hq=" << s.num_qo_heads << " Hkv=" << s.num_kv_heads << " N=" << s.page_size
    << (s.kv_layout == CTXATTN_KV_LAYOUT_HND ? " HND" : " NHD") << " form=" << static_cast<int>(s.kv_form)
    << " causal=" << s.causal << " window=" << s.window_left << " sinks=" << s.with_sinks << " lse=" << s.with_lse
    << " scale_ptrs=" << s.scale_pointers << " pads=" << s.q_pad << "/" << s.kv_pad << "/" << s.out_pad
    << " separate_idx=" << s.separate_kv_idx << " skip=" << s.skip_factor << " seed=" << s.seed << " lens(q/kv)=";
  for (size_t b = 0; b < s.q_lens.size(); ++b) o << s.q_lens[b] << "/" << s.kv_lens[b] << " ";
  return o.str();
}

// Multiply-adds of the float64 reference, to keep each sweep case cheap on the host.
double reference_work(const ProblemSpec& s) {
  double w = 0;
  for (size_t b = 0; b < s.q_lens.size(); ++b) w += static_cast<double>(s.q_lens[b]) * s.kv_lens[b];
  return w * s.num_qo_heads * s.head_dim;
}

ProblemSpec random_spec(std::mt19937_64& rng, uint64_t seed, bool small) {
  auto pick = [&](auto const& options) { return options[rng() % options.size()]; };
  auto chance = [&](int percent) { return static_cast<int>(rng() % 100) < percent; };
  struct Dtypes {
    ctxattn_dtype_t q, kv;
  };
  const std::vector<Dtypes> dtypes = {{CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_BFLOAT16},
                                      {CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_FLOAT16},
                                      {CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3},
                                      {CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3},
                                      {CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_FLOAT8_E4M3},
                                      {CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_NVFP4},
                                      {CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_NVFP4}};
  const std::vector<ctxattn_dtype_t> outs = {CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3,
                                             CTXATTN_DTYPE_NVFP4};
  const std::vector<int> head_dims = {64, 128, 128, 256, 512};
  const std::vector<int> groups = {1, 2, 4, 5, 8};
  const std::vector<int32_t> q_choices = small ? std::vector<int32_t>{0, 1, 7, 33, 70}
                                               : std::vector<int32_t>{0, 1, 7, 16, 63, 113, 128, 239, 300};
  ProblemSpec s;
  for (int attempt = 0; attempt < 50; ++attempt) {
    const Dtypes d = pick(dtypes);
    s = ProblemSpec{};
    s.seed = seed;
    s.q_dtype = d.q;
    s.kv_dtype = d.kv;
    s.out_dtype = chance(40) ? d.q : pick(outs);
    s.head_dim = pick(head_dims);
    s.num_kv_heads = 1 + static_cast<int>(rng() % 3);
    s.num_qo_heads = s.num_kv_heads * pick(groups);
    s.page_size = 1 << (rng() % 11);
    s.kv_layout = chance(50) ? CTXATTN_KV_LAYOUT_HND : CTXATTN_KV_LAYOUT_NHD;
    s.kv_form = static_cast<KvForm>(rng() % 3);
    s.causal = chance(80);
    s.window_left = s.causal && chance(25) ? static_cast<int32_t>(rng() % 300) : -1;
    s.with_sinks = chance(30);
    s.with_lse = chance(60);
    s.scale_pointers = chance(30);
    s.bmm2_scale = pick(std::vector<float>{1.0f, 0.5f, 2.0f});
    s.o_sf_scale = pick(std::vector<float>{1.0f, 4.0f, 0.5f});
    s.scale_start_index = chance(50) ? static_cast<int64_t>(rng() % 200) : 0;
    // Pads keep every row 16-byte aligned (the portable backend's requirement).
    s.q_pad = chance(30) ? 16 : 0;
    s.kv_pad = chance(30) ? 16 : 0;
    s.out_pad = chance(30) ? 32 : 0;
    s.lse_pad = chance(30) ? 3 : 0;
    s.extra_rows = static_cast<int32_t>(rng() % 4);
    s.extra_pages = static_cast<int32_t>(rng() % 5);
    s.separate_kv_idx = chance(25);
    // Skip-softmax's vote with a factor that skips nothing (dense results at any geometry).
    s.skip_factor = chance(20) ? 1e-30f : 0.0f;
    // Head dim 512 is built for 16-bit caches of the query's dtype and e4m3 caches under fp16 / e4m3
    // queries (cuda/portable.cpp); the sm90 backend sends all of it to AUTO's portable kernel.
    if (s.head_dim == 512 && (s.kv_dtype == CTXATTN_DTYPE_NVFP4 ||
                              (s.kv_dtype == CTXATTN_DTYPE_FLOAT8_E4M3 && s.q_dtype == CTXATTN_DTYPE_BFLOAT16))) {
      s.head_dim = 256;
    }
    if (s.kv_dtype == CTXATTN_DTYPE_NVFP4) {  // SPEC 8.1: pages of 4+ tokens; rows stay 16-byte aligned
      s.page_size = std::max(s.page_size, 4);
      s.kv_pad = s.kv_pad > 0 ? 32 : 0;
    }
    const int batch = 1 + static_cast<int>(rng() % (small ? 3 : 5));
    ragged_lengths(&s, batch, q_choices, small ? 150 : 700, rng());
    if (reference_work(s) <= (small ? 4e6 : 1.2e8)) break;
  }
  return s;
}

// Cases the backend under test refused as UNSUPPORTED (the sm90 backend serves a subset; AUTO
// sends the rest to the portable backend, which the portable run of the suite covers).
int g_not_covered = 0;
int g_covered = 0;

// Runs one problem on the GPU and on the CPU reference; fails the test with the description.
void check_against_reference(const ProblemSpec& spec, int pdl = -1) {
  PagedProblem want(spec);
  ASSERT_EQ(run_cpu_reference(want), CTXATTN_STATUS_OK) << ctxattn_last_error() << "\n" << describe(spec);
  PagedProblem got(spec);
  got.poison_outputs();
  DeviceProblem dev(got);
  ASSERT_TRUE(dev.ok());
  dev.args.enable_pdl = pdl;
  const ctxattn_status_t status = dev.run();
  if (status == CTXATTN_STATUS_UNSUPPORTED && dev.args.backend == CTXATTN_BACKEND_CUDA_SM90) {
    ++g_not_covered;
    return;
  }
  ++g_covered;
  ASSERT_EQ(status, CTXATTN_STATUS_OK) << ctxattn_last_error() << "\n" << describe(spec);
  ASSERT_TRUE(dev.download());
  const std::string diff = compare_outputs(got, want);
  EXPECT_TRUE(diff.empty()) << describe(spec) << "\n" << diff;
  const std::string outside = untouched_outside_rows(got);
  EXPECT_TRUE(outside.empty()) << describe(spec) << "\n" << outside;
}

TEST(CudaPortable, RandomSweepMatchesCpuReference) {
  CTXATTN_REQUIRE_GPU();
  const SweepSize size = sweep_size();
  std::mt19937_64 rng(20261130);
  g_covered = g_not_covered = 0;
  for (int i = 0; i < size.count; ++i) {
    const ProblemSpec spec = random_spec(rng, 1000 + i, size.small);
    SCOPED_TRACE("sweep case " + std::to_string(i));
    check_against_reference(spec);
    if (HasFatalFailure()) return;
  }
  std::printf("sweep: %d cases ran on the backend under test, %d it does not serve\n", g_covered, g_not_covered);
  EXPECT_GT(g_covered, 0) << "the backend under test served no case of the sweep";
}

// The shapes the sweep might miss, written out.
TEST(CudaPortable, UglyShapesMatchCpuReference) {
  CTXATTN_REQUIRE_GPU();
  std::vector<ProblemSpec> cases;
  auto base = [] {
    ProblemSpec s;
    s.q_lens = {113, 1, 0, 239};
    s.kv_lens = {799, 1, 5, 1023};
    s.num_qo_heads = 10;
    s.num_kv_heads = 2;  // G = 5
    s.head_dim = 128;
    s.with_lse = true;
    return s;
  };
  for (int n : {1, 16, 64, 1024}) {
    ProblemSpec s = base();
    s.page_size = n;
    cases.push_back(s);
  }
  {
    ProblemSpec s = base();
    s.window_left = 0;
    s.with_sinks = true;
    cases.push_back(s);
  }
  {
    ProblemSpec s = base();
    s.causal = false;
    s.kv_layout = CTXATTN_KV_LAYOUT_NHD;
    s.kv_form = KvForm::kShared;
    s.head_dim = 256;
    s.q_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
    s.kv_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
    s.out_dtype = CTXATTN_DTYPE_NVFP4;
    s.scale_start_index = 77;
    cases.push_back(s);
  }
  {
    ProblemSpec s = base();
    s.head_dim = 64;
    s.num_qo_heads = 32;
    s.num_kv_heads = 32;  // G = 1
    s.q_dtype = CTXATTN_DTYPE_FLOAT16;
    s.kv_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
    s.out_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
    s.window_left = 100;
    cases.push_back(s);
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    check_against_reference(cases[i]);
  }
}

ProblemSpec medium_spec() {
  ProblemSpec s;
  s.q_lens = {200, 57, 128};
  s.kv_lens = {700, 57, 400};
  s.num_qo_heads = 8;
  s.num_kv_heads = 2;
  s.head_dim = 128;
  s.page_size = 16;
  s.with_lse = true;
  s.with_sinks = true;
  return s;
}

// Query rows from 2^-60 to 2^20 times N(0, 1) mixed in every tile, an infinity and a NaN kept in
// their rows (cuda_harness.h query_magnitude_differences), fp16 and bf16. The range stops at 2^20
// as on the Hopper kernel: both softmaxes lose the top key's p past scores of ~2^24
// (docs/perf.md, v11).
TEST(CudaPortable, QueriesOfEveryMagnitude) {
  CTXATTN_REQUIRE_GPU();
  for (ctxattn_dtype_t dtype : {CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_FLOAT16}) {
    ProblemSpec spec;
    spec.q_lens = {37, 130};
    spec.kv_lens = {300, 130};
    spec.num_qo_heads = 8;
    spec.num_kv_heads = 2;
    spec.head_dim = 128;
    spec.page_size = 16;
    spec.q_dtype = spec.kv_dtype = spec.out_dtype = dtype;
    spec.with_lse = true;
    SCOPED_TRACE(dtype_label(dtype));
    // fp16 holds 2^15 at most: its rows stop at 2^0.
    EXPECT_EQ(query_magnitude_differences(spec, CTXATTN_BACKEND_CUDA_PORTABLE, dtype == CTXATTN_DTYPE_FLOAT16 ? 0 : 20), "");
  }
}

TEST(CudaPortable, HundredRerunsAreBitwiseEqualWithAndWithoutPdl) {
  CTXATTN_REQUIRE_GPU();
  PagedProblem pb(medium_spec());
  pb.poison_outputs();
  DeviceProblem dev(pb);
  ASSERT_TRUE(dev.ok());
  const std::string diff = rerun_differences(dev, pb, 100);
  EXPECT_TRUE(diff.empty()) << diff;
}

// Captures the call once, then replays it with new lengths, block tables, contents and scales
// written into the same device buffers.
TEST(CudaPortable, GraphReplaysWithNewLengthsTablesAndScales) {
  CTXATTN_REQUIRE_GPU();
  ProblemSpec a = medium_spec();
  a.q_lens = {100, 37, 64};
  a.kv_lens = {300, 37, 200};
  a.extra_pages = 7;  // pool of 42 pages, like b's
  a.scale_pointers = true;
  ProblemSpec b = a;
  b.q_lens = {64, 100, 20};
  b.kv_lens = {64, 250, 300};
  b.extra_rows = 17;  // same number of token rows as a
  b.extra_pages = 3;
  b.bmm1_scale = 0.05f;
  b.bmm2_scale = 1.5f;
  b.seed = 99;

  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  PagedProblem pa(a);
  pa.poison_outputs();
  DeviceProblem dev(pa, stream);
  ASSERT_TRUE(dev.ok());
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  const std::string captured = capture_call(dev, stream, &graph, &exec);
  ASSERT_TRUE(captured.empty()) << captured;

  for (ProblemSpec* spec : {&a, &b}) {
    const std::string diff = replay_differences(dev, pa, exec, stream, *spec);
    EXPECT_TRUE(diff.empty()) << describe(*spec) << "\n" << diff;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// Check mode: the GPU reports the same first violation, with the same message, as the CPU.
TEST(CudaPortable, MetadataCheckReportsLikeTheCpu) {
  CTXATTN_REQUIRE_GPU();
  using Corruption = void (*)(PagedProblem&);
  const std::vector<std::pair<const char*, Corruption>> corruptions = {
      {"page id past the pool", [](PagedProblem& p) { p.block_tables[1 * p.args.block_tables_stride + 2] = 1 << 20; }},
      {"negative page id", [](PagedProblem& p) { p.block_tables[2 * p.args.block_tables_stride + 0] = -3; }},
      {"seq_lens above max_kv_len", [](PagedProblem& p) { p.seq_lens[2] = p.args.max_kv_len + 1; }},
      {"decreasing cum_seq_lens_q", [](PagedProblem& p) { p.cu_q[2] = p.cu_q[1] - 1; }},
      {"seq_lens below the query length", [](PagedProblem& p) { p.seq_lens[1] = 10; }},
      {"cum_seq_lens_q past num_tokens", [](PagedProblem& p) { p.cu_q[3] = static_cast<int32_t>(p.args.num_tokens) + 4; }},
      // Separate indices (uses_shared_paged_kv_idx = 0): a V id alone lies, or K's and V's both.
      {"separate: V page id past the pool",
       [](PagedProblem& p) { p.block_tables[1 * p.args.block_tables_stride + p.args.block_tables_kv_stride + 2] = 1 << 20; }},
      {"separate: negative V page id, K honest",
       [](PagedProblem& p) { p.block_tables[2 * p.args.block_tables_stride + p.args.block_tables_kv_stride] = -1; }},
      {"separate: K id lies before V's", [](PagedProblem& p) {
         p.block_tables[1 * p.args.block_tables_stride + 3] = -5;
         p.block_tables[1 * p.args.block_tables_stride + p.args.block_tables_kv_stride + 1] = 1 << 24;
       }},
  };
  for (const auto& c : corruptions) {
    SCOPED_TRACE(c.first);
    ProblemSpec spec = medium_spec();
    spec.separate_kv_idx = std::string(c.first).rfind("separate", 0) == 0;
    PagedProblem cpu(spec);
    c.second(cpu);
    ctxattn_args_t a = cpu.args;
    a.backend = CTXATTN_BACKEND_CPU_REFERENCE;
    ASSERT_EQ(ctxattn_batch_context_with_kv_cache(&a), CTXATTN_STATUS_INVALID_METADATA);
    const std::string cpu_message = ctxattn_last_error();

    PagedProblem gpu(spec);
    c.second(gpu);
    DeviceProblem dev(gpu);
    ASSERT_TRUE(dev.ok());
    dev.args.check_metadata = 1;
    ASSERT_EQ(dev.run(), CTXATTN_STATUS_INVALID_METADATA);
    EXPECT_EQ(std::string(ctxattn_last_error()), cpu_message);
  }
  PagedProblem clean(medium_spec());
  DeviceProblem dev(clean);
  dev.args.check_metadata = 1;
  EXPECT_EQ(dev.run(), CTXATTN_STATUS_OK) << ctxattn_last_error();
}

// Without check mode lying metadata still never reads outside the pool or writes outside the
// outputs: a bad page id turns the rows that attend it into NaN, a huge seq_lens is clamped to
// max_kv_len, and the honest request is unaffected.
TEST(CudaPortable, LyingMetadataStaysInsideTheBuffers) {
  CTXATTN_REQUIRE_GPU();
  ProblemSpec s = medium_spec();
  s.causal = false;
  PagedProblem want(s);
  ASSERT_EQ(run_cpu_reference(want), CTXATTN_STATUS_OK) << ctxattn_last_error();
  PagedProblem got(s);
  got.poison_outputs();
  got.block_tables[1 * got.args.block_tables_stride + 0] = 1 << 30;  // request 1, keys 0..15
  got.seq_lens[2] = 1 << 30;
  DeviceProblem dev(got);
  ASSERT_TRUE(dev.ok());
  ASSERT_EQ(dev.run(), CTXATTN_STATUS_OK) << ctxattn_last_error();
  ASSERT_TRUE(dev.download());
  const int32_t Hq = s.num_qo_heads;
  for (int64_t t = got.q_begin(0); t < got.q_begin(1); ++t) {
    for (int32_t h = 0; h < Hq; ++h) {
      for (int32_t d = 0; d < s.head_dim; ++d) {
        const double g = got.out_value(t, h, d), w = want.out_value(t, h, d);
        ASSERT_LE(std::fabs(g - w), 1e-2 + 1e-2 * std::fabs(w)) << "honest request row " << t;
      }
    }
  }
  // The portable backend poisons the rows that attend a bad page with NaN; the sm90 backend's
  // TMA reads a page outside the pool as zeros. Either way nothing outside the pool is read.
  if (dev.args.backend != CTXATTN_BACKEND_CUDA_SM90) {
    for (int64_t t = got.q_begin(1); t < got.q_begin(2); ++t) {
      for (int32_t h = 0; h < Hq; ++h) EXPECT_TRUE(std::isnan(got.out_value(t, h, 0))) << "row " << t << " attends a bad page";
    }
  }
  EXPECT_EQ(untouched_outside_rows(got), "");
}

TEST(CudaPortable, UnsupportedHeadDimIsReported) {
  CTXATTN_REQUIRE_GPU();
  ProblemSpec s = medium_spec();
  s.head_dim = 96;
  PagedProblem pb(s);
  DeviceProblem dev(pb);
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(dev.run(), CTXATTN_STATUS_UNSUPPORTED);
  EXPECT_NE(std::string(ctxattn_last_error()).find("head_dim"), std::string::npos) << ctxattn_last_error();
}

}  // namespace
}  // namespace ctxattn_test

#endif  // CTXATTN_TEST_CUDA
