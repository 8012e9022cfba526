// libFuzzer target over the C edge (CPU backend). Each input becomes one ctxattn_args_t with
// random sizes, strides, dtypes, flags and metadata contents. Buffers are allocated exactly as
// large as the declared shapes and strides say (so AddressSanitizer sees any read or write past
// them); when that would be too large, only validation is exercised. Properties checked:
//   - no crash, no sanitizer report;
//   - a failing call returns a known status with a message and leaves out / lse / scales /
//     workspace byte-for-byte unchanged;
//   - a successful call returns an empty message.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
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

int64_t element_size(int dtype) { return dtype == CTXATTN_DTYPE_FLOAT8_E4M3 || dtype == CTXATTN_DTYPE_NVFP4 ? 1 : 2; }

int64_t stride_for(FuzzedDataProvider& f, int64_t dense) {
  switch (f.ConsumeIntegralInRange<int>(0, 5)) {
    case 0: return f.ConsumeIntegralInRange<int64_t>(-2, 300);
    case 1: return int64_t{1} << f.ConsumeIntegralInRange<int>(20, 62);
    case 2: return dense * 2;
    default: return dense;
  }
}

struct Buffer {
  std::vector<uint8_t> bytes;
  void* make(int64_t n, FuzzedDataProvider& f, bool allow_null = true) {
    if (allow_null && f.ConsumeIntegralInRange<int>(0, 40) == 0) return nullptr;
    bytes.resize(static_cast<size_t>(n > 0 ? n : 1));
    for (auto& b : bytes) b = static_cast<uint8_t>(f.ConsumeIntegral<uint8_t>() | 0x01);
    return bytes.data();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider f(data, size);
  ctxattn_args_t a;
  ctxattn_args_init(&a);
  a.backend = static_cast<ctxattn_backend_t>(pick<int>(f, {0, 0, 1, 2, 3, 7}));
  a.device_type = static_cast<ctxattn_device_type_t>(pick<int>(f, {0, 0, 0, 0, 1, 5}));
  a.num_tokens = f.ConsumeIntegralInRange<int64_t>(-1, 48);
  a.num_qo_heads = f.ConsumeIntegralInRange<int32_t>(-1, 10);
  a.num_kv_heads = f.ConsumeIntegralInRange<int32_t>(-1, 5);
  a.head_dim = pick<int32_t>(f, {0, 8, 12, 16, 24, 32, 48, 64, 520});
  a.page_size = pick<int32_t>(f, {0, 1, 2, 3, 4, 8, 16, 2048});
  a.num_pages = f.ConsumeIntegralInRange<int64_t>(-1, 12);
  a.batch_size = f.ConsumeIntegralInRange<int32_t>(-1, 4);
  a.max_pages_per_seq = f.ConsumeIntegralInRange<int32_t>(-1, 10);
  a.max_q_len = f.ConsumeIntegralInRange<int32_t>(-1, 48);
  a.max_kv_len = f.ConsumeIntegralInRange<int32_t>(-1, 80);
  a.query_dtype = static_cast<ctxattn_dtype_t>(f.ConsumeIntegralInRange<int>(0, 7));
  a.kv_dtype = f.ConsumeBool() ? a.query_dtype : static_cast<ctxattn_dtype_t>(f.ConsumeIntegralInRange<int>(0, 7));
  a.out_dtype = f.ConsumeBool() ? a.query_dtype : static_cast<ctxattn_dtype_t>(f.ConsumeIntegralInRange<int>(0, 7));
  a.kv_layout = static_cast<ctxattn_kv_layout_t>(pick<int>(f, {0, 0, 1, 1, 2}));
  a.seq_lens_dtype = static_cast<ctxattn_dtype_t>(pick<int>(f, {5, 5, 6, 4}));
  a.causal = pick<int32_t>(f, {1, 1, 0, 2});
  a.window_left = f.ConsumeIntegralInRange<int32_t>(-2, 20);
  if (f.ConsumeBool()) a.window_left = -1;
  a.bmm1_scale = f.ConsumeBool() ? 0.125f : f.ConsumeFloatingPoint<float>();
  a.bmm2_scale = f.ConsumeBool() ? 1.0f : f.ConsumeFloatingPoint<float>();
  a.enable_pdl = f.ConsumeIntegralInRange<int32_t>(-2, 2);
  a.num_threads = f.ConsumeIntegralInRange<int32_t>(-1, 3);
  a.check_metadata = f.ConsumeIntegralInRange<int32_t>(-2, 2);
  a.o_sf_scale = f.ConsumeBool() ? 1.0f : f.ConsumeFloatingPoint<float>();
  a.o_sf_vec_size = pick<int32_t>(f, {16, 16, 0, 32});
  a.out_scale_start_index = pick<int64_t>(f, {0, 0, 5, 130, -1});

  const int64_t T = a.num_tokens, Hq = a.num_qo_heads, Hkv = a.num_kv_heads, D = a.head_dim;
  const int64_t N = a.page_size, P = a.num_pages, B = a.batch_size, M = a.max_pages_per_seq;
  a.query_stride_head = stride_for(f, D);
  a.query_stride_token = stride_for(f, Hq * D);
  const bool hnd = a.kv_layout == CTXATTN_KV_LAYOUT_HND;
  const int64_t dense1 = hnd ? N * D : Hkv * D, dense2 = D;
  for (int kv = 0; kv < 2; ++kv) {
    int64_t* s = kv ? a.v_strides : a.k_strides;
    s[2] = stride_for(f, dense2);
    s[1] = stride_for(f, dense1);
    s[0] = stride_for(f, Hkv * N * D * (kv == 0 && f.ConsumeBool() ? 2 : 1));
  }
  const int64_t out_row = a.out_dtype == CTXATTN_DTYPE_NVFP4 ? D / 2 : D;
  a.out_stride_head = stride_for(f, out_row);
  a.out_stride_token = stride_for(f, Hq * out_row);
  a.block_tables_stride = stride_for(f, M);
  a.lse_stride_head = stride_for(f, 1);
  a.lse_stride_token = stride_for(f, Hq);

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
  const int64_t ws_bytes = pick<int64_t>(f, {4096, 4096, 65536, 100, 0});
  const int64_t scale_bytes = pick<int64_t>(f, {512, 1024, 4096, 16, 0});
  if (can_run) {
    a.query = q.make(q_n * element_size(a.query_dtype), f);
    a.k_cache = k.make(k_n * element_size(a.kv_dtype), f);
    a.v_cache = shared_kv ? a.k_cache : v.make(v_n * element_size(a.kv_dtype), f);
    if (shared_kv) std::memcpy(a.v_strides, a.k_strides, sizeof(a.k_strides));
    // Metadata contents are random on purpose: the CPU backend must reject lies, never follow them.
    auto* tables = static_cast<int32_t*>(bt.make(bt_n * 4, f));
    if (tables) for (int64_t i = 0; i < bt_n; ++i) tables[i] = f.ConsumeIntegralInRange<int32_t>(-2, 14);
    a.block_tables = tables;
    auto* lens = static_cast<int32_t*>(sl.make(B > 0 ? B * 4 : 4, f));
    if (lens) for (int64_t i = 0; i < (B > 0 ? B : 1); ++i) lens[i] = f.ConsumeIntegralInRange<int32_t>(-2, 90);
    a.seq_lens = lens;
    auto* cu = static_cast<int32_t*>(cq.make(B >= 0 ? (B + 1) * 4 : 4, f));
    if (cu) {
      int32_t acc = f.ConsumeIntegralInRange<int32_t>(-1, 2);
      for (int64_t i = 0; i <= (B > 0 ? B : 0); ++i) {
        cu[i] = acc;
        acc += f.ConsumeIntegralInRange<int32_t>(-2, 24);
      }
    }
    a.cum_seq_lens_q = cu;
    a.cum_seq_lens_kv = static_cast<const int32_t*>(ckv.make(B >= 0 ? (B + 1) * 4 : 4, f));
    a.out = out.make(o_n * element_size(a.out_dtype), f);
    a.out_scale = scale.make(scale_bytes, f);
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
    a.workspace = ws.make(ws_bytes, f);
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
  if (s == CTXATTN_STATUS_OK) {
    if (ctxattn_last_error()[0] != '\0') std::abort();
  } else {
    if (ctxattn_last_error()[0] == '\0') std::abort();
    if (out.bytes != out0 || scale.bytes != scale0 || lse.bytes != lse0 || ws.bytes != ws0) std::abort();
  }
  return 0;
}
