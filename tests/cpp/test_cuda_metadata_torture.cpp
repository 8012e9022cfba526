// GPU metadata torture (SPEC section 5: device metadata can hold any 32-bit value at all). Every
// metadata array -- cum_seq_lens_q, seq_lens as int32 and as uint32, block_tables -- gets the
// 32-bit extremes, their neighbours (+-1, +-T, +-num_pages, max_kv_len +- 1) and random values,
// alone and mixed with honest requests, for every page size and head dim, on every GPU backend
// (a backend that reports UNSUPPORTED for a shape is listed as not available, never as passed).
// After each call:
//   - the call succeeded and the device is healthy (a fault would end the CUDA context);
//   - the guard bytes around out, lse, the nvfp4 scales and the workspace are intact;
//   - out, lse and the scales changed only in rows that some request's span covers, the span
//     being the clamped one every GPU backend derives (cuda/common/request.cuh, mirrored here);
//   - every honest request whose rows no lying request covers matches the CPU reference;
// and once per shape, the query and the KV cache are still as uploaded.
//
// Compiled only in CUDA builds; skips without a GPU. CTXATTN_GPU_TORTURE=<k> runs every k-th case
// of each family, a different subset on each shape, so that every case still runs somewhere (the
// GPU suite's compute-sanitizer step uses it).
#include <gtest/gtest.h>

#if defined(CTXATTN_TEST_CUDA)

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_harness.h"
#include "metadata_torture_cases.h"

namespace ctxattn_test {
namespace {

using namespace torture;  // the cases (metadata_torture_cases.h)

struct GpuBackend {
  ctxattn_backend_t code;
  const char* name;
  const char* grid_ctas;  // CTXATTN_SM90_GRID_CTAS for its calls (nullptr: unset)
};
// The Hopper kernel twice: with its own grid, and with a grid of 3 CTAs walking the work items
// striped (each CTA's pipelines, Q regions and row tables carried from item to item).
constexpr int kNumBackends = 3;
constexpr GpuBackend kGpuBackends[kNumBackends] = {{CTXATTN_BACKEND_CUDA_PORTABLE, "cuda-portable", nullptr},
                                                   {CTXATTN_BACKEND_CUDA_SM90, "cuda-sm90", nullptr},
                                                   {CTXATTN_BACKEND_CUDA_SM90, "cuda-sm90-striped", "3"}};

// Sets CTXATTN_SM90_GRID_CTAS for a backend's calls while in scope.
class GridCap {
 public:
  explicit GridCap(const GpuBackend& b) : set_(b.grid_ctas != nullptr) {
    if (set_) setenv("CTXATTN_SM90_GRID_CTAS", b.grid_ctas, 1);
  }
  ~GridCap() {
    if (set_) unsetenv("CTXATTN_SM90_GRID_CTAS");
  }
  GridCap(const GridCap&) = delete;
  GridCap& operator=(const GridCap&) = delete;

