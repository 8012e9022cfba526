// The Hopper backend's entry points (core/backends.h): which calls it serves, the tensor maps
// its TMA loads read, and the dispatch to the instantiation of (element type, head dim). Host
// code only; the kernels live in sm90/inst/ (compiled for sm_90a alone).
//
// Served: fp16 / bf16 Q with K/V of the same type or e4m3, e4m3 Q with e4m3 K/V (FP8 WGMMA), and
// at D = 128 and 256 e4m3 / fp16 / bf16 Q over NVFP4 K/V (HND scales, pages of 2048 / D tokens or more);
// head dims 64, 128, 256, and 512 (the column-split kernel, sm90/traits.cuh kColSplit: fp16 / bf16 Q over
// K/V of their type or e4m3, e4m3 Q over e4m3 K/V on FP8 WGMMA, or widened to fp16 for nvfp4 output),
// every page size (pages of 8+ tokens by TMA, smaller ones gathered by cp.async), every mask, sink,
// scale, LSE and output kind of the SPEC; K/V and Q with 16-byte aligned data and strides.
// Everything else is answered UNSUPPORTED with the reason, and AUTO then runs the portable backend
// (core/dispatch.cpp).
#include <cuda.h>
#include <stdint.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>

#include "core/backends.h"
#include "cuda/common/cuda_status.h"
#include "cuda/common/feature_gate.h"
#include "cuda/common/workspace.h"
#include "cuda/common/split_policy.h"
#if defined(CTXATTN_WITH_SM90)
#include "cuda/sm90/launch.h"
#endif

namespace ctxattn {
namespace {

Status unsupported(const std::string& message) { return Status::Error(CTXATTN_STATUS_UNSUPPORTED, message); }

#if defined(CTXATTN_WITH_SM90)

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; }
bool stride_ok(int64_t stride_elems, int64_t elem_bytes) {
  // TMA strides: multiples of 16 bytes below 2^40.
  const int64_t bytes = stride_elems * elem_bytes;
  return bytes > 0 && bytes % 16 == 0 && bytes < (int64_t{1} << 40);
}
bool row_stride_ok(int64_t extent, int64_t stride_elems, int64_t bytes_per_elem) {
  return extent <= 1 || (stride_elems * bytes_per_elem) % 16 == 0;
}

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled from the driver, through the runtime (the library links no libcuda).
Status encode_fn(EncodeTiled* fn) {
  static std::once_flag once;
  static EncodeTiled cached = nullptr;
  static cudaError_t error = cudaSuccess;
  std::call_once(once, [] {
    void* ptr = nullptr;
    cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
    error = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &query);
    if (error == cudaSuccess && query == cudaDriverEntryPointSuccess) cached = reinterpret_cast<EncodeTiled>(ptr);
  });
  if (cached == nullptr) {
    return Status::Error(CTXATTN_STATUS_CUDA_ERROR, std::string("device: cuTensorMapEncodeTiled is not available (") +
                                                        cudaGetErrorString(error) + ")");
  }
  *fn = cached;
  return Status::Ok();
}

// e4m3 Q, K and V run on FP8 WGMMA (H200: fp8.long_8k 907 us against 1465 on the widened
// kernel); CTXATTN_SM90_FP8_MMA=0 sends them to the fp16 kernel of the e4m3-KV path instead (Q
// widened as it is copied in). At head dim 512 nvfp4 output goes there too (the column-split
// FP8 kernel has no two-term P: sm90/traits.cuh kColSplit).
bool fp8_mma(const Params& p) {
  if (p.q_dtype != CTXATTN_DTYPE_FLOAT8_E4M3 || p.kv_dtype != CTXATTN_DTYPE_FLOAT8_E4M3) return false;
  if (p.head_dim == 512 && p.out_dtype == CTXATTN_DTYPE_NVFP4) return false;
  const char* env = std::getenv("CTXATTN_SM90_FP8_MMA");
  return env == nullptr || env[0] != '0';
}

// Whether the call's K / V stages are group-major (sm90/traits.cuh kKvGroupMajor): 16-bit Q and
// KV at head dims of two or more 64-column chunks.
bool group_major(const Params& p, bool qkv_fp8) {
  return p.kv_dtype != CTXATTN_DTYPE_FLOAT8_E4M3 && p.kv_dtype != CTXATTN_DTYPE_NVFP4 && !qkv_fp8 &&
         p.head_dim > sm90::kChunkCols;
}

// The head dims the sm90 backend compiles an NVFP4-KV kernel for (inst/attention_*_kv4_d*.cu).
bool nvfp4_head_dim(int head_dim) { return head_dim == 128 || head_dim == 256; }

