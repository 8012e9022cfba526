// libFuzzer target over the C edge (CPU backend). Each input becomes one ctxattn_args_t with
// random sizes, strides, dtypes, flags and metadata contents. Buffers are allocated exactly as
// large as the declared shapes and strides say (so AddressSanitizer sees any read or write past
// them); when that would be too large, only validation is exercised. Properties checked:
//   - no crash, no sanitizer report;
//   - a failing call returns a known status with a message and leaves out / lse / scales /
//     workspace byte-for-byte unchanged;
//   - a successful call returns an empty message.
#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <initializer_list>
#include <vector>

#include "ctxattn/ctxattn.h"

namespace {

constexpr int64_t kMaxElements = int64_t{1} << 22;  // keeps one input well under a millisecond

template <typename T>
T pick(FuzzedDataProvider& f, std::initializer_list<T> values) {
  const size_t i = f.ConsumeIntegralInRange<size_t>(0, values.size() - 1);
  return *(values.begin() + i);
}

// Elements a strided view spans (largest offset + 1); -1 when it cannot be allocated.
int64_t extent(std::initializer_list<std::pair<int64_t, int64_t>> dims, int64_t inner) {
  __int128 off = inner > 0 ? inner : 1;
  for (const auto& d : dims) {
    if (d.first < 0 || d.second < 0) return 1;  // validation must reject; nothing may be read
    if (d.first > 0) off += static_cast<__int128>(d.first - 1) * d.second;
  }
  return off > kMaxElements ? -1 : static_cast<int64_t>(off);
}

// Enum fields receive out-of-range codes on purpose (the library must reject them). Loading such
// a value through the enum type is undefined behaviour in C++, so this harness writes and reads
// those fields as the int they hold.
template <typename E>
void set_code(E* field, int code) {
  static_assert(sizeof(E) == sizeof(int), "C enums are int-sized here");
  std::memcpy(field, &code, sizeof(int));
}
template <typename E>
int code_of(const E& field) {
  int code;
  std::memcpy(&code, &field, sizeof(int));
  return code;
}

int64_t element_size(int dtype) { return dtype == CTXATTN_DTYPE_FLOAT8_E4M3 || dtype == CTXATTN_DTYPE_NVFP4 ? 1 : 2; }

int64_t stride_for(FuzzedDataProvider& f, int64_t dense, bool plausible) {
  switch (f.ConsumeIntegralInRange<int>(0, plausible ? 47 : 5)) {
    case 0: return f.ConsumeIntegralInRange<int64_t>(-2, 300);
    case 1: return int64_t{1} << f.ConsumeIntegralInRange<int>(20, 62);
    case 2: case 3: case 4: return dense * 2;
    default: return dense;
  }
}

struct Buffer {
  std::vector<uint8_t> bytes;
  // A buffer of n bytes with random contents; NULL now and then when allow_null.
  void* make(int64_t n, FuzzedDataProvider& f, bool allow_null) {
    if (allow_null && f.ConsumeIntegralInRange<int>(0, 15) == 0) return nullptr;
    bytes.resize(static_cast<size_t>(n > 0 ? n : 1));
    for (auto& b : bytes) b = static_cast<uint8_t>(f.ConsumeIntegral<uint8_t>() | 0x01);
    return bytes.data();
  }
};

// Per-status counts of the full call, printed at exit when CTXATTN_FUZZ_STATS is set, so a run
// shows how many inputs reached the compute path.
std::array<long, 8> g_status_counts{};
void print_stats() {
  std::fprintf(stderr, "ctxattn_fuzz calls by status:");
  for (int s = 0; s < 8; ++s) {
    std::fprintf(stderr, " %s=%ld", ctxattn_status_string(static_cast<ctxattn_status_t>(s)), g_status_counts[s]);
  }
  std::fprintf(stderr, "\n");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (std::getenv("CTXATTN_FUZZ_STATS") != nullptr) std::atexit(print_stats);
  return 0;
}

// Draws one field: in a plausible input the valid value, except now and then; otherwise wild.
class Draw {
 public:
  Draw(FuzzedDataProvider& f, bool plausible) : f_(f), plausible_(plausible) {}
  template <typename T>
  T value(T valid, T wild) {
    const bool keep = plausible_ && f_.ConsumeIntegralInRange<int>(0, 47) != 0;
    return keep ? valid : wild;
  }