 private:
  bool set_;
};

constexpr uint8_t kGuardByte = 0x5A;
constexpr uint8_t kPoisonByte = 0xFF;  // NaN in every output dtype, e4m3 scales and fp32 lse
constexpr size_t kGuardBytes = 16 << 10;
constexpr int kMaxReportedFailures = 20;

// ---- shapes ----

struct Shape {
  int head_dim;
  int page_size;
  bool fp8_nvfp4;  // e4m3 query and KV, nvfp4 output (scales in play); else bf16 throughout
  bool long_kv = false;  // honest requests 0 and 6 over 9001 / 12016 keys: split-KV in play
  bool kv8 = false;      // bf16 query over an e4m3 cache, bf16 output (the widening paths)
  bool separate = false; // [B, 2, M] tables: the liars' V ids lie too (row b spans K's and V's)
  bool kv4 = false;      // e4m3 query over an NVFP4 cache (codes and block-scale pools), bf16 output
  bool skip = false;     // skip-softmax's vote (factor 1e-30: nothing skipped, results dense)
};

// Every head dim and page size the backends build, with bf16; the nvfp4 output on a spread of page
// sizes (its scale writes depend on rows, not pages).
std::vector<Shape> shapes() {
  std::vector<Shape> list;
  for (int d : {64, 128, 256}) {
    for (int n = 1; n <= 1024; n *= 2) list.push_back({d, n, false});
  }
  for (int d : {64, 128, 256}) {
    for (int n : {1, 16, 128, 1024}) list.push_back({d, n, true});
  }
  // Long KV: the calls can split (max_kv_len >= 8192), so lying lengths reach the split plan,
  // the partial slots and the counters in the workspace.
  list.push_back({64, 64, false, true});
  list.push_back({128, 16, false, true});
  list.push_back({256, 32, false, true});
  list.push_back({128, 16, true, true});
  // bf16 queries over an e4m3 cache: the kernels that widen K/V after loading them.
  list.push_back({64, 8, false, false, true});
  list.push_back({128, 16, false, false, true});
  list.push_back({256, 64, false, false, true});
  list.push_back({128, 32, false, true, true});
  // Separate K / V page indices: a liar's row covers its K and its V ids.
  list.push_back({64, 16, false, false, false, true});
  list.push_back({128, 1, false, false, false, true});
  list.push_back({128, 64, true, true, false, true});
  // NVFP4 caches: lying ids and lengths reach the block-scale pools as well as the codes.
  list.push_back({64, 16, false, false, false, false, true});
  list.push_back({128, 4, false, false, false, true, true});
  list.push_back({256, 64, false, false, false, false, true});
  list.push_back({128, 16, false, true, false, true, true});
  // Skip-softmax's vote (the sm90 kernels compiled with it), long KV so the split forms run too.
  list.push_back({128, 16, false, false, false, false, false, true});
  list.push_back({64, 64, false, true, false, false, false, true});
  list.push_back({256, 32, true, false, false, false, false, true});
  return list;
}

std::string describe(const Shape& s) {
  return "D=" + std::to_string(s.head_dim) + " N=" + std::to_string(s.page_size) +
         (s.fp8_nvfp4 ? " e4m3->nvfp4" : s.kv8 ? " bf16 over e4m3 KV" : " bf16") + (s.long_kv ? " long KV" : "") +
         (s.separate ? " separate idx" : "") + (s.kv4 ? " e4m3 over NVFP4 KV" : "") + (s.skip ? " skip vote" : "");
}

ProblemSpec spec_for(const Shape& shape, uint64_t seed) {
  ProblemSpec s;
  s.q_lens = kQLens;
  s.kv_lens = kKvLens;
  if (shape.long_kv) {
    s.kv_lens[0] = 9001;
    s.kv_lens[6] = 12016;
  }
  s.num_qo_heads = 4;
  s.num_kv_heads = 2;
  s.head_dim = shape.head_dim;
  s.page_size = shape.page_size;
  s.with_lse = true;
  s.lse_pad = 3;
  s.extra_rows = 3;
  s.extra_pages = 3;
  s.extra_table_cols = 2;
  s.seed = seed;
  if (shape.fp8_nvfp4) {
    s.q_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
    s.kv_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
    s.out_dtype = CTXATTN_DTYPE_NVFP4;
    s.scale_start_index = 5;
  }
  if (shape.kv8) s.kv_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
  if (shape.kv4) s.q_dtype = CTXATTN_DTYPE_FLOAT8_E4M3, s.kv_dtype = CTXATTN_DTYPE_NVFP4;
  if (shape.skip) s.skip_factor = 1e-30f;
  s.separate_kv_idx = shape.separate;
  return s;
}

// ---- device buffers with guards ----

// `bytes` of interior with kGuardBytes of kGuardByte on each side.
struct Guarded {
  uint8_t* base = nullptr;
  size_t bytes = 0;
  uint8_t* inner() const { return base + kGuardBytes; }
  size_t total() const { return bytes + 2 * kGuardBytes; }
};

bool allocate(Guarded* g, size_t bytes) {
  g->bytes = bytes;
  void* p = nullptr;
  if (cudaMalloc(&p, g->total()) != cudaSuccess) return false;
  g->base = static_cast<uint8_t*>(p);
  return cudaMemset(g->base, kGuardByte, g->total()) == cudaSuccess;
}

// Interior back into `host` (when given); "" when both guards are intact.
std::string download_checking_guards(const Guarded& g, const char* name, uint8_t* host) {
  std::vector<uint8_t> all(g.total());
  if (cudaMemcpy(all.data(), g.base, all.size(), cudaMemcpyDeviceToHost) != cudaSuccess) {
    return std::string(name) + ": download failed";
  }
  for (size_t i = 0; i < kGuardBytes; ++i) {
    if (all[i] != kGuardByte) return std::string(name) + ": guard byte " + num(kGuardBytes - i) + " before it was written";
    if (all[kGuardBytes + g.bytes + i] != kGuardByte) {
      return std::string(name) + ": guard byte " + num(i) + " past its end was written";
    }
  }
  if (host != nullptr) std::memcpy(host, all.data() + kGuardBytes, g.bytes);
  return "";
}

// One shape: the CPU reference on honest metadata, the problem on the device with out, lse,
// scales and one workspace per backend in guarded buffers.
struct Rig {
  Shape shape;
  std::unique_ptr<PagedProblem> want, got;
  std::unique_ptr<DeviceProblem> dev;
  Guarded out, lse, scale;
  Guarded workspace[kNumBackends];
  std::string unavailable[kNumBackends];  // why a backend does not take this shape ("" = it does)
  Sizes sizes;
  std::string error;  // set when the rig could not be built