// Head dim 512 (the column-split kernels, skip-softmax included): 16-bit Q, K and V of one dtype
// (inst/attention_{bf16,f16}_d512.cu), 16-bit Q over an e4m3 cache, widened to fp16
// (inst/attention_{bf16,f16}_kv8_d512.cu), and e4m3 Q over e4m3 on FP8 WGMMA
// (inst/attention_e4m3_d512.cu; nvfp4 output and CTXATTN_SM90_FP8_MMA=0 on the widened fp16 one:
// fp8_mma). NVFP4 caches at D = 512 have no GPU kernel (the CPU backend runs them).
bool d512_served(const Params& p) {
  const bool q16 = p.q_dtype == CTXATTN_DTYPE_BFLOAT16 || p.q_dtype == CTXATTN_DTYPE_FLOAT16;
  if (p.kv_dtype == CTXATTN_DTYPE_FLOAT8_E4M3) return q16 || p.q_dtype == CTXATTN_DTYPE_FLOAT8_E4M3;
  return q16 && p.kv_dtype == p.q_dtype;
}

// How the group-major maps number a pool's (page, KV head) pairs as one coordinate: unit = page *
// units + head, at unit * stride elements (launch.h TmaMaps). One KV head: units 1 at the page
// stride; else a page stride that is a multiple of the head stride (every layout of the SPEC: HND,
// NHD, the one-tensor forms), with every valid unit below 2^31. units == 0: not numberable.
struct PoolUnits {
  int32_t units = 0;
  int64_t stride = 0;
};
PoolUnits pool_units(const Params& p, int64_t stride_page, int64_t stride_head) {
  if (p.num_kv_heads == 1) return PoolUnits{1, stride_page};
  if (stride_head <= 0 || stride_page % stride_head != 0) return PoolUnits{};
  const int64_t u = stride_page / stride_head;
  if (u > INT32_MAX || (p.num_pages - 1) > (INT32_MAX - p.num_kv_heads) / u) return PoolUnits{};
  return PoolUnits{static_cast<int32_t>(u), stride_head};
}

