// GPU tests of split-KV (cuda/common/split.cuh) on the backend under test: short chunks over
// long KV are cut into pieces on different CTAs and merged, and the result must match the CPU
// reference on odd lengths with every output kind, sinks, windows and LSE; a request's output
// must be bitwise the same alone or inside a batch and from one run to the next; a captured
// graph must stay right when the lengths change the split count between replays; the workspace
// the call reports must hold the partials, and one byte less is an error naming the argument.
// Skips without a GPU.
#include <gtest/gtest.h>

#if defined(CTXATTN_TEST_CUDA)

#include <cuda_runtime.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/common/split_policy.h"
#include "cuda_harness.h"

namespace ctxattn_test {
namespace {

std::string label(const ProblemSpec& s) {
  std::ostringstream o;
  o << "D=" << s.head_dim << " Hq=" << s.num_qo_heads << " Hkv=" << s.num_kv_heads << " N=" << s.page_size
    << " causal=" << s.causal << " window=" << s.window_left << " sinks=" << s.with_sinks << " out=" << s.out_dtype
    << " q=[";
  for (size_t b = 0; b < s.q_lens.size(); ++b) o << (b ? "," : "") << s.q_lens[b] << "/" << s.kv_lens[b];
  return o.str() + "]";
}

// The split pieces the backend chosen for `args` gives request (q_len, kv_len), from the policy
// the kernels use: the SM count times the kernel's CTAs an SM, and its rows a tile.
int expected_pieces(const ctxattn_args_t& args, const ProblemSpec& s, int q_len, int kv_len) {
  ctxattn_backend_t backend = CTXATTN_BACKEND_AUTO;
  if (ctxattn_select_backend(&args, &backend) != CTXATTN_STATUS_OK) return -1;
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) return -1;
  ctxattn::SplitShape shape;
  const bool sm90 = backend == CTXATTN_BACKEND_CUDA_SM90;
  shape.target = sm90 || s.head_dim > 128 ? sms : 2 * sms;
  shape.block_m = sm90 || s.head_dim <= 128 ? 128 : 64;
  shape.num_kv_heads = s.num_kv_heads;
  shape.group_size = s.num_qo_heads / s.num_kv_heads;
  if (!ctxattn::split_possible(shape.target, s.num_kv_heads, kv_len)) return 1;
  return ctxattn::split_pieces(shape, q_len, kv_len);
}

ProblemSpec split_spec() {
  ProblemSpec s;
  s.num_qo_heads = 8;
  s.num_kv_heads = 1;
  s.head_dim = 128;
  s.page_size = 16;
  s.with_lse = true;
  s.q_lens = {113, 1};
  s.kv_lens = {9001, 12345};
  return s;
}

// Runs `spec` on the GPU and the CPU reference; `min_split` requests must be split.
void check_split_case(const ProblemSpec& spec, int min_split) {
  SCOPED_TRACE(label(spec));
  PagedProblem want(spec);
  ASSERT_EQ(run_cpu_reference(want), CTXATTN_STATUS_OK) << ctxattn_last_error();
  PagedProblem got(spec);
  got.poison_outputs();
  DeviceProblem dev(got);
  ASSERT_TRUE(dev.ok());
  const ctxattn_status_t status = dev.run();
  if (status == CTXATTN_STATUS_UNSUPPORTED && dev.args.backend == CTXATTN_BACKEND_CUDA_SM90) {
    GTEST_SKIP() << "the sm90 backend does not serve this case: " << ctxattn_last_error();
  }
  ASSERT_EQ(status, CTXATTN_STATUS_OK) << ctxattn_last_error();
  int split = 0;
  for (size_t b = 0; b < spec.q_lens.size(); ++b) {
    split += expected_pieces(dev.args, spec, spec.q_lens[b], spec.kv_lens[b]) > 1;
  }
  EXPECT_GE(split, min_split) << "the case no longer exercises split-KV";
  ASSERT_TRUE(dev.download());
  const std::string diff = compare_outputs(got, want);
  EXPECT_TRUE(diff.empty()) << diff;
  const std::string outside = untouched_outside_rows(got);
  EXPECT_TRUE(outside.empty()) << outside;
}

TEST(CudaSplit, ShortChunksOverLongKvMatchTheReference) {
  CTXATTN_REQUIRE_GPU();
  std::vector<ProblemSpec> cases;
  cases.push_back(split_spec());
  {
    ProblemSpec s = split_spec();  // GQA 5, sinks, fp16 out, NaN-poisoned spare pages
    s.num_qo_heads = 10;
    s.num_kv_heads = 2;
    s.q_lens = {37, 239, 0, 5};
    s.kv_lens = {20011, 8193, 9000, 8197};
    s.q_dtype = s.kv_dtype = s.out_dtype = CTXATTN_DTYPE_FLOAT16;
    s.with_sinks = true;
    s.page_size = 64;
    cases.push_back(s);
  }
  {
    ProblemSpec s = split_spec();  // non-causal, e4m3 out, D = 64
    s.head_dim = 64;
    s.causal = false;
    s.out_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
    s.q_lens = {64, 3};
    s.kv_lens = {10007, 16411};
    cases.push_back(s);
  }
  {
    ProblemSpec s = split_spec();  // sliding window over a long prefix, nvfp4 out, sinks
    s.window_left = 3000;
    s.with_sinks = true;
    s.out_dtype = CTXATTN_DTYPE_NVFP4;
    s.q_lens = {17, 128};
    s.kv_lens = {15013, 9999};
    cases.push_back(s);
  }
  {
    ProblemSpec s = split_spec();  // D = 256, scales by pointer, NHD
    s.head_dim = 256;
    s.num_qo_heads = 4;
    s.scale_pointers = true;
    s.bmm2_scale = 0.5f;
    s.kv_layout = CTXATTN_KV_LAYOUT_NHD;
    s.q_lens = {31, 1};
    s.kv_lens = {12000, 8200};
    cases.push_back(s);
  }
  {
    ProblemSpec s = split_spec();  // e4m3 Q, K and V (the Hopper kernel's FP8 path), bf16 out
    s.q_dtype = s.kv_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
    s.q_lens = {45, 2};
    s.kv_lens = {11003, 8999};
    cases.push_back(s);
  }
  for (const ProblemSpec& s : cases) check_split_case(s, 1);
}

// Runs request `request` of the problem on `dev` alone (the metadata arrays viewed from its entry,
// its own maxima) and compares its out and LSE rows bitwise with `batch_out` / `batch_lse`.
void expect_alone_matches_batch(PagedProblem& pb, DeviceProblem& dev, const ProblemSpec& s, int request,
                                const std::vector<uint8_t>& batch_out, const std::vector<float>& batch_lse) {
  SCOPED_TRACE("request " + std::to_string(request));
  pb.poison_outputs();
  ASSERT_TRUE(dev.upload(pb));
  ctxattn_args_t alone = dev.args;
  alone.batch_size = 1;
  alone.max_q_len = s.q_lens[request];
  alone.max_kv_len = s.kv_lens[request];
  alone.block_tables += static_cast<int64_t>(request) * alone.block_tables_stride;
  alone.seq_lens = static_cast<const int32_t*>(alone.seq_lens) + request;
  alone.cum_seq_lens_q += request;
  if (alone.cum_seq_lens_kv != nullptr) alone.cum_seq_lens_kv += request;
  ASSERT_EQ(ctxattn_batch_context_with_kv_cache(&alone), CTXATTN_STATUS_OK) << ctxattn_last_error();
  ASSERT_TRUE(dev.download());
  const int64_t first = pb.q_begin(request), last = pb.q_begin(request + 1);
  for (int64_t t = first; t < last; ++t) {
    for (int32_t h = 0; h < s.num_qo_heads; ++h) {
      const int64_t o = pb.out_offset(t, h, 0) * 2;
      ASSERT_EQ(0, std::memcmp(&batch_out[o], &pb.out[o], s.head_dim * 2)) << "out row " << t << " head " << h;
      const float a = batch_lse[t * pb.args.lse_stride_token + h * pb.args.lse_stride_head];
      ASSERT_EQ(0, std::memcmp(&a, &pb.lse[t * pb.args.lse_stride_token + h * pb.args.lse_stride_head], 4))
          << "lse row " << t << " head " << h;
    }
  }
}

// The same request alone and inside a mixed batch (the batch's own max_q_len / max_kv_len differ
// from the request's): the request's out and LSE rows are bitwise equal. Requests 1 and 2 are
// split; request 0 is not, and runs alone in the kernel built without the split code (its
// max_kv_len is under 8192) but in the batch in the one with it.
TEST(CudaSplit, RequestOutputIsBitwiseTheSameAloneAndInABatch) {
  CTXATTN_REQUIRE_GPU();
  ProblemSpec s = split_spec();
  s.with_sinks = true;
  s.q_lens = {700, 77, 1, 300};
  s.kv_lens = {700, 15000, 30000, 9000};
  PagedProblem pb(s);
  pb.poison_outputs();
  DeviceProblem dev(pb);
  ASSERT_TRUE(dev.ok());
  ASSERT_GT(expected_pieces(dev.args, s, 77, 15000), 1) << "request 1 must be split";
  ASSERT_EQ(dev.run(), CTXATTN_STATUS_OK) << ctxattn_last_error();
  ASSERT_TRUE(dev.download());
  const std::vector<uint8_t> batch_out = pb.out;
  const std::vector<float> batch_lse = pb.lse;
  for (int request : {0, 1, 2}) expect_alone_matches_batch(pb, dev, s, request, batch_out, batch_lse);
}

// A request too long to split (its tiles alone fill more than a wave) beside one that splits, at
// page sizes 64 and 16: on the Hopper backend the call runs the split kernel on the scheduler's
// walk (persistent CTAs drawing items, split pieces among them; sm90/run.cuh), where the split
// request alone runs it on the static walk. Both match the reference, and the split request's rows
// are bitwise those it gets alone.
TEST(CudaSplit, SplitPiecesBesideALongRequestMatchTheReferenceAndTheRequestAlone) {
  CTXATTN_REQUIRE_GPU();
  for (int32_t page : {64, 16}) {
    ProblemSpec s = split_spec();
    s.num_qo_heads = 32;
    s.num_kv_heads = 8;
    s.page_size = page;
    s.with_sinks = true;
    s.q_lens = {600, 5};
    s.kv_lens = {9000, 12000};
    SCOPED_TRACE("page size " + std::to_string(page));
    check_split_case(s, 1);
    PagedProblem pb(s);
    pb.poison_outputs();
    DeviceProblem dev(pb);
    ASSERT_TRUE(dev.ok());
    ASSERT_EQ(expected_pieces(dev.args, s, 600, 9000), 1) << "request 0 must not split";
    ASSERT_GT(expected_pieces(dev.args, s, 5, 12000), 1) << "request 1 must be split";
    ASSERT_EQ(dev.run(), CTXATTN_STATUS_OK) << ctxattn_last_error();
    ASSERT_TRUE(dev.download());
    const std::vector<uint8_t> batch_out = pb.out;
    const std::vector<float> batch_lse = pb.lse;
    expect_alone_matches_batch(pb, dev, s, 1, batch_out, batch_lse);
  }
}

TEST(CudaSplit, RerunsAreBitwiseEqual) {
  CTXATTN_REQUIRE_GPU();
  ProblemSpec s = split_spec();
  s.q_lens = {200, 9};
  s.kv_lens = {24000, 13000};
  PagedProblem pb(s);
  pb.poison_outputs();
  DeviceProblem dev(pb);
  ASSERT_TRUE(dev.ok());
  ASSERT_GT(expected_pieces(dev.args, s, 9, 13000), 1);
  const std::string diff = rerun_differences(dev, pb, 30);
  EXPECT_TRUE(diff.empty()) << diff;
}

// One captured call replayed with lengths that give 16, 4, then no pieces, and back.
TEST(CudaSplit, GraphReplaysWhereTheSplitCountChanges) {
  CTXATTN_REQUIRE_GPU();
  ProblemSpec a = split_spec();
  a.q_lens = {1, 40};
  a.kv_lens = {40000, 9000};
  a.extra_pages = 10;
  ProblemSpec b = a;  // same pool (2500 + 563 pages + 10), rows, table columns
  b.q_lens = {40, 1};
  b.kv_lens = {9000, 40000};
  b.seed = 7;
  ProblemSpec c = a;
  c.q_lens = {30, 11};
  c.kv_lens = {3000, 1000};
  c.extra_pages = 10 + 2500 + 563 - 188 - 63;
  c.extra_table_cols = a.extra_table_cols + 2500 - 188;
  c.seed = 11;

  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  PagedProblem pa(a);
  pa.poison_outputs();
  DeviceProblem dev(pa, stream);
  ASSERT_TRUE(dev.ok());
  ASSERT_GT(expected_pieces(dev.args, a, 1, 40000), expected_pieces(dev.args, a, 40, 9000));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  const std::string captured = capture_call(dev, stream, &graph, &exec);
  ASSERT_TRUE(captured.empty()) << captured;
  for (ProblemSpec* spec : {&a, &b, &c, &a}) {
    const std::string diff = replay_differences(dev, pa, exec, stream, *spec);
    EXPECT_TRUE(diff.empty()) << label(*spec) << "\n" << diff;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// The workspace a call reports holds the split partials: one byte less is refused before any
// launch, naming the argument; calls over short KV need only the header.
TEST(CudaSplit, WorkspaceSizeCoversThePartials) {
  CTXATTN_REQUIRE_GPU();
  ProblemSpec s = split_spec();
  PagedProblem pb(s);
  pb.poison_outputs();
  DeviceProblem dev(pb);
  ASSERT_TRUE(dev.ok());
  size_t need = 0;
  ASSERT_EQ(ctxattn_workspace_size(&dev.args, &need), CTXATTN_STATUS_OK) << ctxattn_last_error();
  EXPECT_GT(need, size_t{4096}) << "a call that may split needs partials";
  EXPECT_EQ(dev.args.workspace_size, need);
  ctxattn_args_t small = dev.args;
  small.workspace_size = need - 1;
  ASSERT_EQ(ctxattn_batch_context_with_kv_cache(&small), CTXATTN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ctxattn_last_error()).find("workspace_buffer"), std::string::npos) << ctxattn_last_error();
  ASSERT_TRUE(dev.download());
  for (uint8_t byte : pb.out) ASSERT_EQ(byte, 0xFF) << "a refused call wrote out";

  ctxattn_args_t short_kv = dev.args;
  short_kv.max_kv_len = ctxattn::kSplitMinKeys - 1;
  ASSERT_EQ(ctxattn_workspace_size(&short_kv, &need), CTXATTN_STATUS_OK) << ctxattn_last_error();
  EXPECT_EQ(need, size_t{4096}) << "no request under kSplitMinKeys keys splits";
}

}  // namespace
}  // namespace ctxattn_test

#endif  // CTXATTN_TEST_CUDA
