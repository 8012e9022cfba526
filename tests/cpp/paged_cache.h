// Test problems for ctxattn: a random batch over a paged KV cache in host memory, with the ugly
// cases built in (ragged lengths, cached prefixes, an over-allocated pool whose pages are
// permuted, NaN in every element no call may read: unused pages, page tails past seq_lens, stride
// gaps, block-table columns past a request's pages hold garbage page ids), every KV form (tuple,
// one tensor, shared K=V), both layouts, strided query / out / lse, every dtype.
//
// Device-agnostic: all tensors are host byte buffers. `args` points at them for CPU calls; a GPU
// test copies each entry of buffers() to the device and calls relocated_args() with the mapping.
#pragma once

#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/numeric.h"
#include "core/params.h"
#include "ctxattn/ctxattn.h"

namespace ctxattn_test {

enum class KvForm { kTuple, kOneTensor, kShared };

inline size_t dtype_size(ctxattn_dtype_t dtype) {
  switch (dtype) {
    case CTXATTN_DTYPE_FLOAT16:
    case CTXATTN_DTYPE_BFLOAT16: return 2;
    case CTXATTN_DTYPE_FLOAT8_E4M3:
    case CTXATTN_DTYPE_NVFP4: return 1;
    default: return 4;
  }
}

// Encodes / decodes one element of an input or dense output dtype.
inline void put_value(uint8_t* base, ctxattn_dtype_t dtype, int64_t i, float x) {
  switch (dtype) {
    case CTXATTN_DTYPE_FLOAT16: reinterpret_cast<uint16_t*>(base)[i] = ctxattn::float_to_half(x); break;
    case CTXATTN_DTYPE_BFLOAT16: reinterpret_cast<uint16_t*>(base)[i] = ctxattn::float_to_bf16(x); break;
    case CTXATTN_DTYPE_FLOAT8_E4M3: base[i] = ctxattn::float_to_e4m3(x); break;
    default: throw std::invalid_argument("put_value: not an element dtype");
  }
}
inline float get_value(const uint8_t* base, ctxattn_dtype_t dtype, int64_t i) {
  switch (dtype) {
    case CTXATTN_DTYPE_FLOAT16: return ctxattn::half_to_float(reinterpret_cast<const uint16_t*>(base)[i]);
    case CTXATTN_DTYPE_BFLOAT16: return ctxattn::bf16_to_float(reinterpret_cast<const uint16_t*>(base)[i]);
    case CTXATTN_DTYPE_FLOAT8_E4M3: return ctxattn::e4m3_to_float(base[i]);
    default: throw std::invalid_argument("get_value: not an element dtype");
  }
}
// Fills n elements starting at element i with the dtype's NaN.
inline void put_nan(uint8_t* base, ctxattn_dtype_t dtype, int64_t i, int64_t n) {
  for (int64_t e = 0; e < n; ++e) {
    if (dtype_size(dtype) == 2) {
      reinterpret_cast<uint16_t*>(base)[i + e] = dtype == CTXATTN_DTYPE_FLOAT16 ? 0x7e00 : 0x7fc0;
    } else {
      base[i + e] = 0x7f;  // e4m3 NaN
    }
  }
}

struct ProblemSpec {
  std::vector<int32_t> q_lens;   // per request; Lq = 0 allowed
  std::vector<int32_t> kv_lens;  // per request; >= q_lens when causal
  int32_t num_qo_heads = 8;
  int32_t num_kv_heads = 2;
  int32_t head_dim = 64;
  int32_t page_size = 16;
  ctxattn_dtype_t q_dtype = CTXATTN_DTYPE_BFLOAT16;
  ctxattn_dtype_t kv_dtype = CTXATTN_DTYPE_BFLOAT16;  // NVFP4: random e2m1 codes and e4m3 block
                                                     // scales (kv_pad, page_pad multiples of 32)
  ctxattn_dtype_t out_dtype = CTXATTN_DTYPE_BFLOAT16;
  ctxattn_kv_layout_t kv_layout = CTXATTN_KV_LAYOUT_HND;
  KvForm kv_form = KvForm::kTuple;
  bool causal = true;
  int32_t window_left = -1;
  bool with_sinks = false;
  bool with_lse = false;
  bool scale_pointers = false;   // pass bmm scales through bmm*_scale_ptr
  float bmm1_scale = 0.0f;       // 0: 1/sqrt(head_dim)
  float bmm2_scale = 1.0f;
  float input_scale = 1.0f;      // Q, K, V ~ N(0, input_scale^2)
  float o_sf_scale = 1.0f;       // nvfp4 only
  int64_t scale_start_index = 0; // nvfp4 only
  int32_t extra_pages = 3;       // pool pages no request uses
  int32_t extra_table_cols = 2;  // block-table columns past every request's pages
  bool separate_kv_idx = false;  // [B, 2, cols] tables (uses_shared_paged_kv_idx = 0): V's ids a
                                 // shuffle of K's (kShared: K's ids again)
  int32_t extra_rows = 0;        // query / out rows after cum_seq_lens_q[B] (never touched)
  int32_t q_pad = 0;             // extra elements after each query row and token
  int32_t kv_pad = 0;            // extra elements after each cached token row
  int32_t page_pad = 0;          // extra elements after each page of the pool
  int32_t out_pad = 0;           // extra elements after each out row and token
  int32_t lse_pad = 0;           // extra elements after each lse token
  float skip_factor = 0.0f;      // skip_softmax_threshold_scale_factor (1e-30: the vote runs, results dense)
  uint64_t seed = 1;
};

// One named host tensor; `bytes` is its full size.
struct HostBuffer {
  const char* name;
  uint8_t* data;
  size_t bytes;
};

class PagedProblem {
 public:
  explicit PagedProblem(const ProblemSpec& spec) : spec_(spec) { build(); }
  PagedProblem(const PagedProblem&) = delete;
  PagedProblem& operator=(const PagedProblem&) = delete;