// The pool (K or V) as TMA reads it (launch.h TmaMaps); coordinates past any extent read as zeros.
//   16-bit Q and KV, D >= 128: 5-D (d % 64, slot % 8, d / 64, slot / 8, unit), one box a page
//     piece with all its 64-column chunks, 128-byte swizzle: the group-major stage (traits.cuh).
//   16-bit Q and KV, D = 64: 4-D (d, slot, KV head, page), boxes of 64 columns x one page piece,
//     128-byte swizzle.
//   e4m3 KV under a 16-bit query: 4-D (d, slot, KV head, page), boxes of whole rows (D bytes) x
//     one page piece, no swizzle (the raw tile the wideners read).
//   e4m3 Q/K/V (qkv_fp8): 4-D, boxes of 128-byte chunks x one page piece, 128-byte swizzle, as
//     WGMMA reads K (64-byte rows and swizzle at D = 64).
//   NVFP4 KV: as e4m3 KV over rows of D / 2 bytes of codes (strides in bytes); the block scales
//     have maps of their own (make_scale_map).
Status make_pool_map(const Params& p, bool qkv_fp8, const void* base, int64_t stride_page, int64_t stride_head,
                     int64_t stride_token, int box_rows, CUtensorMap* map, int32_t* page_units) {
  EncodeTiled encode = nullptr;
  CTXATTN_RETURN_IF_ERROR(encode_fn(&encode));
  const bool fp4 = p.kv_dtype == CTXATTN_DTYPE_NVFP4;
  const bool raw = (p.kv_dtype == CTXATTN_DTYPE_FLOAT8_E4M3 && !qkv_fp8) || fp4;  // the wideners' raw rows
  const int64_t elem = raw || qkv_fp8 ? 1 : 2;
  // A box is at most 256 elements wide: raw rows of 512 bytes (e4m3 at D = 512) as 256 16-bit
  // elements (strides stay in bytes; the bytes land as they are).
  const bool raw_pairs = raw && !fp4 && p.head_dim > 256;
  const int64_t row_elems = fp4 || raw_pairs ? p.head_dim / 2 : p.head_dim;
  const cuuint32_t rows = static_cast<cuuint32_t>(p.page_size < box_rows ? p.page_size : box_rows);
  const CUtensorMapDataType type = raw_pairs         ? CU_TENSOR_MAP_DATA_TYPE_UINT16
                                   : raw || qkv_fp8 ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                   : p.kv_dtype == CTXATTN_DTYPE_BFLOAT16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                          : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  CUresult r;
  *page_units = 0;
  if (group_major(p, qkv_fp8)) {
    const PoolUnits pool = pool_units(p, stride_page, stride_head);
    *page_units = pool.units;
    if (pool.units == 0) {
      return unsupported("kv_cache: the sm90 backend needs the page stride to be a multiple of the head stride");
    }
    constexpr int kChunkCols = sm90::kChunkCols;
    const cuuint64_t units = static_cast<cuuint64_t>(p.num_pages - 1) * static_cast<cuuint64_t>(*page_units) +
                             static_cast<cuuint64_t>(p.num_kv_heads);
    const cuuint64_t dims[5] = {static_cast<cuuint64_t>(kChunkCols), 8, static_cast<cuuint64_t>(p.head_dim / kChunkCols),
                                static_cast<cuuint64_t>(p.page_size / 8), units};
    const cuuint64_t strides[4] = {static_cast<cuuint64_t>(stride_token * elem), sm90::kSwizzleBytes,
                                   static_cast<cuuint64_t>(8 * stride_token * elem),
                                   static_cast<cuuint64_t>(pool.stride * elem)};
    const cuuint32_t box[5] = {static_cast<cuuint32_t>(kChunkCols), 8, static_cast<cuuint32_t>(p.head_dim / kChunkCols),
                               rows / 8, 1};
    r = encode(map, type, 5, const_cast<void*>(base), dims, strides, box, element_strides,
               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  } else {
    const cuuint64_t dims[4] = {static_cast<cuuint64_t>(row_elems), static_cast<cuuint64_t>(p.page_size),
                                static_cast<cuuint64_t>(p.num_kv_heads), static_cast<cuuint64_t>(p.num_pages)};
    const cuuint64_t strides[3] = {static_cast<cuuint64_t>(stride_token * elem),
                                   static_cast<cuuint64_t>(stride_head * elem),
                                   static_cast<cuuint64_t>(stride_page * elem)};
    // qkv_fp8 at D = 64: rows of 64 bytes in the 64-byte swizzle (sm90/traits.cuh kRowBytes).
    const bool rows64 = qkv_fp8 && p.head_dim == 64;
    const cuuint32_t box[4] = {static_cast<cuuint32_t>(raw ? row_elems : !qkv_fp8 ? sm90::kChunkCols : rows64 ? 64 : 128),
                               rows, 1, 1};
    r = encode(map, type, 4, const_cast<void*>(base), dims, strides, box, element_strides,
               CU_TENSOR_MAP_INTERLEAVE_NONE, raw      ? CU_TENSOR_MAP_SWIZZLE_NONE
                                              : rows64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                                       : CU_TENSOR_MAP_SWIZZLE_128B,
               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  }
  if (r != CUDA_SUCCESS) {
    return unsupported("kv_cache: the sm90 backend could not describe the KV pool to TMA (cuTensorMapEncodeTiled "
                       "error " + std::to_string(static_cast<int>(r)) + ")");
  }
  return Status::Ok();
}

// NVFP4 block scales (K's or V's) as TMA reads them (launch.h TmaMaps): each (page, KV head) tile
// of page_size x D / 16 bytes is contiguous (the token stride is D / 16: cuda_sm90_supports), so
// a page piece's scales, K's linear and V's interleaved by 4 tokens alike, are the bytes
// [slot x D / 16, (slot + rows) x D / 16) of its tile: 4-D (16-byte unit, unit of the tile, KV
// head, page), boxes of 16 bytes x rows x D / 256 units, landing as the tile holds them.
Status make_scale_map(const Params& p, const void* base, int64_t stride_page, int64_t stride_head, int box_rows,
                      CUtensorMap* map) {
  EncodeTiled encode = nullptr;
  CTXATTN_RETURN_IF_ERROR(encode_fn(&encode));
  const int64_t row_bytes = p.head_dim / 16;
  const int64_t rows = p.page_size < box_rows ? p.page_size : box_rows;
  const cuuint64_t dims[4] = {16, static_cast<cuuint64_t>(p.page_size * row_bytes / 16),
                              static_cast<cuuint64_t>(p.num_kv_heads), static_cast<cuuint64_t>(p.num_pages)};
  // An unstepped extent's stride is still checked by TMA (as in make_row_box_map): 16 stands in.
  const int64_t head_stride = p.num_kv_heads > 1 ? stride_head : 16;
  const cuuint64_t strides[3] = {16, static_cast<cuuint64_t>(head_stride), static_cast<cuuint64_t>(stride_page)};
  const cuuint32_t box[4] = {16, static_cast<cuuint32_t>(rows * row_bytes / 16), 1, 1};
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 4, const_cast<void*>(base), dims, strides, box,
                            element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    return unsupported("kv_cache_sf: the sm90 backend could not describe the NVFP4 scale pool to TMA "
                       "(cuTensorMapEncodeTiled error " + std::to_string(static_cast<int>(r)) + ")");
  }
  return Status::Ok();
}

// A consumer warpgroup's 64 packed rows of a [token, head, d] tensor as one TMA box a 64-column
// chunk: the tensor as 3-D (d, head, token), boxes of 64 columns x G heads x 64 / G tokens, 128-byte
// swizzle (the Q tile's layout: sm90/load.cuh). 16-bit elements, G dividing 64 (64 packed rows are
// 64 / G whole tokens), 16-byte strides; `env_switch` set to 0 leaves the map undescribed (the
// kernel then copies rows itself), for comparisons. *described = false: not describable.
Status make_row_box_map(const Params& p, const void* data, ctxattn_dtype_t dtype, int64_t stride_head,
                        int64_t stride_token, const char* env_switch, CUtensorMap* map, int32_t* described) {
  *described = 0;
  const bool dense16 = dtype == CTXATTN_DTYPE_FLOAT16 || dtype == CTXATTN_DTYPE_BFLOAT16;
  const int64_t eb = dense16 ? 2 : 1;  // e4m3: 128-byte boxes of 128 codes
  const char* env = std::getenv(env_switch);
  if ((!dense16 && dtype != CTXATTN_DTYPE_FLOAT8_E4M3) || p.group_size <= 0 || 64 % p.group_size != 0 ||
      (env != nullptr && env[0] == '0')) {
    return Status::Ok();
  }
  // A stride is stepped only when its extent passes 1, but TMA wants every one valid (stride_ok):
  // an unstepped one is given as 8 elements.
  const int64_t head_stride = p.num_qo_heads > 1 ? stride_head : 8;
  const int64_t token_stride = p.num_tokens > 1 ? stride_token : 8;
  if (!stride_ok(head_stride, eb) || !stride_ok(token_stride, eb)) return Status::Ok();
  EncodeTiled encode = nullptr;
  CTXATTN_RETURN_IF_ERROR(encode_fn(&encode));
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(p.head_dim), static_cast<cuuint64_t>(p.num_qo_heads),
                              static_cast<cuuint64_t>(p.num_tokens)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(head_stride * eb), static_cast<cuuint64_t>(token_stride * eb)};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(sm90::kSwizzleBytes / eb), static_cast<cuuint32_t>(p.group_size),
                             static_cast<cuuint32_t>(sm90::kRowsPerWarpgroup / p.group_size)};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  const CUresult r = encode(map,
                            !dense16                            ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                            : dtype == CTXATTN_DTYPE_BFLOAT16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                              : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                            3, const_cast<void*>(data), dims, strides, box, element_strides,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r == CUDA_SUCCESS) *described = 1;  // otherwise the kernel's own row copies, which serve any layout
  return Status::Ok();
}