 private:
  FuzzedDataProvider& f_;
  bool plausible_;
};

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider f(data, size);
  // Most inputs are valid calls with at most a few fields or metadata entries gone wrong, so the
  // compute path and the metadata checks see as much traffic as the argument checks.
  const bool plausible = f.ConsumeIntegralInRange<int>(0, 9) < 8;
  Draw draw(f, plausible);
  const int B0 = f.ConsumeIntegralInRange<int>(1, 4), Hkv0 = f.ConsumeIntegralInRange<int>(1, 3);
  const int G0 = f.ConsumeIntegralInRange<int>(1, 5), D0 = pick<int>(f, {8, 16, 32, 48, 64});
  const int N0 = pick<int>(f, {1, 2, 4, 8, 16});
  std::vector<int32_t> q_lens(B0), kv_lens(B0);
  int T0 = 0, pages0 = 0, max_q0 = 0, max_kv0 = 0, max_pages0 = 0;
  for (int b = 0; b < B0; ++b) {
    q_lens[b] = f.ConsumeIntegralInRange<int32_t>(0, 12);
    kv_lens[b] = q_lens[b] + f.ConsumeIntegralInRange<int32_t>(0, 20);
    T0 += q_lens[b];
    max_q0 = std::max(max_q0, q_lens[b]);
    max_kv0 = std::max(max_kv0, kv_lens[b]);
    max_pages0 = std::max(max_pages0, (kv_lens[b] + N0 - 1) / N0);
    pages0 += (kv_lens[b] + N0 - 1) / N0;
  }
  const int P0 = pages0 + f.ConsumeIntegralInRange<int>(0, 3);