  const ProblemSpec& spec() const { return spec_; }
  int32_t batch_size() const { return static_cast<int32_t>(spec_.q_lens.size()); }
  int64_t num_tokens() const { return args.num_tokens; }
  int32_t group_size() const { return spec_.num_qo_heads / spec_.num_kv_heads; }
  // Row t of request b is cum_seq_lens_q[b] + i.
  int64_t q_begin(int32_t b) const { return cu_q[b]; }

  // Every buffer the call reads or writes (for copying to a device).
  std::vector<HostBuffer> buffers() {
    std::vector<HostBuffer> list = {
        {"query", query.data(), query.size()},
        {"k_cache", k_cache.data(), k_cache.size()},
        {"block_tables", bytes_of(block_tables), block_tables.size() * 4},
        {"seq_lens", bytes_of(seq_lens), seq_lens.size() * 4},
        {"cum_seq_lens_q", bytes_of(cu_q), cu_q.size() * 4},
        {"cum_seq_lens_kv", bytes_of(cu_kv), cu_kv.size() * 4},
        {"scales", bytes_of(scales), scales.size() * 4},
        {"sinks", bytes_of(sinks), sinks.size() * 4},
        {"out", out.data(), out.size()},
        {"out_scale", out_scale.data(), out_scale.size()},
        {"lse", bytes_of(lse), lse.size() * 4},
        {"workspace", workspace.data(), workspace.size()},
    };
    if (!v_cache.empty()) list.push_back({"v_cache", v_cache.data(), v_cache.size()});
    if (!k_cache_sf.empty()) list.push_back({"k_cache_sf", k_cache_sf.data(), k_cache_sf.size()});
    if (!v_cache_sf.empty()) list.push_back({"v_cache_sf", v_cache_sf.data(), v_cache_sf.size()});
    return list;
  }