// The output for the epilogue's TMA stores (launch.h TmaMaps; CTXATTN_SM90_TMA_STORE=0 leaves
// the row stores to the epilogue).
Status make_out_map(const Params& p, CUtensorMap* map, int32_t* described) {
  if (p.out_dtype != CTXATTN_DTYPE_FLOAT16 && p.out_dtype != CTXATTN_DTYPE_BFLOAT16) {
    *described = 0;  // the 8- and 4-bit outputs are stored by rows (sm90/epilogue.cuh)
    return Status::Ok();
  }
  return make_row_box_map(p, p.out, p.out_dtype, p.out_stride_head, p.out_stride_token, "CTXATTN_SM90_TMA_STORE",
                          map, described);
}

// The queries for the consumers' TMA loads (launch.h TmaMaps), for the kernels over a cache of the
// query's own type at D = 128 (sm90 Traits::kQByTma: 16-bit, and e4m3 on FP8 WGMMA; qkv_fp8 says
// the call runs there; CTXATTN_SM90_TMA_Q=0 leaves the cp.async copies).
Status make_q_map(const Params& p, bool qkv_fp8, CUtensorMap* map, int32_t* described) {
  *described = 0;
  if (p.kv_dtype != p.q_dtype || p.head_dim != 128) return Status::Ok();
  if (p.q_dtype == CTXATTN_DTYPE_FLOAT8_E4M3 && !qkv_fp8) return Status::Ok();
  return make_row_box_map(p, p.q, p.q_dtype, p.q_stride_head, p.q_stride_token, "CTXATTN_SM90_TMA_Q", map, described);
}