  ctxattn_args_t a;
  ctxattn_args_init(&a);
  set_code(&a.backend, draw.value<int>(pick<int>(f, {0, 1, 2}), pick<int>(f, {0, 0, 1, 2, 3, 7})));
  set_code(&a.device_type, draw.value<int>(CTXATTN_DEVICE_CPU, pick<int>(f, {0, 1, 5})));
  a.num_tokens = draw.value<int64_t>(T0 + f.ConsumeIntegralInRange<int>(0, 2), f.ConsumeIntegralInRange<int64_t>(-1, 48));
  a.num_qo_heads = draw.value<int32_t>(Hkv0 * G0, f.ConsumeIntegralInRange<int32_t>(-1, 10));
  a.num_kv_heads = draw.value<int32_t>(Hkv0, f.ConsumeIntegralInRange<int32_t>(-1, 5));
  a.head_dim = draw.value<int32_t>(D0, pick<int32_t>(f, {0, 8, 12, 16, 24, 32, 48, 64, 520}));
  a.page_size = draw.value<int32_t>(N0, pick<int32_t>(f, {0, 1, 2, 3, 4, 8, 16, 2048}));
  a.num_pages = draw.value<int64_t>(P0, f.ConsumeIntegralInRange<int64_t>(-1, 12));
  a.batch_size = draw.value<int32_t>(B0, f.ConsumeIntegralInRange<int32_t>(-1, 4));
  a.max_pages_per_seq = draw.value<int32_t>(max_pages0, f.ConsumeIntegralInRange<int32_t>(-1, 10));
  a.max_q_len = draw.value<int32_t>(max_q0, f.ConsumeIntegralInRange<int32_t>(-1, 48));
  a.max_kv_len = draw.value<int32_t>(max_kv0, f.ConsumeIntegralInRange<int32_t>(-1, 80));
  const auto any_dtype = [&] { return f.ConsumeIntegralInRange<int>(0, 7); };
  const int query_dtype = draw.value<int>(pick<int>(f, {0, 1, 2}), any_dtype());
  const int kv_dtype = draw.value<int>(f.ConsumeBool() ? query_dtype : CTXATTN_DTYPE_FLOAT8_E4M3, any_dtype());
  const bool nvfp4_ok = a.head_dim % 16 == 0;
  const int out_dtype = draw.value<int>(pick<int>(f, {0, 1, 2, nvfp4_ok ? 3 : 1}), any_dtype());
  set_code(&a.query_dtype, query_dtype);
  set_code(&a.kv_dtype, kv_dtype);
  set_code(&a.out_dtype, out_dtype);
  set_code(&a.kv_layout, draw.value<int>(pick<int>(f, {0, 1}), pick<int>(f, {0, 1, 2})));
  set_code(&a.seq_lens_dtype, draw.value<int>(pick<int>(f, {5, 6}), pick<int>(f, {5, 6, 4})));
  a.causal = draw.value<int32_t>(pick<int32_t>(f, {1, 1, 0}), pick<int32_t>(f, {1, 0, 2}));
  a.window_left = draw.value<int32_t>(a.causal == 1 && f.ConsumeBool() ? f.ConsumeIntegralInRange<int32_t>(0, 20) : -1,
                                f.ConsumeIntegralInRange<int32_t>(-2, 20));
  a.bmm1_scale = draw.value(0.125f, f.ConsumeFloatingPoint<float>());
  a.bmm2_scale = draw.value(1.5f, f.ConsumeFloatingPoint<float>());
  a.enable_pdl = draw.value<int32_t>(-1, f.ConsumeIntegralInRange<int32_t>(-2, 2));
  a.num_threads = draw.value<int32_t>(f.ConsumeIntegralInRange<int32_t>(0, 3), -1);
  a.check_metadata = draw.value<int32_t>(-1, f.ConsumeIntegralInRange<int32_t>(-2, 2));
  a.o_sf_scale = draw.value(2.0f, f.ConsumeFloatingPoint<float>());
  a.o_sf_vec_size = draw.value<int32_t>(16, pick<int32_t>(f, {16, 0, 32}));
  a.out_scale_start_index = draw.value<int64_t>(pick<int64_t>(f, {0, 0, 5}), pick<int64_t>(f, {0, 130, -1}));

  const int64_t T = a.num_tokens, Hq = a.num_qo_heads, Hkv = a.num_kv_heads, D = a.head_dim;
  const int64_t N = a.page_size, P = a.num_pages, B = a.batch_size, M = a.max_pages_per_seq;
  a.query_stride_head = stride_for(f, D, plausible);
  a.query_stride_token = stride_for(f, Hq * D, plausible);
  const bool hnd = code_of(a.kv_layout) == CTXATTN_KV_LAYOUT_HND;
  const int64_t dense1 = hnd ? N * D : Hkv * D, dense2 = D;
  for (int kv = 0; kv < 2; ++kv) {
    int64_t* s = kv ? a.v_strides : a.k_strides;
    s[2] = stride_for(f, dense2, plausible);
    s[1] = stride_for(f, dense1, plausible);
    s[0] = stride_for(f, Hkv * N * D * (kv == 0 && f.ConsumeBool() ? 2 : 1), plausible);
  }
  const int64_t out_row = out_dtype == CTXATTN_DTYPE_NVFP4 ? D / 2 : D;
  a.out_stride_head = stride_for(f, out_row, plausible);
  a.out_stride_token = stride_for(f, Hq * out_row, plausible);
  a.block_tables_stride = stride_for(f, M, plausible);
  a.lse_stride_head = stride_for(f, 1, plausible);
  a.lse_stride_token = stride_for(f, Hq, plausible);