  // `args` with every pointer moved to where `place` put its buffer (keeping offsets inside it).
  ctxattn_args_t relocated_args(const std::function<void*(const HostBuffer&)>& place) {
    ctxattn_args_t a = args;
    const std::vector<HostBuffer> list = buffers();
    auto move = [&](const void* ptr) -> void* {
      if (ptr == nullptr) return nullptr;
      const uint8_t* p = static_cast<const uint8_t*>(ptr);
      for (const HostBuffer& b : list) {
        if (b.bytes > 0 && p >= b.data && p < b.data + b.bytes) return static_cast<uint8_t*>(place(b)) + (p - b.data);
      }
      throw std::logic_error("relocated_args: pointer outside every buffer");
    };
    a.query = move(a.query);
    a.k_cache = move(a.k_cache);
    a.v_cache = move(a.v_cache);
    a.k_cache_sf = move(a.k_cache_sf);
    a.v_cache_sf = move(a.v_cache_sf);
    a.block_tables = static_cast<const int32_t*>(move(a.block_tables));
    a.seq_lens = move(a.seq_lens);
    a.cum_seq_lens_q = static_cast<const int32_t*>(move(a.cum_seq_lens_q));
    a.cum_seq_lens_kv = static_cast<const int32_t*>(move(a.cum_seq_lens_kv));
    a.bmm1_scale_ptr = static_cast<const float*>(move(a.bmm1_scale_ptr));
    a.bmm2_scale_ptr = static_cast<const float*>(move(a.bmm2_scale_ptr));
    a.sinks = static_cast<const float*>(move(a.sinks));
    a.out = move(a.out);
    a.out_scale = move(a.out_scale);
    a.lse = static_cast<float*>(move(a.lse));
    a.workspace = move(a.workspace);
    return a;
  }

  // Fills out / out_scale with 0xFF bytes (NaN for every dense dtype) and lse with NaN.
  void poison_outputs() {
    std::fill(out.begin(), out.end(), 0xFF);
    std::fill(out_scale.begin(), out_scale.end(), 0xFF);
    std::fill(lse.begin(), lse.end(), std::numeric_limits<float>::quiet_NaN());
  }

  // ---- the inputs as floats, read through this file's own layout arithmetic ----
  float q(int64_t t, int32_t h, int32_t d) const {
    return get_value(query.data(), spec_.q_dtype, t * args.query_stride_token + h * args.query_stride_head + d);
  }
  float k(int32_t b, int64_t j, int32_t g, int32_t d) const { return kv(false, b, j, g, d); }
  float v(int32_t b, int64_t j, int32_t g, int32_t d) const { return kv(true, b, j, g, d); }
  float bmm1() const { return bmm1_value_; }
  float bmm2() const { return bmm2_value_; }

  // Element offset of out[t, h, d] (bytes for nvfp4, where d is the byte index d/2).
  int64_t out_offset(int64_t t, int32_t h, int32_t d) const {
    return t * args.out_stride_token + h * args.out_stride_head + d;
  }
  float out_value(int64_t t, int32_t h, int32_t d) const {
    return get_value(out.data(), spec_.out_dtype, out_offset(t, h, d));
  }
  float lse_value(int64_t t, int32_t h) const { return lse[t * args.lse_stride_token + h * args.lse_stride_head]; }

  // ---- host buffers (public so tests can inspect and corrupt them) ----
  std::vector<uint8_t> query, k_cache, v_cache, out, out_scale, workspace;
  std::vector<uint8_t> k_cache_sf, v_cache_sf;  // NVFP4 block scales
  std::vector<int32_t> block_tables, seq_lens, cu_q, cu_kv;
  std::vector<float> scales, sinks, lse;
  ctxattn_args_t args;

 private:
  template <typename T>
  static uint8_t* bytes_of(std::vector<T>& v) {
    return reinterpret_cast<uint8_t*>(v.data());
  }