// Rows of a TMA box at most (a box holds min(page size, this) rows): the traits' kBoxRows of the
// call's kernel (its kBlockN, but for the long form of the e4m3 D = 128 kernel: kLongBoxRows).
int box_rows_for(const Params& p, bool qkv_fp8) {
  static_assert(sm90::Traits<64, false, true>::kBoxRows == sm90::Traits<64>::kBoxRows &&
                    sm90::Traits<128, false, true, false, sm90::kTakeShort>::kBoxRows == sm90::Traits<128>::kBoxRows &&
                    sm90::Traits<64, false, true, true>::kBoxRows == sm90::Traits<64>::kBoxRows &&
                    sm90::Traits<128, false, true, true>::kBoxRows == sm90::Traits<128>::kBoxRows,
                "one box height a head dim below 256 (but the long form's)");
  static_assert(sm90::Traits<128, sm90::kKvNvfp4>::kBoxRows == sm90::Traits<128>::kBoxRows &&
                    sm90::Traits<256, sm90::kKvNvfp4>::kBoxRows == sm90::Traits<256>::kBoxRows,
                "the NVFP4 kernels take the 16-bit kernels' boxes");
  switch (p.head_dim) {
    case 64: return sm90::Traits<64>::kBoxRows;
    case 128: return sm90::Traits<128>::kBoxRows;
    case 512:
      static_assert(sm90::Traits<512, sm90::kKvE4m3>::kBoxRows == sm90::Traits<512>::kBoxRows &&
                        sm90::Traits<512, sm90::kKv16, true>::kBoxRows == sm90::Traits<512>::kBoxRows,
                    "one box height at D = 512");
      return sm90::Traits<512>::kBoxRows;
    default:
      if (!qkv_fp8) return sm90::Traits<256>::kBoxRows;
      return p.out_dtype == CTXATTN_DTYPE_NVFP4 ? sm90::Traits<256, false, true, true>::kBoxRows
                                                : sm90::Traits<256, false, true>::kBoxRows;
  }
}
constexpr int kLongBoxRows = sm90::Traits<128, false, true, false, sm90::kTakeLong>::kBoxRows;

template <sm90::Elem kElem, int kKv>
Status run_elem(const Params& p, const sm90::LaunchEnv& env, const sm90::TmaMaps& maps) {
  if constexpr (kKv == sm90::kKvNvfp4) {
    if (p.head_dim == 128) return sm90::run_attention<kElem, 128, kKv>(p, env, maps);
    if (p.head_dim == 256) return sm90::run_attention<kElem, 256, kKv>(p, env, maps);
  } else {
    switch (p.head_dim) {
      case 64: return sm90::run_attention<kElem, 64, kKv>(p, env, maps);
      case 128: return sm90::run_attention<kElem, 128, kKv>(p, env, maps);
      case 256: return sm90::run_attention<kElem, 256, kKv>(p, env, maps);
      case 512:
        if constexpr (kElem != sm90::Elem::kE4m3 && kKv != sm90::kKvNvfp4) {
          return sm90::run_attention<kElem, 512, kKv>(p, env, maps);
        }
        break;
      default: break;
    }
  }
  return unsupported("head_dim: the sm90 backend implements head dims 64, 128, 256 and 512, got " +
                     std::to_string(p.head_dim));
}

// e4m3 Q, K and V (FP8 WGMMA); the head dim is one of 64, 128, 256 and 512 (cuda_sm90_supports).
Status run_qkv_fp8(const Params& p, const sm90::LaunchEnv& env, const sm90::TmaMaps& maps) {
  switch (p.head_dim) {
    case 64: return sm90::run_attention<sm90::Elem::kE4m3, 64, sm90::kKv16>(p, env, maps);
    case 128: return sm90::run_attention<sm90::Elem::kE4m3, 128, sm90::kKv16>(p, env, maps);
    case 512: return sm90::run_attention<sm90::Elem::kE4m3, 512, sm90::kKv16>(p, env, maps);
    default: return sm90::run_attention<sm90::Elem::kE4m3, 256, sm90::kKv16>(p, env, maps);
  }
}

// Split-KV counters and partials at head dim kD: the 16-bit kernel's traits have the most consumer
// warpgroups of the head dim, and every kernel of it stores the same partial a warpgroup.
template <int kD>
size_t split_bytes_at(const Params& p, int sms) {
  using Tr = sm90::Traits<kD>;
  using KvFp8 = sm90::Traits<kD, true>;
  using QkvFp8 = sm90::Traits<kD, false, true>;
  using KvFp4 = sm90::Traits<kD, sm90::kKvNvfp4>;
  static_assert(KvFp8::kConsumerWarpgroups <= Tr::kConsumerWarpgroups &&
                    QkvFp8::kConsumerWarpgroups <= Tr::kConsumerWarpgroups &&
                    KvFp4::kConsumerWarpgroups <= Tr::kConsumerWarpgroups &&
                    KvFp8::kSplitGroupFloats == Tr::kSplitGroupFloats &&
                    QkvFp8::kSplitGroupFloats == Tr::kSplitGroupFloats &&
                    KvFp4::kSplitGroupFloats == Tr::kSplitGroupFloats,
                "the workspace covers every kernel of the head dim");
  return split_workspace_bytes(p, sms, Tr::kConsumerWarpgroups, Tr::kSplitGroupFloats);
}

#endif  // CTXATTN_WITH_SM90

}  // namespace

