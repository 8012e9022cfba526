// GPU reliability suites: one captured graph replayed 1,000 times over changing lengths, block
// tables, contents and scale tensors (a sample checked against the CPU reference), and guard
// bytes around the workspace, out and lse in device memory.
// Compiled only in CUDA builds (CTXATTN_TEST_CUDA); the tests skip on machines without a GPU.
#if defined(CTXATTN_TEST_CUDA)
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuda_harness.h"

namespace ctxattn_test {
namespace {

// A replay family: every member has the same buffer sizes (rows, pool pages, table columns), so
// each can be copied into the buffers the graph was captured on; lengths stay within the bounds
// the capture used, as a serving engine captures with its largest lengths.
constexpr int32_t kRequests = 3, kMaxQ = 96, kMaxKv = 320, kRows = 300, kPool = 70, kCols = 22, kPage = 16;

ProblemSpec family_member(std::mt19937& rng, uint64_t seed) {
  ProblemSpec s;
  s.num_qo_heads = 8;
  s.num_kv_heads = 2;
  s.head_dim = 128;
  s.page_size = kPage;
  s.with_lse = true;
  s.with_sinks = true;
  s.scale_pointers = true;
  s.seed = seed;
  std::uniform_int_distribution<int32_t> q_len(0, kMaxQ);
  int32_t rows = 0, pages = 0, max_pages = 0;
  for (int32_t b = 0; b < kRequests; ++b) {
    const int32_t q = q_len(rng);
    const int32_t kv = q + std::uniform_int_distribution<int32_t>(0, kMaxKv - q)(rng);
    s.q_lens.push_back(q);
    s.kv_lens.push_back(kv);
    rows += q;
    pages += (kv + kPage - 1) / kPage;
    max_pages = std::max(max_pages, (kv + kPage - 1) / kPage);
  }
  s.extra_rows = kRows - rows;
  s.extra_pages = kPool - pages;
  s.extra_table_cols = kCols - max_pages;
  s.bmm1_scale = std::uniform_real_distribution<float>(0.02f, 0.12f)(rng);
  s.bmm2_scale = std::uniform_real_distribution<float>(0.5f, 2.0f)(rng);
  return s;
}

TEST(CudaReliability, OneGraphReplayedAThousandTimes) {
  CTXATTN_REQUIRE_GPU();
  constexpr int kMembers = 8, kReplays = 1000, kCheckEvery = 50;
  std::mt19937 rng(4242);
  std::vector<ProblemSpec> specs;
  std::vector<std::unique_ptr<PagedProblem>> inputs, wants;
  for (int m = 0; m < kMembers; ++m) {
    specs.push_back(family_member(rng, 100 + m));
    inputs.push_back(std::make_unique<PagedProblem>(specs.back()));
    wants.push_back(std::make_unique<PagedProblem>(specs.back()));
    ASSERT_EQ(run_cpu_reference(*wants.back()), CTXATTN_STATUS_OK) << ctxattn_last_error();
  }

  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  PagedProblem captured(specs[0]);
  captured.poison_outputs();
  DeviceProblem dev(captured, stream);
  ASSERT_TRUE(dev.ok());
  dev.args.max_q_len = kMaxQ;
  dev.args.max_kv_len = kMaxKv;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  const std::string capture_error = capture_call(dev, stream, &graph, &exec);
  ASSERT_TRUE(capture_error.empty()) << capture_error;

  int checked = 0;
  for (int i = 0; i < kReplays; ++i) {
    const int m = (i * 5 + i / kMembers) % kMembers;  // no fixed period between members
    PagedProblem& in = *inputs[m];
    in.poison_outputs();  // the device outputs start poisoned at every replay
    ASSERT_TRUE(dev.upload(in)) << "member " << m << " must have the captured buffer sizes";
    CUDA_OK(cudaGraphLaunch(exec, stream));
    if (i % kCheckEvery != kCheckEvery - 1) continue;
    CUDA_OK(cudaStreamSynchronize(stream));
    ASSERT_TRUE(dev.download());
    in.out = captured.out;
    in.lse = captured.lse;
    const std::string diff = compare_outputs(in, *wants[m]);
    ASSERT_TRUE(diff.empty()) << "replay " << i << ", member " << m << ": " << diff;
    ++checked;
  }
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT_EQ(checked, kReplays / kCheckEvery);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// out, lse and the workspace placed inside larger device buffers filled with a poison byte:
// after the call nothing outside the bytes the contract names has changed.
TEST(CudaReliability, GuardBytesAroundDeviceOutputsAndWorkspace) {
  CTXATTN_REQUIRE_GPU();
  constexpr uint8_t kPoison = 0x5A;
  constexpr size_t kGuard = 1 << 16;
  std::mt19937 rng(99);
  PagedProblem pb(family_member(rng, 7));
  pb.poison_outputs();
  DeviceProblem dev(pb);
  ASSERT_TRUE(dev.ok());

  struct Region {
    const char* name;
    size_t bytes;
    uint8_t* base = nullptr;
  };
  size_t ws_bytes = 0;
  ASSERT_EQ(ctxattn_workspace_size(&dev.args, &ws_bytes), CTXATTN_STATUS_OK) << ctxattn_last_error();
  Region regions[] = {{"out", pb.out.size()}, {"lse", pb.lse.size() * sizeof(float)}, {"workspace", ws_bytes}};
  for (Region& r : regions) {
    void* p = nullptr;
    CUDA_OK(cudaMalloc(&p, r.bytes + 2 * kGuard));
    r.base = static_cast<uint8_t*>(p);
    CUDA_OK(cudaMemset(r.base, kPoison, r.bytes + 2 * kGuard));
  }
  // The outputs start poisoned inside too, so the test sees which bytes the call wrote.
  CUDA_OK(cudaMemcpy(regions[0].base + kGuard, pb.out.data(), regions[0].bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(regions[1].base + kGuard, pb.lse.data(), regions[1].bytes, cudaMemcpyHostToDevice));
  dev.args.out = regions[0].base + kGuard;
  dev.args.lse = reinterpret_cast<float*>(regions[1].base + kGuard);
  dev.args.workspace = regions[2].base + kGuard;
  dev.args.workspace_size = ws_bytes;
  ASSERT_EQ(dev.run(), CTXATTN_STATUS_OK) << ctxattn_last_error();
  CUDA_OK(cudaDeviceSynchronize());

  for (const Region& r : regions) {
    std::vector<uint8_t> host(r.bytes + 2 * kGuard);
    CUDA_OK(cudaMemcpy(host.data(), r.base, host.size(), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < kGuard; ++i) {
      ASSERT_EQ(host[i], kPoison) << r.name << ": byte " << (kGuard - i) << " before the buffer was written";
      ASSERT_EQ(host[kGuard + r.bytes + i], kPoison) << r.name << ": byte " << i << " past the buffer was written";
    }
    if (std::string(r.name) == "out") {
      std::memcpy(pb.out.data(), host.data() + kGuard, r.bytes);
    } else if (std::string(r.name) == "lse") {
      std::memcpy(pb.lse.data(), host.data() + kGuard, r.bytes);
    }
  }
  // Inside out / lse: the rows past cum_seq_lens_q[B] and the padding stay as they were.
  EXPECT_EQ(untouched_outside_rows(pb), "");
  for (Region& r : regions) cudaFree(r.base);
}

}  // namespace
}  // namespace ctxattn_test

#endif  // CTXATTN_TEST_CUDA