  const bool shared_kv = f.ConsumeIntegralInRange<int>(0, 3) == 0;
  const int64_t q_n = extent({{T, a.query_stride_token}, {Hq, a.query_stride_head}}, D);
  const int64_t h_s_k = hnd ? a.k_strides[1] : a.k_strides[2], t_s_k = hnd ? a.k_strides[2] : a.k_strides[1];
  const int64_t h_s_v = hnd ? a.v_strides[1] : a.v_strides[2], t_s_v = hnd ? a.v_strides[2] : a.v_strides[1];
  const int64_t k_n = extent({{P, a.k_strides[0]}, {Hkv, h_s_k}, {N, t_s_k}}, D);
  const int64_t v_n = extent({{P, a.v_strides[0]}, {Hkv, h_s_v}, {N, t_s_v}}, D);
  const int64_t o_n = extent({{T, a.out_stride_token}, {Hq, a.out_stride_head}}, out_row);
  const int64_t l_n = extent({{T, a.lse_stride_token}, {Hq, a.lse_stride_head}}, 1);
  const int64_t bt_n = extent({{B, a.block_tables_stride}}, M);
  const bool can_run = q_n >= 0 && k_n >= 0 && v_n >= 0 && o_n >= 0 && l_n >= 0 && bt_n >= 0;