// The kernel gathers the call's pages with cp.async (sm90/load.cuh KvProducer::gather): pages of
// fewer than 8 tokens, too small for a useful TMA box (sm90::gathers_pages, the kernel's rule too).
bool cuda_sm90_gathers_pages(const Params& p) {
#if defined(CTXATTN_WITH_SM90)
  return sm90::gathers_pages(p.log2_page_size);
#else
  (void)p;
  return false;
#endif
}

size_t cuda_sm90_workspace_bytes(const Params& p) {
#if !defined(CTXATTN_WITH_SM90)
  (void)p;
  return 0;
#else
  // Split-KV counters and partials (cuda/common/split_policy.h); nothing when no request of the
  // call can split.
  int sms = 0;
  if (!cuda_sm_count(p.device_index, &sms).ok()) return 0;
  switch (p.head_dim) {
    case 64: return split_bytes_at<64>(p, sms);
    case 128: return split_bytes_at<128>(p, sms);
    case 256: return split_bytes_at<256>(p, sms);
    case 512: {  // the 16-bit, the e4m3-cache and the FP8 kernels
      using Tr = sm90::Traits<512>;
      using KvFp8 = sm90::Traits<512, sm90::kKvE4m3>;
      using QkvFp8 = sm90::Traits<512, sm90::kKv16, true>;
      static_assert(KvFp8::kBlockM == Tr::kBlockM && KvFp8::kSplitGroups == Tr::kSplitGroups &&
                        KvFp8::kSplitGroupFloats == Tr::kSplitGroupFloats && QkvFp8::kBlockM == Tr::kBlockM &&
                        QkvFp8::kSplitGroups == Tr::kSplitGroups && QkvFp8::kSplitGroupFloats == Tr::kSplitGroupFloats,
                    "one split plan at D = 512");
      return split_workspace_bytes(p, sms, Tr::kSplitGroups, Tr::kSplitGroupFloats);
    }
    default: return 0;
  }
#endif
}

