// The one gate (see validate.h). Every message names the argument with the Python keyword the
// user knows, what was expected and what came.
#include "core/validate.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/backends.h"
#include "core/numeric.h"

namespace ctxattn {
namespace {

constexpr int kMaxHeadDim = 512;     // register / shared-memory budget of every backend
constexpr int kMaxPageSize = 1024;   // largest page any serving engine uses
constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream s;
  (s << ... << parts);
  return s.str();
}

Status invalid(const std::string& msg) { return Status::Error(CTXATTN_STATUS_INVALID_ARGUMENT, msg); }
Status bad_type(const std::string& msg) { return Status::Error(CTXATTN_STATUS_INVALID_TYPE, msg); }

const char* dtype_name(ctxattn_dtype_t d) {
  switch (d) {
    case CTXATTN_DTYPE_FLOAT16: return "float16";
    case CTXATTN_DTYPE_BFLOAT16: return "bfloat16";
    case CTXATTN_DTYPE_FLOAT8_E4M3: return "float8_e4m3fn";
    case CTXATTN_DTYPE_NVFP4: return "nvfp4";
    case CTXATTN_DTYPE_FLOAT32: return "float32";
    case CTXATTN_DTYPE_INT32: return "int32";
    case CTXATTN_DTYPE_UINT32: return "uint32";
  }
  return "unknown";
}

std::string dtype_str(ctxattn_dtype_t d) { return cat(dtype_name(d), " (code ", static_cast<int>(d), ")"); }

bool is_attention_input(ctxattn_dtype_t d) {
  return d == CTXATTN_DTYPE_FLOAT16 || d == CTXATTN_DTYPE_BFLOAT16 || d == CTXATTN_DTYPE_FLOAT8_E4M3;
}

bool is_power_of_two(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

// One dimension of a strided view: `size` elements `stride` apart.
struct Dim {
  int64_t size;
  int64_t stride;
};

// A write target must not alias itself: sorted by stride, each dimension of size > 1 must step
// over the whole extent of the dimensions inside it. `inner` is the contiguous innermost extent.
bool non_overlapping(std::vector<Dim> dims, int64_t inner) {
  dims.erase(std::remove_if(dims.begin(), dims.end(), [](const Dim& d) { return d.size <= 1; }),
             dims.end());
  std::sort(dims.begin(), dims.end(), [](const Dim& a, const Dim& b) { return a.stride < b.stride; });
  int64_t extent = inner;
  for (const Dim& d : dims) {
    if (d.stride < extent) return false;
    extent = d.stride * d.size;
  }
  return true;
}

// Largest element offset reachable through `dims` plus `inner` contiguous elements; false when
// it does not fit in int64.
bool max_offset(const std::vector<Dim>& dims, int64_t inner, int64_t* result) {
  __int128 off = inner > 0 ? inner - 1 : 0;
  for (const Dim& d : dims) {
    if (d.size > 0) off += static_cast<__int128>(d.size - 1) * d.stride;
  }
  if (off > std::numeric_limits<int64_t>::max()) return false;
  *result = static_cast<int64_t>(off);
  return true;
}

Status check_strides_nonneg(const char* name, const int64_t* strides, int n) {
  for (int i = 0; i < n; ++i) {
    if (strides[i] < 0) {
      return invalid(cat(name, ": expected non-negative strides, got stride ", strides[i], " for dim ", i));
    }
  }
  return Status::Ok();
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' && std::string(v) != "0";
}

// The raw integer in an enum field: C callers can store any int there, and reading such a value
// through the enum type is undefined in C++.
template <typename Enum>
int32_t raw(const Enum& e) {
  static_assert(sizeof(Enum) == sizeof(int32_t), "ctxattn enums are 32-bit");
  int32_t v;
  std::memcpy(&v, &e, sizeof(v));
  return v;
}

// Every enum field holds one of its declared values; later checks then read them as enums.
Status validate_enum_fields(const ctxattn_args_t& a) {
  if (raw(a.device_type) < CTXATTN_DEVICE_CPU || raw(a.device_type) > CTXATTN_DEVICE_CUDA) {
    return invalid(cat("device_type: expected CPU (0) or CUDA (1), got ", raw(a.device_type)));
  }
  if (raw(a.backend) < CTXATTN_BACKEND_AUTO || raw(a.backend) > CTXATTN_BACKEND_CUDA_SM90) {
    return invalid(cat("backend: expected a ctxattn_backend_t value in [0, 4], got ", raw(a.backend)));
  }
  if (raw(a.kv_layout) != CTXATTN_KV_LAYOUT_HND && raw(a.kv_layout) != CTXATTN_KV_LAYOUT_NHD) {
    return invalid(cat("kv_layout: expected \"HND\" (0) or \"NHD\" (1), got ", raw(a.kv_layout)));
  }
  const struct {
    const char* name;
    int32_t value;
  } dtypes[] = {{"query", raw(a.query_dtype)}, {"kv_cache", raw(a.kv_dtype)},
                {"seq_lens", raw(a.seq_lens_dtype)}, {"out_dtype", raw(a.out_dtype)}};
  for (const auto& d : dtypes) {
    if (d.value < CTXATTN_DTYPE_FLOAT16 || d.value > CTXATTN_DTYPE_UINT32) {
      return bad_type(cat(d.name, ": unknown dtype code ", d.value));
    }
  }
  return Status::Ok();
}

Status validate_sizes(const ctxattn_args_t& a) {
  if (a.num_tokens < 0 || a.num_tokens > kMaxInt32) {
    return invalid(cat("query: expected 0 <= num_tokens <= ", kMaxInt32, ", got ", a.num_tokens));
  }
  if (a.num_qo_heads <= 0) return invalid(cat("query: expected num_qo_heads > 0, got ", a.num_qo_heads));
  if (a.num_kv_heads <= 0) return invalid(cat("kv_cache: expected num_kv_heads > 0, got ", a.num_kv_heads));
  if (a.num_qo_heads % a.num_kv_heads != 0) {
    return invalid(cat("kv_cache: num_qo_heads (", a.num_qo_heads, ") must be a multiple of num_kv_heads (",
                       a.num_kv_heads, ")"));
  }
  if (a.head_dim <= 0 || a.head_dim % 8 != 0 || a.head_dim > kMaxHeadDim) {
    return invalid(cat("query: expected head_dim a multiple of 8 in [8, ", kMaxHeadDim, "], got ", a.head_dim));
  }
  if (!is_power_of_two(a.page_size) || a.page_size > kMaxPageSize) {
    return invalid(cat("kv_cache: expected page_size a power of two in [1, ", kMaxPageSize, "], got ", a.page_size));
  }
  if (a.num_pages < 0 || a.num_pages > kMaxInt32) {
    return invalid(cat("kv_cache: expected 0 <= num_pages <= ", kMaxInt32, ", got ", a.num_pages));
  }
  if (a.batch_size < 0) return invalid(cat("batch_size: expected >= 0, got ", a.batch_size));
  if (a.max_pages_per_seq < 0) {
    return invalid(cat("block_tables: expected max_pages_per_seq >= 0, got ", a.max_pages_per_seq));
  }
  if (a.max_q_len < 0) return invalid(cat("max_q_len: expected >= 0, got ", a.max_q_len));
  if (a.max_kv_len < 0) return invalid(cat("max_kv_len: expected >= 0, got ", a.max_kv_len));
  if (a.num_tokens * a.num_qo_heads > kMaxInt32) {
    return invalid(cat("query: num_tokens * num_qo_heads = ", a.num_tokens * a.num_qo_heads,
                       " overflows 32-bit row indices (max ", kMaxInt32, ")"));
  }
  return Status::Ok();
}

// In-page offsets of one KV-like tensor (K, V or their NVFP4 scales) fit 32 bits and whole-pool
// offsets 64 bits; `row` is the contiguous extent of a token row.
Status check_pool_offsets(const char* name, const ctxattn_args_t& a, int64_t sp, int64_t sh, int64_t st, int64_t row) {
  int64_t in_page = 0, off = 0;
  if (!max_offset({{a.num_kv_heads, sh}, {a.page_size, st}}, row, &in_page) || in_page > kMaxInt32) {
    return invalid(cat(name, ": offsets inside one page overflow 32 bits (head stride ", sh, ", token stride ", st, ")"));
  }
  if (!max_offset({{a.num_pages, sp}, {a.num_kv_heads, sh}, {a.page_size, st}}, row, &off)) {
    return invalid(cat(name, ": page stride ", sp, " overflows 64-bit offsets"));
  }
  return Status::Ok();
}

// Layout-order strides (dims 0..2 of kv_layout) as (page, head, token).
void fold_layout(const int64_t* strides, bool hnd, int64_t* page, int64_t* head, int64_t* token) {
  *page = strides[0];
  *head = hnd ? strides[1] : strides[2];
  *token = hnd ? strides[2] : strides[1];
}

// NVFP4 KV (SPEC 8.1): the data's shape rules and the block-scale tensors.
Status validate_nvfp4_kv(const ctxattn_args_t& a, Params* p) {
  if (a.head_dim % 64 != 0) {
    return invalid(cat("kv_cache: an NVFP4 KV cache needs head_dim a multiple of 64 (the V scales' 4-token "
                       "interleave), got ", a.head_dim));
  }
  if (a.page_size % 4 != 0) {
    return invalid(cat("kv_cache: an NVFP4 KV cache needs page_size a multiple of 4 (the V scales' 4-token "
                       "interleave), got ", a.page_size));
  }
  if (a.num_pages > 0 && (a.k_cache_sf == nullptr || a.v_cache_sf == nullptr)) {
    return invalid("kv_cache_sf must be provided for NVFP4 KV cache.");
  }
  CTXATTN_RETURN_IF_ERROR(check_strides_nonneg("kv_cache_sf (K)", a.k_sf_strides, 3));
  CTXATTN_RETURN_IF_ERROR(check_strides_nonneg("kv_cache_sf (V)", a.v_sf_strides, 3));
  const bool hnd = a.kv_layout == CTXATTN_KV_LAYOUT_HND;
  fold_layout(a.k_sf_strides, hnd, &p->k_sf_stride_page, &p->k_sf_stride_head, &p->k_sf_stride_token);
  fold_layout(a.v_sf_strides, hnd, &p->v_sf_stride_page, &p->v_sf_stride_head, &p->v_sf_stride_token);
  const int64_t blocks = a.head_dim / kNvfp4BlockSize;
  CTXATTN_RETURN_IF_ERROR(check_pool_offsets("kv_cache_sf (K)", a, p->k_sf_stride_page, p->k_sf_stride_head,
                                             p->k_sf_stride_token, blocks));
  CTXATTN_RETURN_IF_ERROR(check_pool_offsets("kv_cache_sf (V)", a, p->v_sf_stride_page, p->v_sf_stride_head,
                                             p->v_sf_stride_token, blocks));
  p->k_sf = static_cast<const uint8_t*>(a.k_cache_sf);
  p->v_sf = static_cast<const uint8_t*>(a.v_cache_sf);
  return Status::Ok();
}

Status validate_query_and_kv(const ctxattn_args_t& a, Params* p) {
  if (!is_attention_input(a.query_dtype)) {
    return bad_type(cat("query: expected dtype float16, bfloat16 or float8_e4m3fn, got ", dtype_str(a.query_dtype)));
  }
  const bool nvfp4_kv = a.kv_dtype == CTXATTN_DTYPE_NVFP4;
  if (!is_attention_input(a.kv_dtype) && !nvfp4_kv) {
    return bad_type(cat("kv_cache: expected dtype float16, bfloat16, float8_e4m3fn or uint8 (NVFP4), got ",
                        dtype_str(a.kv_dtype)));
  }
  // Narrower KV under any query: e4m3 under a 16-bit query, NVFP4 under every query dtype.
  const bool fp8_kv_under_16bit = a.kv_dtype == CTXATTN_DTYPE_FLOAT8_E4M3 && a.query_dtype != CTXATTN_DTYPE_FLOAT8_E4M3;
  if (a.kv_dtype != a.query_dtype && !fp8_kv_under_16bit && !nvfp4_kv) {
    return bad_type(cat("kv_cache: expected dtype ", dtype_name(a.query_dtype),
                        " (the query's), float8_e4m3fn or uint8 (NVFP4), got ", dtype_name(a.kv_dtype)));
  }
  if (a.num_tokens > 0 && a.query == nullptr) return invalid("query: expected a data pointer, got NULL");
  if (a.query_stride_token < 0 || a.query_stride_head < 0) {
    return invalid(cat("query: expected non-negative strides, got (", a.query_stride_token, ", ",
                       a.query_stride_head, ", 1)"));
  }
  int64_t off = 0;
  if (!max_offset({{a.num_tokens, a.query_stride_token}, {a.num_qo_heads, a.query_stride_head}}, a.head_dim, &off)) {
    return invalid("query: strides overflow 64-bit offsets");
  }

  if (a.kv_layout != CTXATTN_KV_LAYOUT_HND && a.kv_layout != CTXATTN_KV_LAYOUT_NHD) {
    return invalid(cat("kv_layout: expected \"HND\" (0) or \"NHD\" (1), got ", static_cast<int>(a.kv_layout)));
  }
  if (a.num_pages > 0 && a.k_cache == nullptr) return invalid("kv_cache: expected a K data pointer, got NULL");
  if (a.num_pages > 0 && a.v_cache == nullptr) return invalid("kv_cache: expected a V data pointer, got NULL");
  CTXATTN_RETURN_IF_ERROR(check_strides_nonneg("kv_cache (K)", a.k_strides, 3));
  CTXATTN_RETURN_IF_ERROR(check_strides_nonneg("kv_cache (V)", a.v_strides, 3));
  const bool hnd = a.kv_layout == CTXATTN_KV_LAYOUT_HND;
  fold_layout(a.k_strides, hnd, &p->k_stride_page, &p->k_stride_head, &p->k_stride_token);
  fold_layout(a.v_strides, hnd, &p->v_stride_page, &p->v_stride_head, &p->v_stride_token);
  const int64_t row = nvfp4_kv ? a.head_dim / 2 : a.head_dim;  // NVFP4: bytes of two codes each
  CTXATTN_RETURN_IF_ERROR(check_pool_offsets("kv_cache (K)", a, p->k_stride_page, p->k_stride_head,
                                             p->k_stride_token, row));
  CTXATTN_RETURN_IF_ERROR(check_pool_offsets("kv_cache (V)", a, p->v_stride_page, p->v_stride_head,
                                             p->v_stride_token, row));
  if (nvfp4_kv) CTXATTN_RETURN_IF_ERROR(validate_nvfp4_kv(a, p));
  return Status::Ok();
}

Status validate_metadata_pointers(const ctxattn_args_t& a) {
  if (a.uses_shared_paged_kv_idx != 0 && a.uses_shared_paged_kv_idx != 1) {
    return invalid(cat("uses_shared_paged_kv_idx: expected 0 or 1, got ", a.uses_shared_paged_kv_idx));
  }
  const bool separate = a.uses_shared_paged_kv_idx == 0;
  if (a.batch_size > 0) {
    if (a.max_pages_per_seq > 0 && a.block_tables == nullptr) {
      return invalid("block_tables: expected a data pointer, got NULL");
    }
    if (a.batch_size > 1 && a.block_tables_stride < a.max_pages_per_seq) {
      return invalid(cat("block_tables: expected row stride >= max_pages_per_seq (", a.max_pages_per_seq, "), got ",
                         a.block_tables_stride));
    }
    if (separate && a.max_pages_per_seq > 0 && a.block_tables_kv_stride < a.max_pages_per_seq) {
      return invalid(cat("block_tables: the separate K/V form [batch_size, 2, max_pages_per_seq] needs a stride >= "
                         "max_pages_per_seq (", a.max_pages_per_seq, ") from a request's K row to its V row "
                         "(block_tables_kv_stride), got ", a.block_tables_kv_stride));
    }
    if (a.seq_lens == nullptr) return invalid("seq_lens: expected a data pointer, got NULL");
    if (a.cum_seq_lens_q == nullptr) return invalid("cum_seq_lens_q: expected a data pointer, got NULL");
  }
  if (a.seq_lens_dtype != CTXATTN_DTYPE_INT32 && a.seq_lens_dtype != CTXATTN_DTYPE_UINT32) {
    return bad_type(cat("seq_lens: expected dtype int32 or uint32, got ", dtype_str(a.seq_lens_dtype)));
  }
  return Status::Ok();
}

// FlashInfer's SM107-only kernel variants: ctxattn answers as FlashInfer does on every other GPU.
Status validate_sm107_flags(const ctxattn_args_t& a) {
  const struct {
    const char* name;
    int32_t value;
  } flags[] = {{"use_fp16_softmax", a.use_fp16_softmax}, {"uses_spcompress", a.uses_spcompress}};
  for (const auto& f : flags) {
    if (f.value == 1) {
      return invalid(cat(f.name, " is only supported on SM107 (Rubin); ctxattn, like FlashInfer on every other "
                         "device, has no such kernel variant"));
    }
    if (f.value != 0) return invalid(cat(f.name, ": expected 0 or 1, got ", f.value));
  }
  return Status::Ok();
}

// Skip-softmax's factor takes any float (SPEC 8.2); the CPU vote geometry is checked here.
Status validate_skip_softmax(const ctxattn_args_t& a, Params* p) {
  constexpr int32_t kMaxRows = 1024, kMaxKeys = 1024, kKeyStep = 64;  // 64: the CPU tiles; 1024: scratch
  if (a.skip_softmax_rows < 0 || a.skip_softmax_rows > kMaxRows) {
    return invalid(cat("skip_softmax_rows: expected 0 (default) or a row count in [1, ", kMaxRows, "], got ",
                       a.skip_softmax_rows));
  }
  if (a.skip_softmax_keys < 0 || a.skip_softmax_keys > kMaxKeys || a.skip_softmax_keys % kKeyStep != 0) {
    return invalid(cat("skip_softmax_keys: expected 0 (default) or a multiple of ", kKeyStep, " in [", kKeyStep, ", ",
                       kMaxKeys, "], got ", a.skip_softmax_keys));
  }
  if (a.skip_softmax_order < CTXATTN_TILE_ORDER_DEFAULT || a.skip_softmax_order > CTXATTN_TILE_ORDER_DESCENDING) {
    return invalid(cat("skip_softmax_order: expected 0 (default), 1 (ascending) or 2 (descending), got ",
                       a.skip_softmax_order));
  }
  p->skip_softmax_factor = a.skip_softmax_threshold_scale_factor;
  p->skip_rows = a.skip_softmax_rows != 0 ? a.skip_softmax_rows : kDefaultSkipRows;
  p->skip_keys = a.skip_softmax_keys != 0 ? a.skip_softmax_keys : kDefaultSkipKeys;
  p->skip_descending = a.skip_softmax_order != CTXATTN_TILE_ORDER_ASCENDING;
  return Status::Ok();
}

Status validate_math(const ctxattn_args_t& a) {
  if (a.bmm1_scale_ptr == nullptr && !std::isfinite(a.bmm1_scale)) {
    return invalid(cat("bmm1_scale: expected a finite value, got ", a.bmm1_scale));
  }
  if (a.bmm2_scale_ptr == nullptr && !std::isfinite(a.bmm2_scale)) {
    return invalid(cat("bmm2_scale: expected a finite value, got ", a.bmm2_scale));
  }
  if (a.causal != 0 && a.causal != 1) return invalid(cat("causal: expected 0 or 1, got ", a.causal));
  if (a.window_left < -1) return invalid(cat("window_left: expected -1 (no window) or >= 0, got ", a.window_left));
  if (!a.causal && a.window_left >= 0) {
    return invalid(cat("window_left: a sliding window (window_left = ", a.window_left,
                       ") needs causal=True; got causal=False"));
  }
  return Status::Ok();
}

Status validate_output(const ctxattn_args_t& a, Params* p) {
  const bool nvfp4 = a.out_dtype == CTXATTN_DTYPE_NVFP4;
  if (!is_attention_input(a.out_dtype) && !nvfp4) {
    return bad_type(cat("out_dtype: expected float16, bfloat16, float8_e4m3fn or \"nvfp4\", got ", dtype_str(a.out_dtype)));
  }
  if (a.num_tokens > 0 && a.out == nullptr) return invalid("out: expected a data pointer, got NULL");
  if (a.out_stride_token < 0 || a.out_stride_head < 0) {
    return invalid(cat("out: expected non-negative strides, got (", a.out_stride_token, ", ", a.out_stride_head, ", 1)"));
  }
  const int64_t row = nvfp4 ? a.head_dim / 2 : a.head_dim;
  if (!non_overlapping({{a.num_tokens, a.out_stride_token}, {a.num_qo_heads, a.out_stride_head}}, row)) {
    return invalid(cat("out: strides (", a.out_stride_token, ", ", a.out_stride_head, ", 1) make rows of ", row,
                       " elements overlap"));
  }
  int64_t off = 0;
  if (!max_offset({{a.num_tokens, a.out_stride_token}, {a.num_qo_heads, a.out_stride_head}}, row, &off)) {
    return invalid("out: strides overflow 64-bit offsets");
  }
  if (nvfp4) {
    if (a.head_dim % kNvfp4BlockSize != 0) {
      return invalid(cat("out_dtype: nvfp4 output needs head_dim a multiple of ", kNvfp4BlockSize, ", got ", a.head_dim));
    }
    if (a.o_sf_vec_size != 0 && a.o_sf_vec_size != kNvfp4BlockSize) {
      return invalid(cat("o_sf_vec_size: expected None or ", kNvfp4BlockSize, ", got ", a.o_sf_vec_size));
    }
    if (!std::isfinite(a.o_sf_scale) || a.o_sf_scale <= 0.0f) {
      return invalid(cat("o_sf_scale: expected a finite value > 0 for nvfp4 output, got ", a.o_sf_scale));
    }
    if (a.out_scale_start_index < 0) {
      return invalid(cat("out: expected scale_start_index >= 0, got ", a.out_scale_start_index));
    }
    const int64_t cols = (static_cast<int64_t>(a.num_qo_heads) * a.head_dim / kNvfp4BlockSize + 3) / 4 * 4;
    const int64_t rows = (a.out_scale_start_index + a.num_tokens + 127) / 128 * 128;
    if (a.num_tokens > 0 && a.out_scale == nullptr) return invalid("out: expected an nvfp4 scale pointer, got NULL");
    if (a.num_tokens > 0 && a.out_scale_size_bytes < rows * cols) {
      return invalid(cat("out: the nvfp4 scale tensor needs at least ", rows * cols, " bytes ([", rows, ", ", cols,
                         "] for scale_start_index ", a.out_scale_start_index, " and ", a.num_tokens,
                         " tokens), got ", a.out_scale_size_bytes));
    }
    p->out_scale_cols = cols;
  } else {
    p->out_scale_cols = 0;
  }
  if (a.lse != nullptr) {
    if (a.lse_stride_token < 0 || a.lse_stride_head < 0) {
      return invalid(cat("lse: expected non-negative strides, got (", a.lse_stride_token, ", ", a.lse_stride_head, ")"));
    }
    if (!non_overlapping({{a.num_tokens, a.lse_stride_token}, {a.num_qo_heads, a.lse_stride_head}}, 1)) {
      return invalid(cat("lse: strides (", a.lse_stride_token, ", ", a.lse_stride_head, ") make elements overlap"));
    }
    if (!max_offset({{a.num_tokens, a.lse_stride_token}, {a.num_qo_heads, a.lse_stride_head}}, 1, &off)) {
      return invalid("lse: strides overflow 64-bit offsets");
    }
  }
  return Status::Ok();
}

Status validate_execution(const ctxattn_args_t& a) {
  if (a.device_type != CTXATTN_DEVICE_CPU && a.device_type != CTXATTN_DEVICE_CUDA) {
    return invalid(cat("device_type: expected CPU (0) or CUDA (1), got ", static_cast<int>(a.device_type)));
  }
  if (a.device_type == CTXATTN_DEVICE_CUDA && a.device_index < 0) {
    return invalid(cat("device: expected a CUDA device index >= 0, got ", a.device_index));
  }
  if (a.backend < CTXATTN_BACKEND_AUTO || a.backend > CTXATTN_BACKEND_CUDA_SM90) {
    return invalid(cat("backend: expected a ctxattn_backend_t value in [0, 4], got ", static_cast<int>(a.backend)));
  }
  const bool cpu_backend = a.backend == CTXATTN_BACKEND_CPU_REFERENCE || a.backend == CTXATTN_BACKEND_CPU;
  const bool cuda_backend = a.backend == CTXATTN_BACKEND_CUDA_PORTABLE || a.backend == CTXATTN_BACKEND_CUDA_SM90;
  if (a.device_type == CTXATTN_DEVICE_CPU && cuda_backend) {
    return invalid(cat("backend: ", ctxattn_backend_name(a.backend), " needs CUDA tensors, got CPU tensors"));
  }
  if (a.device_type == CTXATTN_DEVICE_CUDA && cpu_backend) {
    return invalid(cat("backend: ", ctxattn_backend_name(a.backend), " needs CPU tensors, got CUDA tensors"));
  }
  if (a.enable_pdl < -1 || a.enable_pdl > 1) {
    return invalid(cat("enable_pdl: expected -1 (auto), 0 or 1, got ", a.enable_pdl));
  }
  if (a.num_threads < 0) return invalid(cat("num_threads: expected >= 0 (0 = all cores), got ", a.num_threads));
  if (a.check_metadata < -1 || a.check_metadata > 1) {
    return invalid(cat("check_metadata: expected -1 (environment), 0 or 1, got ", a.check_metadata));
  }
  if (a.workspace_size > 0 && a.workspace == nullptr) {
    return invalid("workspace_buffer: expected a data pointer, got NULL");
  }
  // The GPU backends keep 8-byte counters and 16-byte vectors of fp32 partials in it.
  if ((reinterpret_cast<uintptr_t>(a.workspace) & 15u) != 0) {
    return invalid(cat("workspace_buffer: expected a 16-byte aligned data pointer, got ", a.workspace));
  }
  return Status::Ok();
}

}  // namespace

Status validate_args(const ctxattn_args_t* args, Params* p) {
  if (args == nullptr) return invalid("args: expected a ctxattn_args_t pointer, got NULL");
  const ctxattn_args_t& a = *args;
  if (a.struct_size != sizeof(ctxattn_args_t)) {
    return invalid(cat("args: struct_size ", a.struct_size, " does not match this library's ctxattn_args_t (",
                       sizeof(ctxattn_args_t), " bytes); initialise with ctxattn_args_init()"));
  }
  *p = Params{};
  CTXATTN_RETURN_IF_ERROR(validate_sm107_flags(a));
  CTXATTN_RETURN_IF_ERROR(validate_enum_fields(a));
  CTXATTN_RETURN_IF_ERROR(validate_execution(a));
  CTXATTN_RETURN_IF_ERROR(validate_sizes(a));
  CTXATTN_RETURN_IF_ERROR(validate_query_and_kv(a, p));
  CTXATTN_RETURN_IF_ERROR(validate_metadata_pointers(a));
  CTXATTN_RETURN_IF_ERROR(validate_math(a));
  CTXATTN_RETURN_IF_ERROR(validate_skip_softmax(a, p));
  CTXATTN_RETURN_IF_ERROR(validate_output(a, p));

  p->num_tokens = a.num_tokens;
  p->num_qo_heads = a.num_qo_heads;
  p->num_kv_heads = a.num_kv_heads;
  p->group_size = a.num_qo_heads / a.num_kv_heads;
  p->group_div = FastDiv::make(p->group_size);
  p->head_dim = a.head_dim;
  p->page_size = a.page_size;
  p->log2_page_size = 0;
  while ((1 << p->log2_page_size) < a.page_size) ++p->log2_page_size;
  p->num_pages = a.num_pages;
  p->batch_size = a.batch_size;
  p->max_pages_per_seq = a.max_pages_per_seq;
  p->max_q_len = a.max_q_len;
  // max_kv_len may exceed what the table holds (SGLang passes the model's context length): the
  // kernels bound every request by both; a longer seq_lens is metadata that lies.
  p->max_kv_len_arg = a.max_kv_len;
  p->max_kv_len = static_cast<int32_t>(
      std::min<int64_t>(a.max_kv_len, static_cast<int64_t>(a.max_pages_per_seq) * a.page_size));
  p->q = a.query;
  p->q_dtype = a.query_dtype;
  p->q_stride_token = a.query_stride_token;
  p->q_stride_head = a.query_stride_head;
  p->k = a.k_cache;
  p->v = a.v_cache;
  p->kv_dtype = a.kv_dtype;
  p->block_tables = a.block_tables;
  p->separate_kv_idx = a.uses_shared_paged_kv_idx == 0;
  p->v_block_tables = p->separate_kv_idx && a.block_tables != nullptr ? a.block_tables + a.block_tables_kv_stride
                                                                     : a.block_tables;
  p->block_tables_stride = a.batch_size > 1 ? a.block_tables_stride : a.max_pages_per_seq;
  p->seq_lens = static_cast<const int32_t*>(a.seq_lens);
  p->seq_lens_unsigned = a.seq_lens_dtype == CTXATTN_DTYPE_UINT32;
  p->cum_seq_lens_q = a.cum_seq_lens_q;
  p->bmm1_scale = a.bmm1_scale;
  p->bmm2_scale = a.bmm2_scale;
  p->bmm1_scale_ptr = a.bmm1_scale_ptr;
  p->bmm2_scale_ptr = a.bmm2_scale_ptr;
  p->window_left = a.window_left;
  p->causal = a.causal != 0;
  p->sinks = a.sinks;
  p->out = a.out;
  p->out_dtype = a.out_dtype;
  p->out_stride_token = a.out_stride_token;
  p->out_stride_head = a.out_stride_head;
  p->out_scale = static_cast<uint8_t*>(a.out_scale);
  p->out_scale_start_index = a.out_scale_start_index;
  p->o_sf_scale = a.o_sf_scale;
  p->lse = a.lse;
  p->lse_stride_token = a.lse_stride_token;
  p->lse_stride_head = a.lse_stride_head;
  p->workspace = a.workspace;
  p->workspace_size = a.workspace_size;
  p->stream = a.stream;
  p->device_index = a.device_index;
  p->num_threads = a.num_threads;
  p->check_metadata = a.check_metadata < 0 ? env_flag("CTXATTN_CHECK_METADATA") : a.check_metadata == 1;

  if (a.device_type == CTXATTN_DEVICE_CUDA && cuda_built() && !cuda_available()) {
    return Status::Error(CTXATTN_STATUS_NO_DEVICE_SUPPORT,
                         "device_type: CUDA tensors were given, but no CUDA device is visible to ctxattn");
  }
  p->enable_pdl = false;
  if (a.device_type == CTXATTN_DEVICE_CUDA && a.enable_pdl != 0) {
    // PDL needs sm90; on older devices the request is a no-op (results are identical either way).
    int arch = 0;
    CTXATTN_RETURN_IF_ERROR(cuda_device_arch(a.device_index, &arch));
    p->enable_pdl = arch >= 90;
  }
  return Status::Ok();
}

size_t required_workspace_bytes(const Params& p, ctxattn_backend_t backend) {
  size_t bytes = kWorkspaceHeaderBytes;
  if (backend == CTXATTN_BACKEND_CUDA_PORTABLE) bytes += cuda_portable_workspace_bytes(p);
  if (backend == CTXATTN_BACKEND_CUDA_SM90) bytes += cuda_sm90_workspace_bytes(p);
  return bytes;
}

Status validate_workspace(const Params& p, ctxattn_backend_t backend) {
  const size_t need = required_workspace_bytes(p, backend);
  if (p.workspace_size < need) {
    return invalid(cat("workspace_buffer: expected at least ", need, " bytes for this call, got ", p.workspace_size));
  }
  return Status::Ok();
}

}  // namespace ctxattn