  float kv(bool is_v, int32_t b, int64_t j, int32_t g, int32_t d) const {
    const int32_t n = spec_.page_size;
    const int64_t row = b * args.block_tables_stride + (is_v && spec_.separate_kv_idx ? args.block_tables_kv_stride : 0);
    const int64_t page = block_tables[row + j / n];
    const int64_t* s = is_v ? args.v_strides : args.k_strides;
    const bool hnd = spec_.kv_layout == CTXATTN_KV_LAYOUT_HND;
    const bool fp4 = spec_.kv_dtype == CTXATTN_DTYPE_NVFP4;
    // NVFP4 strides count bytes, two e2m1 codes each, the even element in the low nibble.
    const int64_t off = page * s[0] + (hnd ? g * s[1] + (j % n) * s[2] : (j % n) * s[1] + g * s[2]) + (fp4 ? d / 2 : d);
    const uint8_t* base = static_cast<const uint8_t*>(is_v ? args.v_cache : args.k_cache);
    if (!fp4) return get_value(base, spec_.kv_dtype, off);
    // The block scale of (slot, d / 16): K's linear, V's where its 4-token interleave puts it.
    const uint8_t byte = base[off];
    const int64_t* sf = is_v ? args.v_sf_strides : args.k_sf_strides;
    const int64_t blocks = spec_.head_dim / 16;
    const ctxattn::ScaleSlot at = is_v ? ctxattn::nvfp4_v_scale_slot(j % n, d / 16, blocks)
                                       : ctxattn::ScaleSlot{j % n, d / 16};
    const int64_t sf_off = page * sf[0] + (hnd ? g * sf[1] + at.slot * sf[2] : at.slot * sf[1] + g * sf[2]) + at.block;
    const uint8_t* sf_base = static_cast<const uint8_t*>(is_v ? args.v_cache_sf : args.k_cache_sf);
    return ctxattn::e2m1_to_float(d % 2 ? byte >> 4 : byte & 0xF) * ctxattn::e4m3_to_float(sf_base[sf_off]);
  }