  ~Rig() {
    for (Guarded* g : {&out, &lse, &scale, &workspace[0], &workspace[1]}) {
      if (g->base != nullptr) cudaFree(g->base);
    }
  }
};

std::unique_ptr<Rig> make_rig(const Shape& shape, uint64_t seed) {
  auto r = std::make_unique<Rig>();
  r->shape = shape;
  const ProblemSpec spec = spec_for(shape, seed);
  r->want = std::make_unique<PagedProblem>(spec);
  if (run_cpu_reference(*r->want) != CTXATTN_STATUS_OK) {
    r->error = std::string("CPU reference: ") + ctxattn_last_error();
    return r;
  }
  r->got = std::make_unique<PagedProblem>(spec);
  r->dev = std::make_unique<DeviceProblem>(*r->got);
  PagedProblem& g = *r->got;
  const bool nvfp4 = shape.fp8_nvfp4;
  if (!r->dev->ok() || !allocate(&r->out, g.out.size()) || !allocate(&r->lse, g.lse.size() * sizeof(float)) ||
      (nvfp4 && !allocate(&r->scale, g.out_scale.size()))) {
    r->error = "device allocation failed";
    return r;
  }
  ctxattn_args_t& a = r->dev->args;
  a.out = r->out.inner();
  a.lse = reinterpret_cast<float*>(r->lse.inner());
  if (nvfp4) a.out_scale = r->scale.inner();
  a.check_metadata = 0;  // lies are computed, not reported, whatever CTXATTN_CHECK_METADATA says
  for (int bi = 0; bi < kNumBackends; ++bi) {
    ctxattn_args_t probe = a;
    probe.backend = kGpuBackends[bi].code;
    ctxattn_backend_t chosen = CTXATTN_BACKEND_AUTO;
    size_t ws = 0;
    const ctxattn_status_t st = ctxattn_select_backend(&probe, &chosen);
    if (st == CTXATTN_STATUS_UNSUPPORTED) {
      r->unavailable[bi] = ctxattn_last_error();
      continue;
    }
    if (st != CTXATTN_STATUS_OK) {
      r->error = std::string(kGpuBackends[bi].name) + ": select_backend: " + ctxattn_last_error();
      return r;
    }
    if (chosen != probe.backend) {
      r->unavailable[bi] = std::string("the call would run on ") + ctxattn_backend_name(chosen);
      continue;
    }
    if (ctxattn_workspace_size(&probe, &ws) != CTXATTN_STATUS_OK) {
      r->error = std::string(kGpuBackends[bi].name) + ": workspace_size: " + ctxattn_last_error();
      return r;
    }
    // Zeroed once, as the contract asks; every call after that reuses it as an engine would.
    if (!allocate(&r->workspace[bi], std::max<size_t>(ws, 16)) ||
        cudaMemset(r->workspace[bi].inner(), 0, r->workspace[bi].bytes) != cudaSuccess) {
      r->error = "device allocation failed";
      return r;
    }
  }
  r->sizes = Sizes{g.num_tokens(), g.args.num_pages, g.args.max_kv_len, spec.page_size, g.args.block_tables_stride,
                   Metadata{g.cu_q, g.seq_lens, g.block_tables, false},
                   shape.separate ? static_cast<int64_t>(g.args.block_tables_kv_stride) : 0};
  return r;
}

// Out / lse / scale bytes that no allowed row owns must keep the poison.
std::string stray_writes(const PagedProblem& pb, const std::vector<bool>& allowed) {
  const ProblemSpec& s = pb.spec();
  const bool nvfp4 = s.out_dtype == CTXATTN_DTYPE_NVFP4;
  const int64_t esize = static_cast<int64_t>(dtype_size(s.out_dtype));
  const int64_t row_bytes = (nvfp4 ? s.head_dim / 2 : s.head_dim) * esize;
  const int64_t T = pb.num_tokens();
  std::vector<bool> owned(pb.out.size(), false);
  for (int64_t t = 0; t < T; ++t) {
    if (!allowed[t]) continue;
    for (int32_t h = 0; h < s.num_qo_heads; ++h) {
      const int64_t first = pb.out_offset(t, h, 0) * esize;
      std::fill(owned.begin() + first, owned.begin() + first + row_bytes, true);
    }
  }
  for (size_t i = 0; i < pb.out.size(); ++i) {
    if (!owned[i] && pb.out[i] != kPoisonByte) {
      return "out byte " + num(static_cast<int64_t>(i)) + " (token row " +
             num(static_cast<int64_t>(i) / (pb.args.out_stride_token * esize)) + ") written, outside every request's rows";
    }
  }
  std::vector<bool> lse_owned(pb.lse.size(), false);
  for (int64_t t = 0; t < T; ++t) {
    for (int32_t h = 0; allowed[t] && h < s.num_qo_heads; ++h) {
      lse_owned[t * pb.args.lse_stride_token + h * pb.args.lse_stride_head] = true;
    }
  }
  for (size_t i = 0; i < pb.lse.size(); ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &pb.lse[i], sizeof(bits));
    if (!lse_owned[i] && bits != 0xFFFFFFFFu) return "lse element " + num(static_cast<int64_t>(i)) + " written, outside every request's rows";
  }
  if (nvfp4) {
    const int64_t cols = static_cast<int64_t>(s.num_qo_heads) * s.head_dim / 16;
    std::vector<bool> scale_owned(pb.out_scale.size(), false);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t c = 0; allowed[t] && c < cols; ++c) scale_owned[swizzled_scale_byte(s.scale_start_index + t, c, cols)] = true;
    }
    for (size_t i = 0; i < pb.out_scale.size(); ++i) {
      if (!scale_owned[i] && pb.out_scale[i] != kPoisonByte) {
        return "out_scale byte " + num(static_cast<int64_t>(i)) + " written, outside every request's rows";
      }
    }
  }
  return "";
}