  Buffer q, k, v, bt, sl, cq, ckv, out, scale, lse, ws, sinks, s1, s2;
  const int64_t ws_bytes = draw.value<int64_t>(pick<int64_t>(f, {4096, 65536}), pick<int64_t>(f, {4096, 100, 0}));
  const int64_t sf_rows = (std::max<int64_t>(a.out_scale_start_index, 0) + std::max<int64_t>(T, 0) + 127) / 128 * 128;
  const int64_t sf_cols = (std::max<int64_t>(Hq * D, 0) / 16 + 3) / 4 * 4;
  const int64_t sf_need = sf_rows * sf_cols <= kMaxElements ? sf_rows * sf_cols : 16;
  const int64_t scale_bytes = draw.value<int64_t>(sf_need, pick<int64_t>(f, {512, 16, 0}));
  if (can_run) {
    a.query = q.make(q_n * element_size(query_dtype), f, !plausible);
    a.k_cache = k.make(k_n * element_size(kv_dtype), f, !plausible);
    a.v_cache = shared_kv ? a.k_cache : v.make(v_n * element_size(kv_dtype), f, !plausible);
    if (shared_kv) std::memcpy(a.v_strides, a.k_strides, sizeof(a.k_strides));
    // Metadata: in a plausible input, permuted pages and exact lengths with at most one lie;
    // otherwise random. The CPU backend must reject every lie, never follow it.
    std::vector<int32_t> perm(static_cast<size_t>(P0));
    for (int i = 0; i < P0; ++i) perm[i] = i;
    for (int i = P0 - 1; i > 0; --i) std::swap(perm[i], perm[f.ConsumeIntegralInRange<int>(0, i)]);
    auto* tables = static_cast<int32_t*>(bt.make(bt_n * 4, f, !plausible));
    if (tables) {
      for (int64_t i = 0; i < bt_n; ++i) tables[i] = f.ConsumeIntegralInRange<int32_t>(-2, 14);
      if (plausible && B == B0 && M >= max_pages0 && a.block_tables_stride >= M && bt_n >= (B - 1) * a.block_tables_stride + M) {
        int next = 0;
        for (int b = 0; b < B0; ++b)
          for (int j = 0; j < (kv_lens[b] + N0 - 1) / N0; ++j) tables[b * a.block_tables_stride + j] = perm[next++];
      }
    }
    a.block_tables = tables;
    auto* lens = static_cast<int32_t*>(sl.make(B > 0 ? B * 4 : 4, f, !plausible));
    if (lens) {
      for (int64_t i = 0; i < (B > 0 ? B : 1); ++i) {
        lens[i] = plausible && i < B0 ? kv_lens[i] : f.ConsumeIntegralInRange<int32_t>(-2, 90);
      }
    }
    a.seq_lens = lens;
    auto* cu = static_cast<int32_t*>(cq.make(B >= 0 ? (B + 1) * 4 : 4, f, !plausible));
    if (cu) {
      int32_t acc = plausible ? 0 : f.ConsumeIntegralInRange<int32_t>(-1, 2);
      for (int64_t i = 0; i <= (B > 0 ? B : 0); ++i) {
        cu[i] = acc;
        acc += plausible && i < B0 ? q_lens[i] : f.ConsumeIntegralInRange<int32_t>(-2, 24);
      }
    }
    if (plausible && f.ConsumeIntegralInRange<int>(0, 5) == 0) {
      const int32_t lie = pick<int32_t>(f, {-1, -7, 1 << 20, static_cast<int32_t>(P0), 200});
      switch (f.ConsumeIntegralInRange<int>(0, 2)) {
        case 0: if (tables && bt_n > 0) tables[f.ConsumeIntegralInRange<int64_t>(0, bt_n - 1)] = lie; break;
        case 1: if (lens && B > 0) lens[f.ConsumeIntegralInRange<int64_t>(0, B - 1)] = lie; break;
        default: if (cu && B > 0) cu[f.ConsumeIntegralInRange<int64_t>(0, B)] = lie; break;
      }
    }
    a.cum_seq_lens_q = cu;
    a.cum_seq_lens_kv = static_cast<const int32_t*>(ckv.make(B >= 0 ? (B + 1) * 4 : 4, f, !plausible));
    a.out = out.make(o_n * element_size(out_dtype), f, !plausible);
    a.out_scale = scale.make(scale_bytes, f, !plausible);
    a.out_scale_size_bytes = scale_bytes;
    a.lse = f.ConsumeBool() ? static_cast<float*>(lse.make(l_n * 4, f, false)) : nullptr;
    if (f.ConsumeIntegralInRange<int>(0, 3) == 0) {
      auto* sk = static_cast<float*>(sinks.make(Hq > 0 ? Hq * 4 : 4, f, false));
      for (int64_t i = 0; i < (Hq > 0 ? Hq : 1); ++i) sk[i] = static_cast<float>(f.ConsumeIntegralInRange<int>(-8, 8));
      a.sinks = sk;
    }
    if (f.ConsumeIntegralInRange<int>(0, 3) == 0) {
      a.bmm1_scale_ptr = static_cast<float*>(s1.make(4, f, false));
      *const_cast<float*>(a.bmm1_scale_ptr) = 0.5f;
    }
    if (f.ConsumeIntegralInRange<int>(0, 3) == 0) {
      a.bmm2_scale_ptr = static_cast<float*>(s2.make(4, f, false));
      *const_cast<float*>(a.bmm2_scale_ptr) = 2.0f;
    }
    a.workspace = ws.make(ws_bytes, f, !plausible);
    a.workspace_size = static_cast<size_t>(ws_bytes);
  }

  size_t need = 0;
  (void)ctxattn_workspace_size(&a, &need);
  const ctxattn_status_t vs = ctxattn_validate(&a);
  if (vs != CTXATTN_STATUS_OK && ctxattn_last_error()[0] == '\0') std::abort();
  if (!can_run) return 0;

  const std::vector<uint8_t> out0 = out.bytes, scale0 = scale.bytes, lse0 = lse.bytes, ws0 = ws.bytes;
  const ctxattn_status_t s = ctxattn_batch_context_with_kv_cache(&a);
  if (s < CTXATTN_STATUS_OK || s > CTXATTN_STATUS_INTERNAL_ERROR) std::abort();
  if (s == CTXATTN_STATUS_INTERNAL_ERROR) std::abort();  // every failure must be a named user error
  ++g_status_counts[s];
  if (s == CTXATTN_STATUS_OK) {
    if (ctxattn_last_error()[0] != '\0') std::abort();
  } else {
    if (ctxattn_last_error()[0] == '\0') std::abort();
    if (out.bytes != out0 || scale.bytes != scale0 || lse.bytes != lse0 || ws.bytes != ws0) std::abort();
  }
  return 0;
}
