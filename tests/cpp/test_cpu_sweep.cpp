// The fast CPU path against the CPU reference over every feature: named cases for each edge the
// SPEC lists, then a random sweep mixing all of them, then a few cases under every instruction
// set the CPU can run.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "cpu_harness.h"
#include "paged_cache.h"

namespace ctxattn_test {
namespace {

struct NamedCase {
  std::string name;
  ProblemSpec spec;
};

ProblemSpec base(std::vector<int32_t> q, std::vector<int32_t> kv) {
  ProblemSpec s;
  s.q_lens = std::move(q);
  s.kv_lens = std::move(kv);
  s.with_lse = true;
  return s;
}

std::vector<NamedCase> named_cases() {
  std::vector<NamedCase> c;
  auto add = [&](const std::string& name, const ProblemSpec& s) { c.push_back({name, s}); };
  ProblemSpec s;

  s = base({1, 17, 113, 239, 799}, {1, 30, 113, 300, 801});
  s.num_qo_heads = 10, s.num_kv_heads = 2;
  add("odd_lengths_gqa5", s);
  s = base({0, 5, 0, 17, 0, 1}, {0, 40, 13, 17, 0, 1});
  add("empty_requests", s);
  s = base({64, 3}, {64, 70});
  s.num_qo_heads = 8, s.num_kv_heads = 8;
  add("mha", s);
  s = base({33, 20}, {90, 20});
  s.num_qo_heads = 16, s.num_kv_heads = 1;
  add("mqa_16", s);
  for (int n : {1, 2, 64, 128, 1024}) {
    s = base({113, 40, 7}, {300, 1100, 7});
    s.page_size = n;
    s.num_qo_heads = 4, s.num_kv_heads = 2;
    add("page_" + std::to_string(n), s);
  }
  for (int d : {8, 40, 96, 128, 256, 512}) {
    s = base({39, 70}, {39, 150});
    s.head_dim = d;
    s.num_qo_heads = 4, s.num_kv_heads = 2;
    add("head_dim_" + std::to_string(d), s);
  }
  for (int w : {0, 1, 7, 63, 64, 127, 200}) {
    s = base({239, 64, 1}, {300, 64, 500});
    s.window_left = w;
    add("window_" + std::to_string(w), s);
  }
  s = base({113, 17}, {200, 17});
  s.with_sinks = true;
  add("sinks", s);
  s.window_left = 20;
  add("sinks_window", s);
  s = base({17, 50, 4, 9}, {40, 20, 0, 9});
  s.causal = false;
  add("non_causal_ragged", s);
  s.with_sinks = true;
  add("non_causal_sinks_empty_kv", s);

  const ctxattn_dtype_t f16 = CTXATTN_DTYPE_FLOAT16, bf16 = CTXATTN_DTYPE_BFLOAT16, e4m3 = CTXATTN_DTYPE_FLOAT8_E4M3;
  struct Types {
    const char* name;
    ctxattn_dtype_t q, kv, out;
  };
  for (const Types& t : {Types{"f16", f16, f16, f16}, Types{"bf16", bf16, bf16, bf16}, Types{"bf16_to_f16", bf16, bf16, f16},
                         Types{"e4m3_to_bf16", e4m3, e4m3, bf16}, Types{"e4m3", e4m3, e4m3, e4m3},
                         Types{"f16_q_e4m3_kv", f16, e4m3, f16}, Types{"bf16_q_e4m3_kv", bf16, e4m3, bf16},
                         Types{"f16_to_e4m3", f16, f16, e4m3}}) {
    s = base({113, 31}, {150, 31});
    s.q_dtype = t.q, s.kv_dtype = t.kv, s.out_dtype = t.out;
    add(std::string("dtypes_") + t.name, s);
  }
  s = base({40, 9}, {60, 9});
  s.out_dtype = e4m3, s.bmm2_scale = 900.0f;
  add("e4m3_out_saturates", s);
  s = base({113, 31, 1}, {150, 31, 5});
  s.out_dtype = CTXATTN_DTYPE_NVFP4, s.o_sf_scale = 2.5f, s.scale_start_index = 5;
  add("nvfp4", s);
  s.q_dtype = s.kv_dtype = e4m3, s.scale_start_index = 200, s.head_dim = 128, s.extra_rows = 3;
  add("nvfp4_e4m3_offset_tile", s);
  for (ctxattn_kv_layout_t layout : {CTXATTN_KV_LAYOUT_HND, CTXATTN_KV_LAYOUT_NHD}) {
    for (KvForm form : {KvForm::kTuple, KvForm::kOneTensor, KvForm::kShared}) {
      s = base({50, 17}, {77, 40});
      s.kv_layout = layout, s.kv_form = form;
      s.kv_pad = 8;
      add(std::string(layout == CTXATTN_KV_LAYOUT_HND ? "hnd" : "nhd") + "_form" + std::to_string(static_cast<int>(form)), s);
    }
  }
  s = base({31, 8}, {45, 8});
  s.q_pad = 5, s.out_pad = 3, s.lse_pad = 2, s.kv_pad = 1, s.extra_rows = 4;
  add("strided_everything", s);
  s.out_dtype = CTXATTN_DTYPE_NVFP4;
  add("strided_nvfp4", s);
  s = base({30, 12}, {42, 12});
  s.scale_pointers = true, s.bmm1_scale = -0.2f, s.bmm2_scale = 1.7f;
  add("scale_pointers_negative_bmm1", s);
  s = base({64, 200}, {2064, 1200});
  add("chunked_prefill_long_prefix", s);
  s = base({64, 20}, {64, 90});
  s.input_scale = 6.0f;  // large logits: exercises the running-max rescaling
  add("peaked_softmax", s);
  return c;
}

class NamedSweep : public ::testing::TestWithParam<NamedCase> {};

TEST_P(NamedSweep, FastMatchesReference) {
  PagedProblem pb(GetParam().spec);
  expect_fast_matches_reference(pb);
}

INSTANTIATE_TEST_SUITE_P(Cpu, NamedSweep, ::testing::ValuesIn(named_cases()),
                         [](const ::testing::TestParamInfo<NamedCase>& info) { return info.param.name; });

// Every alignment of a band edge against the 64-key tiles and the query blocks: windows from
// none to past a tile, cached prefixes around tile sizes.
TEST(CpuBandEdges, EveryWindowAndPrefix) {
  for (int32_t prefix : {0, 1, 31, 63, 64, 65}) {
    for (int32_t window = -1; window < 130; ++window) {
      ProblemSpec s = base({130}, {130 + prefix});
      s.num_qo_heads = 2, s.num_kv_heads = 1, s.head_dim = 16, s.window_left = window;
      s.seed = static_cast<uint64_t>(prefix * 1000 + window + 1);
      PagedProblem pb(s);
      SCOPED_TRACE("prefix " + std::to_string(prefix) + ", window_left " + std::to_string(window));
      expect_fast_matches_reference(pb);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// A random problem mixing every feature, kept small enough for the reference loops.
ProblemSpec random_spec(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](auto list) { return list[rng() % list.size()]; };
  const ctxattn_dtype_t f16 = CTXATTN_DTYPE_FLOAT16, bf16 = CTXATTN_DTYPE_BFLOAT16, e4m3 = CTXATTN_DTYPE_FLOAT8_E4M3;
  ProblemSpec s;
  s.seed = seed;
  const std::vector<std::vector<ctxattn_dtype_t>> inputs = {{bf16, bf16}, {f16, f16}, {e4m3, e4m3}, {f16, e4m3}, {bf16, e4m3}};
  const auto in = pick(inputs);
  s.q_dtype = in[0], s.kv_dtype = in[1];
  s.head_dim = pick(std::vector<int>{64, 128, 256, 40, 512, 8, 24, 96});
  s.out_dtype = pick(std::vector<ctxattn_dtype_t>{f16, bf16, e4m3, CTXATTN_DTYPE_NVFP4});
  if (s.out_dtype == CTXATTN_DTYPE_NVFP4 && s.head_dim % 16 != 0) s.out_dtype = bf16;
  s.num_kv_heads = pick(std::vector<int>{1, 2, 3});
  s.num_qo_heads = s.num_kv_heads * pick(std::vector<int>{1, 2, 4, 5, 8});
  s.page_size = pick(std::vector<int>{1, 2, 16, 64, 128, 1024});
  s.kv_layout = rng() % 2 ? CTXATTN_KV_LAYOUT_HND : CTXATTN_KV_LAYOUT_NHD;
  s.kv_form = pick(std::vector<KvForm>{KvForm::kTuple, KvForm::kOneTensor, KvForm::kShared});
  s.causal = rng() % 7 != 0;
  if (s.causal && rng() % 3 == 0) s.window_left = pick(std::vector<int>{0, 1, 7, 63, 64, 200});
  s.with_sinks = rng() % 5 < 2;
  s.with_lse = rng() % 5 < 3;
  s.scale_pointers = rng() % 3 == 0;
  s.bmm2_scale = pick(std::vector<float>{1.0f, 0.5f, 2.0f});
  s.q_pad = pick(std::vector<int>{0, 0, 3, 16});
  s.out_pad = pick(std::vector<int>{0, 0, 2});
  s.kv_pad = pick(std::vector<int>{0, 0, 8});
  s.lse_pad = pick(std::vector<int>{0, 1});
  s.extra_rows = pick(std::vector<int>{0, 0, 2});
  s.o_sf_scale = pick(std::vector<float>{1.0f, 4.0f, 0.25f});
  s.scale_start_index = pick(std::vector<int>{0, 3, 130});
  const int batch = 1 + static_cast<int>(rng() % 5);
  for (int b = 0; b < batch; ++b) {
    const int32_t q = pick(std::vector<int>{0, 1, 17, 113, 239, 799});
    const int32_t extra = pick(std::vector<int>{0, 1, 5, 64, 300});
    s.q_lens.push_back(q);
    s.kv_lens.push_back(s.causal ? q + extra : pick(std::vector<int>{0, 1, 17, 113, 239}));
  }
  // Budget of the reference loops: shrink the longest request until the pair count fits.
  auto cost = [&] {
    double c = 0;
    for (size_t b = 0; b < s.q_lens.size(); ++b) {
      const double keys = s.window_left >= 0 ? std::min(s.kv_lens[b], s.window_left + 1) : s.kv_lens[b];
      c += static_cast<double>(s.q_lens[b]) * keys * s.num_qo_heads * s.head_dim;
    }
    return c;
  };
  while (cost() > 6e7) {
    const size_t b = std::max_element(s.q_lens.begin(), s.q_lens.end()) - s.q_lens.begin();
    s.kv_lens[b] = std::max(0, s.kv_lens[b] - (s.q_lens[b] - s.q_lens[b] / 3));
    s.q_lens[b] /= 3;
  }
  return s;
}

class RandomSweep : public ::testing::TestWithParam<int> {};

TEST_P(RandomSweep, FastMatchesReference) {
  PagedProblem pb(random_spec(1000 + GetParam()));
  expect_fast_matches_reference(pb);
}

INSTANTIATE_TEST_SUITE_P(Cpu, RandomSweep, ::testing::Range(0, 96));

// The fallback kernels, forced through CTXATTN_CPU_ISA (a ceiling: on a CPU without an
// instruction set the table below it runs, which is still a valid comparison).
class IsaSweep : public ::testing::TestWithParam<const char*> {};

TEST_P(IsaSweep, FastMatchesReference) {
  const ScopedIsa isa(GetParam());
  ProblemSpec a = base({113, 17, 0, 1}, {200, 17, 4, 1});
  a.q_dtype = a.kv_dtype = a.out_dtype = CTXATTN_DTYPE_FLOAT16;
  a.head_dim = 40, a.num_qo_heads = 10, a.num_kv_heads = 2, a.window_left = 50, a.with_sinks = true;
  ProblemSpec b = base({239, 64}, {300, 64});
  b.kv_layout = CTXATTN_KV_LAYOUT_NHD, b.page_size = 1, b.head_dim = 128;
  ProblemSpec c = base({100, 5}, {100, 5});
  c.q_dtype = c.kv_dtype = CTXATTN_DTYPE_FLOAT8_E4M3, c.out_dtype = CTXATTN_DTYPE_NVFP4, c.causal = false;
  for (const ProblemSpec& s : {a, b, c}) {
    PagedProblem pb(s);
    expect_fast_matches_reference(pb);
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, IsaSweep, ::testing::Values("scalar", "avx2", "avx512", "avx512_bf16"));

}  // namespace
}  // namespace ctxattn_test