struct Tally {
  int64_t calls = 0;
  int64_t honest_checked = 0;  // honest requests compared with the reference
  int64_t shapes_run = 0;
  std::vector<std::string> unavailable;  // "shape: reason"
};

// One call with the metadata `m` on backend bi; "" when every check holds, else what failed.
// *fatal is set when the device itself failed (nothing after that can be trusted).
std::string run_case(Rig& r, int bi, const Metadata& m, Tally* tally, bool* fatal) {
  PagedProblem& g = *r.got;
  DeviceProblem& dev = *r.dev;
  ctxattn_args_t a = dev.args;
  a.backend = kGpuBackends[bi].code;
  a.seq_lens_dtype = m.seq_lens_uint32 ? CTXATTN_DTYPE_UINT32 : CTXATTN_DTYPE_INT32;
  a.workspace = r.workspace[bi].inner();
  a.workspace_size = r.workspace[bi].bytes;
  *fatal = true;
  for (Guarded* o : {&r.out, &r.lse, &r.scale}) {
    if (o->base == nullptr) continue;
    if (cudaMemset(o->inner(), kPoisonByte, o->bytes) != cudaSuccess) return "poisoning the outputs failed";
  }
  const std::pair<const char*, const std::vector<int32_t>*> uploads[] = {
      {"cum_seq_lens_q", &m.cu_q}, {"seq_lens", &m.seq_lens}, {"block_tables", &m.tables}};
  for (const auto& u : uploads) {
    if (cudaMemcpy(dev.device(u.first), u.second->data(), u.second->size() * sizeof(int32_t), cudaMemcpyHostToDevice) !=
        cudaSuccess) {
      return std::string("uploading ") + u.first + " failed";
    }
  }
  *fatal = false;
  const ctxattn_status_t st = ctxattn_batch_context_with_kv_cache(&a);
  if (st != CTXATTN_STATUS_OK) return std::string("call returned ") + ctxattn_status_string(st) + ": " + ctxattn_last_error();
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    *fatal = true;
    return std::string("device error after the call: ") + cudaGetErrorString(e);
  }
  ++tally->calls;

  std::string err = download_checking_guards(r.out, "out", g.out.data());
  if (err.empty()) err = download_checking_guards(r.lse, "lse", reinterpret_cast<uint8_t*>(g.lse.data()));
  if (err.empty() && r.scale.base != nullptr) err = download_checking_guards(r.scale, "out_scale", g.out_scale.data());
  if (err.empty()) err = download_checking_guards(r.workspace[bi], "workspace", nullptr);
  if (!err.empty()) return err;

  const Sizes& z = r.sizes;
  const int64_t T = z.num_tokens;
  const int B = static_cast<int>(kQLens.size());
  std::vector<Rows> rows(B);
  std::vector<bool> allowed(T, false);
  for (int b = 0; b < B; ++b) {
    rows[b] = request_rows(m, b, T, a.max_q_len);
    for (int64_t t = rows[b].begin; t < rows[b].end; ++t) allowed[t] = true;
  }
  err = stray_writes(g, allowed);
  if (!err.empty()) return err;

  std::vector<bool> checked(T, false);
  for (int b = 0; b < B; ++b) {
    if (rows[b].empty() || !same_request(m, z.honest, z, b)) continue;
    bool covered = false;
    for (int c = 0; c < B; ++c) covered = covered || (c != b && rows[c].overlaps(rows[b]));
    if (covered) continue;  // a liar may write these rows too
    for (int64_t t = rows[b].begin; t < rows[b].end; ++t) checked[t] = true;
    ++tally->honest_checked;
  }
  err = compare_outputs(g, *r.want, [&](int64_t t) { return checked[t]; });
  return err.empty() ? "" : "honest request differs from the CPU reference: " + err;
}