Status cuda_sm90_supports(const Params& p) {
#if !defined(CTXATTN_WITH_SM90)
  (void)p;
  return unsupported("backend: this ctxattn library was built without the sm90 (Hopper) kernels (add 90a to "
                     "CTXATTN_CUDA_ARCHS)");
#else
  CTXATTN_RETURN_IF_ERROR(cuda_feature_gate(p, "cuda_sm90", CudaFeatures{true, true}));
  int arch = 0;
  CTXATTN_RETURN_IF_ERROR(cuda_device_arch(p.device_index, &arch));
  if (arch != 90) {
    return unsupported("device: the sm90 backend runs on compute capability 9.0 (Hopper) only, got " +
                       std::to_string(arch / 10) + "." + std::to_string(arch % 10));
  }
  if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256 && p.head_dim != 512) {
    return unsupported("head_dim: the sm90 backend implements head dims 64, 128, 256 and 512, got " +
                       std::to_string(p.head_dim));
  }
  if (p.head_dim == 512 && !d512_served(p)) {
    return unsupported("head_dim: the sm90 backend runs head dim 512 for fp16 and bf16 queries over a cache of the "
                       "query's dtype or e4m3, and e4m3 queries over e4m3 (not NVFP4 caches)");
  }
  const bool q16 = p.q_dtype == CTXATTN_DTYPE_FLOAT16 || p.q_dtype == CTXATTN_DTYPE_BFLOAT16;
  const bool kv_fp8 = p.kv_dtype == CTXATTN_DTYPE_FLOAT8_E4M3;
  const bool kv_fp4 = p.kv_dtype == CTXATTN_DTYPE_NVFP4;
  // e4m3 queries: over an e4m3 cache, on the fp16 kernel of the e4m3-KV path (both widened
  // exactly to fp16) or, where fp8_mma says so, on FP8 WGMMA; over an NVFP4 cache, on the fp16
  // kernel of the NVFP4 path.
  const bool q_fp8 = p.q_dtype == CTXATTN_DTYPE_FLOAT8_E4M3 && (kv_fp8 || kv_fp4);
  if (!(q16 || q_fp8) || (p.kv_dtype != p.q_dtype && !kv_fp8 && !kv_fp4)) {
    return unsupported("kv_cache: the sm90 backend implements fp16 and bf16 queries over KV of the same dtype, e4m3 "
                       "or NVFP4, and e4m3 queries over e4m3 or NVFP4");
  }
  if (kv_fp4) {
    // The NVFP4 kernels (inst/attention_{f16,bf16}_kv4_d{128,256}.cu; e4m3 queries on the fp16
    // ones): TMA boxes of codes and of whole scale rows, so pages of 2048 / D tokens or more
    // (below), and scale tiles contiguous per (page, KV head) (HND).
    if (!nvfp4_head_dim(p.head_dim)) {
      return unsupported("head_dim: the sm90 backend implements NVFP4 KV caches at head dims 128 and 256, got " +
                         std::to_string(p.head_dim) + " (cuda_portable runs it)");
    }
    // A page piece's scales land at piece x rows x D / 16 bytes in the raw stage, and a TMA box's
    // destination must be 128-byte aligned: pages of 16+ tokens at D = 128 (8 measured a
    // misaligned-address fault on the H100).
    if (p.page_size * (p.head_dim / 16) < 128) {
      return unsupported("page_size: the sm90 backend reads NVFP4 KV caches by TMA, pages of " +
                         std::to_string(2048 / p.head_dim) + " tokens or more at head_dim " +
                         std::to_string(p.head_dim) + " (got " + std::to_string(p.page_size) +
                         "; cuda_portable runs it)");
    }
    const int64_t sf_row = p.head_dim / 16;
    if (!aligned16(p.k_sf) || !aligned16(p.v_sf) || p.k_sf_stride_token != sf_row || p.v_sf_stride_token != sf_row ||
        !stride_ok(p.k_sf_stride_page, 1) || !stride_ok(p.v_sf_stride_page, 1) ||
        (p.num_kv_heads > 1 && (!stride_ok(p.k_sf_stride_head, 1) || !stride_ok(p.v_sf_stride_head, 1)))) {
      return unsupported("kv_cache_sf: the sm90 backend needs 16-byte aligned scale pools whose (page, KV head) tiles "
                         "are contiguous (token stride D / 16: the HND layout) with page / head strides that are "
                         "multiples of 16 bytes");
    }
  }
  const int64_t kvb = kv_fp8 || kv_fp4 ? 1 : 2;
  if (!aligned16(p.k) || !aligned16(p.v) || !stride_ok(p.k_stride_page, kvb) || !stride_ok(p.k_stride_head, kvb) ||
      !stride_ok(p.k_stride_token, kvb) || !stride_ok(p.v_stride_page, kvb) || !stride_ok(p.v_stride_head, kvb) ||
      !stride_ok(p.v_stride_token, kvb)) {
    return unsupported("kv_cache: the sm90 backend needs K and V data pointers and page / head / token strides that "
                       "are positive multiples of 16 bytes");
  }
  // The group-major maps number (page, KV head) pairs as one coordinate; gathered pages (fewer
  // than 8 tokens) take any page stride.
  if (group_major(p, false) && !cuda_sm90_gathers_pages(p)) {
    if (pool_units(p, p.k_stride_page, p.k_stride_head).units == 0 ||
        pool_units(p, p.v_stride_page, p.v_stride_head).units == 0) {
      return unsupported("kv_cache: the sm90 backend needs page strides that are multiples of the head stride, with "
                         "num_pages * page_stride / head_stride below 2^31");
    }
  }
  const int qb = q_fp8 ? 1 : 2;
  if (!aligned16(p.q) || !row_stride_ok(p.num_tokens, p.q_stride_token, qb) ||
      !row_stride_ok(p.num_qo_heads, p.q_stride_head, qb)) {
    return unsupported("query: the sm90 backend needs the data pointer and the token / head strides 16-byte aligned");
  }
  const int ob = p.out_dtype == CTXATTN_DTYPE_FLOAT16 || p.out_dtype == CTXATTN_DTYPE_BFLOAT16 ? 2 : 1;
  if (!aligned16(p.out) || !row_stride_ok(p.num_tokens, p.out_stride_token, ob) ||
      !row_stride_ok(p.num_qo_heads, p.out_stride_head, ob)) {
    return unsupported("out: the sm90 backend needs the data pointer and the token / head strides 16-byte aligned");
  }
  // M tiles of two or three consumer warpgroups (traits.cuh): the largest bounds the rows a CTA
  // addresses, the smallest the number of work items.
  constexpr int64_t kMaxBlockM = sm90::kMaxConsumerWarpgroups * sm90::kRowsPerWarpgroup;
  // (Head dim 512's M tile: a 64-row block a CTA, its two warpgroups splitting the columns.)
  const int64_t min_block_m =
      p.head_dim != 512 ? sm90::kMinConsumerWarpgroups * sm90::kRowsPerWarpgroup : sm90::Traits<512>::kBlockM;
  // A warpgroup addresses packed rows (query row * G + head) up to a block past the CTA's first.
  if (p.num_tokens * p.num_qo_heads > INT32_MAX - 2 * kMaxBlockM) {
    return unsupported("query: num_tokens * num_qo_heads must stay below " +
                       std::to_string(INT32_MAX - 2 * kMaxBlockM) + " for the sm90 backend");
  }
  int sms = 0;
  CTXATTN_RETURN_IF_ERROR(cuda_sm_count(p.device_index, &sms));
  if (split_slots(p, sms, static_cast<int>(min_block_m)) * p.batch_size > INT32_MAX) {
    return unsupported("max_q_len: max_q_len * num_qo_heads * batch_size is too large for one grid of the sm90 "
                       "backend");
  }
  return Status::Ok();