  void build() {
    const ProblemSpec& s = spec_;
    if (s.q_lens.size() != s.kv_lens.size()) throw std::invalid_argument("q_lens and kv_lens differ in length");
    std::mt19937_64 rng(s.seed);
    std::normal_distribution<float> normal(0.0f, s.input_scale);
    const int32_t B = batch_size(), Hq = s.num_qo_heads, Hkv = s.num_kv_heads, D = s.head_dim, N = s.page_size;
    ctxattn_args_init(&args);

    // Lengths and row offsets.
    cu_q.assign(B + 1, 0);
    cu_kv.assign(B + 1, 0);
    for (int32_t b = 0; b < B; ++b) {
      cu_q[b + 1] = cu_q[b] + s.q_lens[b];
      cu_kv[b + 1] = cu_kv[b] + s.kv_lens[b];
    }
    seq_lens = s.kv_lens;
    const int64_t T = cu_q[B] + s.extra_rows;

    // Pages: every request gets ceil(Lk/N) pages of a permuted, over-allocated pool.
    int32_t max_pages = 0, used_pages = 0;
    for (int32_t b = 0; b < B; ++b) {
      const int32_t pages = (s.kv_lens[b] + N - 1) / N;
      max_pages = std::max(max_pages, pages);
      used_pages += pages;
    }
    const int32_t cols = max_pages + s.extra_table_cols;
    const int64_t P = used_pages + s.extra_pages;
    std::vector<int32_t> perm(P);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    // Separate indices: row b holds K's ids in [0, cols) and V's in [cols, 2 cols).
    const int32_t rows_per_request = s.separate_kv_idx ? 2 : 1;
    const int32_t table_stride = rows_per_request * std::max(cols, 1);
    block_tables.assign(static_cast<size_t>(std::max(B, 1)) * table_stride, 0);
    std::vector<int32_t> v_ids(perm.begin(), perm.begin() + used_pages);
    // (The shared form's V is K's own data: its V ids stay K's, in their own row.)
    if (s.separate_kv_idx && s.kv_form != KvForm::kShared) std::shuffle(v_ids.begin(), v_ids.end(), rng);
    int32_t next_page = 0;
    for (int32_t b = 0; b < B; ++b) {
      const int32_t pages = (s.kv_lens[b] + N - 1) / N;
      for (int32_t c = 0; c < cols; ++c) {
        // Columns past the request's pages are never read: garbage ids outside the pool.
        const int32_t garbage = c % 2 ? -7 : 1 << 30;
        block_tables[b * table_stride + c] = c < pages ? perm[next_page] : garbage;
        if (s.separate_kv_idx) block_tables[b * table_stride + cols + c] = c < pages ? v_ids[next_page] : garbage;
        if (c < pages) ++next_page;
      }
    }

    // KV pool. Token rows have kv_pad extra elements, pages page_pad; the one-tensor form stacks K
    // and V per page. NVFP4 pools count e2m1 codes as elements (two a byte; byte strides are
    // half the element strides), filled with code 15 (-6) where nothing is written, and have a
    // scale pool of the same page / head / token structure with rows of D / 16 bytes and no
    // padding, NaN (0x7f) wherever no token of a request lives.
    const ctxattn_dtype_t kvt = s.kv_dtype;
    const bool fp4 = kvt == CTXATTN_DTYPE_NVFP4;
    if (fp4 && (s.kv_pad % 32 != 0 || s.page_pad % 32 != 0 || D % 64 != 0 || N % 4 != 0)) {
      throw std::invalid_argument("NVFP4 problems need kv_pad, page_pad % 32, D % 64 and N % 4 == 0");
    }
    const int64_t row = D + s.kv_pad;
    const int64_t half = static_cast<int64_t>(Hkv) * N * row;  // one of K / V inside a page
    const int64_t page_stride = (s.kv_form == KvForm::kOneTensor ? 2 * half : half) + s.page_pad;
    const bool hnd = s.kv_layout == CTXATTN_KV_LAYOUT_HND;
    const int64_t st_head = hnd ? N * row : row, st_token = hnd ? row : Hkv * row;
    const int64_t pool_elems = std::max<int64_t>(P * page_stride, 1);
    auto elem_bytes = [&](int64_t elems) { return fp4 ? (elems + 1) / 2 : elems * static_cast<int64_t>(dtype_size(kvt)); };
    k_cache.assign(elem_bytes(pool_elems), 0xff);
    if (!fp4) put_nan(k_cache.data(), kvt, 0, pool_elems);
    if (s.kv_form == KvForm::kTuple) {
      v_cache = k_cache;
    } else {
      v_cache.clear();
    }
    uint8_t* kbase = k_cache.data();
    uint8_t* vbase = s.kv_form == KvForm::kTuple ? v_cache.data()
                     : s.kv_form == KvForm::kOneTensor ? k_cache.data() + elem_bytes(half)
                                                       : k_cache.data();
    const int64_t S = D / 16;
    const int64_t sf_half = static_cast<int64_t>(Hkv) * N * S;
    const int64_t sf_page = s.kv_form == KvForm::kOneTensor ? 2 * sf_half : sf_half;
    const int64_t sf_head = hnd ? N * S : S, sf_token = hnd ? S : Hkv * S;
    k_cache_sf.clear();
    v_cache_sf.clear();
    if (fp4) {
      k_cache_sf.assign(std::max<int64_t>(P * sf_page, 1), 0x7f);
      if (s.kv_form == KvForm::kTuple) v_cache_sf = k_cache_sf;
    }
    uint8_t* ksf = k_cache_sf.data();
    uint8_t* vsf = s.kv_form == KvForm::kTuple ? v_cache_sf.data()
                   : s.kv_form == KvForm::kOneTensor ? k_cache_sf.data() + sf_half
                                                     : k_cache_sf.data();
    // Block scales up to 1: |V| <= 6, so outputs stay where e4m3 output keeps the SPEC tolerance.
    const float fp4_scales[] = {0.125f, 0.25f, 0.5f, 1.0f};
    auto put_row = [&](uint8_t* base, uint8_t* sf_base, bool is_v, int64_t page, int32_t g, int64_t slot) {
      const int64_t off = page * page_stride + g * st_head + slot * st_token;
      if (!fp4) {
        for (int32_t d = 0; d < D; ++d) put_value(base, kvt, off + d, normal(rng));
        return;
      }
      for (int32_t d = 0; d < D; d += 2) base[(off + d) / 2] = static_cast<uint8_t>(rng() & 0xff);
      for (int64_t b = 0; b < S; ++b) {
        const ctxattn::ScaleSlot at = is_v ? ctxattn::nvfp4_v_scale_slot(slot, b, S) : ctxattn::ScaleSlot{slot, b};
        sf_base[page * sf_page + g * sf_head + at.slot * sf_token + at.block] =
            ctxattn::float_to_e4m3(fp4_scales[rng() % 4]);
      }
    };
    for (int32_t b = 0; b < B; ++b) {
      for (int64_t j = 0; j < s.kv_lens[b]; ++j) {
        const int64_t page = block_tables[b * table_stride + j / N];
        const int64_t vpage = block_tables[b * table_stride + (s.separate_kv_idx ? cols : 0) + j / N];
        for (int32_t g = 0; g < Hkv; ++g) {
          put_row(kbase, ksf, false, page, g, j % N);
          if (s.kv_form == KvForm::kShared) {
            // V := K reads K's scale rows through V's interleave too: write those positions
            // (and the row's codes again), so no read of a live token meets the NaN fill.
            if (fp4) put_row(kbase, ksf, true, page, g, j % N);
            continue;
          }
          put_row(vbase, vsf, true, vpage, g, j % N);
        }
      }
    }
    args.k_cache = kbase;
    args.v_cache = vbase;
    args.kv_dtype = kvt;
    args.kv_layout = s.kv_layout;
    const int64_t unit = fp4 ? 2 : 1;  // elements a stride unit
    for (int kv = 0; kv < 2; ++kv) {
      int64_t* st = kv ? args.v_strides : args.k_strides;
      st[0] = page_stride / unit;
      st[1] = (hnd ? st_head : st_token) / unit;
      st[2] = (hnd ? st_token : st_head) / unit;
      if (!fp4) continue;
      int64_t* sst = kv ? args.v_sf_strides : args.k_sf_strides;
      sst[0] = sf_page;
      sst[1] = hnd ? sf_head : sf_token;
      sst[2] = hnd ? sf_token : sf_head;
    }
    if (fp4) {
      args.k_cache_sf = ksf;
      args.v_cache_sf = vsf;
    }

    // Query: rows of D + q_pad elements, tokens padded by q_pad more; gaps and extra rows NaN.
    args.query_stride_head = D + s.q_pad;
    args.query_stride_token = Hq * args.query_stride_head + s.q_pad;
    const int64_t q_elems = std::max<int64_t>(T * args.query_stride_token, 1);
    query.assign(q_elems * dtype_size(s.q_dtype), 0);
    put_nan(query.data(), s.q_dtype, 0, q_elems);
    for (int64_t t = 0; t < cu_q[B]; ++t) {
      for (int32_t h = 0; h < Hq; ++h) {
        for (int32_t d = 0; d < D; ++d) {
          put_value(query.data(), s.q_dtype, t * args.query_stride_token + h * args.query_stride_head + d, normal(rng));
        }
      }
    }
    args.query = query.data();
    args.query_dtype = s.q_dtype;

    // Output (nvfp4: bytes, D/2 per row) and its scale tensor.
    const bool nvfp4 = s.out_dtype == CTXATTN_DTYPE_NVFP4;
    const int64_t out_row = nvfp4 ? D / 2 : D;
    args.out_stride_head = out_row + s.out_pad;
    args.out_stride_token = Hq * args.out_stride_head + s.out_pad;
    out.assign(std::max<int64_t>(T * args.out_stride_token, 1) * dtype_size(s.out_dtype), 0);
    args.out = out.data();
    args.out_dtype = s.out_dtype;
    if (nvfp4) {
      const int64_t scale_rows = (s.scale_start_index + T + 127) / 128 * 128;
      const int64_t scale_cols = (static_cast<int64_t>(Hq) * D / 16 + 3) / 4 * 4;
      out_scale.assign(std::max<int64_t>(scale_rows * scale_cols, 1), 0);
      args.out_scale = out_scale.data();
      args.out_scale_size_bytes = static_cast<int64_t>(out_scale.size());
      args.out_scale_start_index = s.scale_start_index;
      args.o_sf_scale = s.o_sf_scale;
    }
    if (s.with_lse) {
      args.lse_stride_head = 1;
      args.lse_stride_token = Hq + s.lse_pad;
      lse.assign(std::max<int64_t>(T * args.lse_stride_token, 1), 0.0f);
      args.lse = lse.data();
    }

    // Scalars, sinks, metadata, workspace.
    bmm1_value_ = s.bmm1_scale != 0.0f ? s.bmm1_scale : 1.0f / std::sqrt(static_cast<float>(D));
    bmm2_value_ = s.bmm2_scale;
    scales = {bmm1_value_, bmm2_value_};
    if (s.scale_pointers) {
      // Values the pointers must override.
      args.bmm1_scale = 123.0f;
      args.bmm2_scale = 321.0f;
      args.bmm1_scale_ptr = &scales[0];
      args.bmm2_scale_ptr = &scales[1];
    } else {
      args.bmm1_scale = bmm1_value_;
      args.bmm2_scale = bmm2_value_;
    }
    if (s.with_sinks) {
      std::normal_distribution<float> sink_dist(1.0f, 2.0f);
      sinks.resize(Hq);
      for (float& x : sinks) x = sink_dist(rng);
      args.sinks = sinks.data();
    }
    workspace.assign(1 << 16, 0);

    int32_t max_q = 0, max_kv = 0;
    for (int32_t b = 0; b < B; ++b) {
      max_q = std::max(max_q, s.q_lens[b]);
      max_kv = std::max(max_kv, s.kv_lens[b]);
    }
    args.num_tokens = T;
    args.num_qo_heads = Hq;
    args.num_kv_heads = Hkv;
    args.head_dim = D;
    args.page_size = N;
    args.num_pages = P;
    args.batch_size = B;
    args.max_pages_per_seq = cols;
    args.max_q_len = max_q;
    args.max_kv_len = max_kv;
    args.block_tables = block_tables.data();
    args.block_tables_stride = table_stride;
    if (s.separate_kv_idx) {
      args.uses_shared_paged_kv_idx = 0;
      args.block_tables_kv_stride = cols;
    }
    args.seq_lens = seq_lens.data();
    args.seq_lens_dtype = CTXATTN_DTYPE_INT32;
    args.cum_seq_lens_q = cu_q.data();
    args.cum_seq_lens_kv = cu_kv.data();
    args.window_left = s.window_left;
    args.causal = s.causal ? 1 : 0;
    args.skip_softmax_threshold_scale_factor = s.skip_factor;
    args.workspace = workspace.data();
    args.workspace_size = workspace.size();
  }

  ProblemSpec spec_;
  float bmm1_value_ = 1.0f;
  float bmm2_value_ = 1.0f;
};

// Random ragged lengths: each request gets a query chunk of one of `q_choices` and a cached
// prefix of 0 .. max_prefix tokens (0 for non-causal problems is fine too).
inline void ragged_lengths(ProblemSpec* spec, int32_t batch, const std::vector<int32_t>& q_choices,
                           int32_t max_prefix, uint64_t seed) {
  std::mt19937_64 rng(seed);
  spec->q_lens.clear();
  spec->kv_lens.clear();
  for (int32_t b = 0; b < batch; ++b) {
    const int32_t q = q_choices[rng() % q_choices.size()];
    const int32_t prefix = max_prefix > 0 ? static_cast<int32_t>(rng() % (max_prefix + 1)) : 0;
    spec->q_lens.push_back(q);
    spec->kv_lens.push_back(q + prefix);
  }
}

}  // namespace ctxattn_test