// The query and the KV cache as the rig uploaded them ("" when unchanged).
std::string inputs_unchanged(Rig& r) {
  for (const HostBuffer& b : r.got->buffers()) {
    const std::string name = b.name;
    if (name != "query" && name != "k_cache" && name != "v_cache") continue;
    std::vector<uint8_t> now(b.bytes);
    if (b.bytes == 0) continue;
    if (cudaMemcpy(now.data(), r.dev->device(name), b.bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
      return name + ": download failed";
    }
    if (std::memcmp(now.data(), b.data, b.bytes) != 0) return name + " was written";
  }
  return "";
}

int torture_stride() {
  const char* env = std::getenv("CTXATTN_GPU_TORTURE");
  const int k = env != nullptr ? std::atoi(env) : 1;
  return k > 0 ? k : 1;
}

class CudaTorture : public ::testing::Test {
 protected:
  static void TearDownTestSuite() { rigs().clear(); }

  static std::map<int, std::unique_ptr<Rig>>& rigs() {
    static std::map<int, std::unique_ptr<Rig>> cache;
    return cache;
  }

  // The rig of shape i, built on first use and kept for the other families.
  static Rig& rig(int i, const Shape& shape) {
    auto& cache = rigs();
    auto it = cache.find(i);
    if (it == cache.end()) it = cache.emplace(i, make_rig(shape, 500 + i)).first;
    return *it->second;
  }

  // Every case of `family` on every shape and GPU backend.
  void torture(CaseFamily family, uint32_t family_seed) {
    CTXATTN_REQUIRE_GPU();
    const int stride = torture_stride();
    const std::vector<Shape> list = shapes();
    Tally tally[kNumBackends];
    int failures = 0;
    for (int si = 0; si < static_cast<int>(list.size()); ++si) {
      Rig& r = rig(si, list[si]);
      ASSERT_EQ(r.error, "") << describe(list[si]);
      std::mt19937 rng(family_seed * 1000 + si);
      const std::vector<Case> cases = family(r.sizes, rng);
      for (int bi = 0; bi < kNumBackends; ++bi) {
        if (!r.unavailable[bi].empty()) {
          tally[bi].unavailable.push_back(describe(list[si]) + ": " + r.unavailable[bi]);
          continue;
        }
        ++tally[bi].shapes_run;
        const GridCap cap(kGpuBackends[bi]);
        for (int ci = 0; ci < static_cast<int>(cases.size()); ++ci) {
          if ((ci + si) % stride != 0) continue;
          Metadata m = r.sizes.honest;
          cases[ci].apply(m);
          bool fatal = false;
          const std::string err = run_case(r, bi, m, &tally[bi], &fatal);
          if (err.empty()) continue;
          ADD_FAILURE() << kGpuBackends[bi].name << ", " << describe(list[si]) << ", " << cases[ci].name << ": " << err;
          if (fatal || ++failures >= kMaxReportedFailures) FAIL() << "stopping after this failure";
        }
        const std::string inputs = inputs_unchanged(r);
        ASSERT_EQ(inputs, "") << kGpuBackends[bi].name << ", " << describe(list[si]);
      }
    }
    int64_t calls = 0;
    for (int bi = 0; bi < kNumBackends; ++bi) {
      const Tally& t = tally[bi];
      std::cout << "[ torture  ] " << kGpuBackends[bi].name << ": " << t.calls << " calls on " << t.shapes_run
                << " shapes, " << t.honest_checked << " honest requests checked";
      if (!t.unavailable.empty()) {
        std::cout << "; not available on " << t.unavailable.size() << " shapes (first: " << t.unavailable[0] << ")";
      }
      std::cout << "\n";
      RecordProperty(std::string(kGpuBackends[bi].name) + "_calls", static_cast<int>(t.calls));
      RecordProperty(std::string(kGpuBackends[bi].name) + "_unavailable_shapes", static_cast<int>(t.unavailable.size()));
      if (t.calls > 0 && family != alone_cases) {
        EXPECT_GT(t.honest_checked, 0) << kGpuBackends[bi].name << ": no honest request was ever compared";
      }
      calls += t.calls;
    }
    if (calls == 0) GTEST_SKIP() << "no GPU backend takes these problems (see the lines above)";
  }
};

TEST_F(CudaTorture, CumSeqLensQ) { torture(cum_seq_lens_q_cases, 1); }
TEST_F(CudaTorture, SeqLensInt32AndUint32) { torture(seq_lens_cases, 2); }
TEST_F(CudaTorture, BlockTables) { torture(block_table_cases, 3); }
TEST_F(CudaTorture, MixedLiesBesideHonestRequests) { torture(mixed_cases, 4); }
TEST_F(CudaTorture, EveryArrayAlone) { torture(alone_cases, 5); }

// Check mode on each GPU backend: a uint32 seq_lens value above INT32_MAX is refused with the CPU
// check's message, which quotes it as the unsigned number it is; nothing is written.
TEST_F(CudaTorture, CheckModeQuotesUint32SeqLensUnsigned) {
  CTXATTN_REQUIRE_GPU();
  ProblemSpec s = spec_for({128, 16, false}, 77);
  auto corrupt = [](PagedProblem& p) {
    p.args.seq_lens_dtype = CTXATTN_DTYPE_UINT32;
    p.seq_lens[5] = static_cast<int32_t>(0xFFFFFFF0u);
  };
  PagedProblem cpu(s);
  corrupt(cpu);
  ctxattn_args_t ca = cpu.args;
  ca.backend = CTXATTN_BACKEND_CPU_REFERENCE;
  ASSERT_EQ(ctxattn_batch_context_with_kv_cache(&ca), CTXATTN_STATUS_INVALID_METADATA);
  const std::string cpu_message = ctxattn_last_error();
  ASSERT_NE(cpu_message.find("seq_lens[5] = 4294967280"), std::string::npos) << cpu_message;

  int ran = 0;
  for (const GpuBackend& backend : kGpuBackends) {
    const GridCap cap(backend);
    PagedProblem gpu(s);
    corrupt(gpu);
    gpu.poison_outputs();
    DeviceProblem dev(gpu);
    ASSERT_TRUE(dev.ok());
    dev.args.backend = backend.code;
    dev.args.check_metadata = 1;
    const ctxattn_status_t st = dev.run();
    if (st == CTXATTN_STATUS_UNSUPPORTED) {
      std::cout << "[ torture  ] " << backend.name << ": not available: " << ctxattn_last_error() << "\n";
      continue;
    }
    ++ran;
    EXPECT_EQ(st, CTXATTN_STATUS_INVALID_METADATA) << backend.name;
    EXPECT_EQ(std::string(ctxattn_last_error()), cpu_message) << backend.name;
    const std::vector<uint8_t> out_before = gpu.out;
    ASSERT_TRUE(dev.download());
    EXPECT_EQ(gpu.out, out_before) << backend.name << ": check mode wrote out";
  }
  if (ran == 0) GTEST_SKIP() << "no GPU backend available";
}

}  // namespace
}  // namespace ctxattn_test

#endif  // CTXATTN_TEST_CUDA