#endif
}

Status cuda_sm90_run(const Params& p) {
#if !defined(CTXATTN_WITH_SM90)
  return cuda_sm90_supports(p);
#else
  // Nothing to compute: no launch (a grid of zero blocks is a launch error).
  if (p.batch_size == 0 || p.max_q_len == 0 || p.num_tokens == 0) return Status::Ok();
  sm90::TmaMaps maps{};
  const bool qkv_fp8 = fp8_mma(p);  // reads the environment once a call
  const int box_rows = box_rows_for(p, qkv_fp8);
  if (!cuda_sm90_gathers_pages(p)) {  // gathered pages: the kernel reads K and V without maps
    CTXATTN_RETURN_IF_ERROR(make_pool_map(p, qkv_fp8, p.k, p.k_stride_page, p.k_stride_head, p.k_stride_token,
                                          box_rows, &maps.k, &maps.k_page_units));
    CTXATTN_RETURN_IF_ERROR(make_pool_map(p, qkv_fp8, p.v, p.v_stride_page, p.v_stride_head, p.v_stride_token,
                                          box_rows, &maps.v, &maps.v_page_units));
    if (p.kv_dtype == CTXATTN_DTYPE_NVFP4) {
      CTXATTN_RETURN_IF_ERROR(make_scale_map(p, p.k_sf, p.k_sf_stride_page, p.k_sf_stride_head, box_rows, &maps.k_sf));
      CTXATTN_RETURN_IF_ERROR(make_scale_map(p, p.v_sf, p.v_sf_stride_page, p.v_sf_stride_head, box_rows, &maps.v_sf));
    }
  }
  CTXATTN_RETURN_IF_ERROR(make_out_map(p, &maps.out, &maps.out_tma));
  CTXATTN_RETURN_IF_ERROR(make_q_map(p, qkv_fp8, &maps.q, &maps.q_tma));
  // The long form of the e4m3 D = 128 kernel (sm90/run.cuh run_attention, which says which calls
  // launch it): boxes of at most 64 rows, which differ from the short form's only for pages of
  // more than 64 tokens.
  sm90::TmaMaps long_maps = maps;
  if (qkv_fp8 && p.head_dim == 128 && p.max_kv_len >= sm90::kLongTileMinKv && p.page_size > kLongBoxRows) {
    CTXATTN_RETURN_IF_ERROR(make_pool_map(p, qkv_fp8, p.k, p.k_stride_page, p.k_stride_head, p.k_stride_token,
                                          kLongBoxRows, &long_maps.k, &long_maps.k_page_units));
    CTXATTN_RETURN_IF_ERROR(make_pool_map(p, qkv_fp8, p.v, p.v_stride_page, p.v_stride_head, p.v_stride_token,
                                          kLongBoxRows, &long_maps.v, &long_maps.v_page_units));
  }
  DeviceGuard guard;
  CTXATTN_RETURN_IF_ERROR(guard.set(p.device_index));
  CTXATTN_RETURN_IF_ERROR(reset_skip_stats(p));
  int sms = 0;
  CTXATTN_RETURN_IF_ERROR(cuda_sm_count(p.device_index, &sms));
  const sm90::LaunchEnv env{static_cast<cudaStream_t>(p.stream), p.device_index, p.enable_pdl, sms, &long_maps};
  if (qkv_fp8) return run_qkv_fp8(p, env, maps);
  const bool bf16 = p.q_dtype == CTXATTN_DTYPE_BFLOAT16;  // other e4m3 queries: the fp16 kernel
  if (p.kv_dtype == CTXATTN_DTYPE_FLOAT8_E4M3) {
    return bf16 ? run_elem<sm90::Elem::kBFloat16, sm90::kKvE4m3>(p, env, maps)
                : run_elem<sm90::Elem::kFloat16, sm90::kKvE4m3>(p, env, maps);
  }
  if (p.kv_dtype == CTXATTN_DTYPE_NVFP4) {
    return bf16 ? run_elem<sm90::Elem::kBFloat16, sm90::kKvNvfp4>(p, env, maps)
                : run_elem<sm90::Elem::kFloat16, sm90::kKvNvfp4>(p, env, maps);
  }
  return bf16 ? run_elem<sm90::Elem::kBFloat16, sm90::kKv16>(p, env, maps)
              : run_elem<sm90::Elem::kFloat16, sm90::kKv16>(p, env, maps);
#endif
}

}  // namespace ctxattn
