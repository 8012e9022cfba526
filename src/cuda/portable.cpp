// The portable CUDA backend's entry points (core/backends.h): what it supports, the workspace it
// needs, and the dispatch of a validated call to the instantiation of its (matrix type, head
// dim, KV storage). Host code only; the kernels live in sm80/inst/.
#include <stdint.h>

#include <algorithm>
#include <string>

#include "core/backends.h"
#include "cuda/common/cuda_status.h"
#include "cuda/common/feature_gate.h"
#include "cuda/common/split_policy.h"
#include "cuda/common/workspace.h"
#include "cuda/sm80/launch.h"

namespace ctxattn {
namespace {

using sm80::KvStore;
using sm80::MmaType;

Status unsupported(const std::string& message) { return Status::Error(CTXATTN_STATUS_UNSUPPORTED, message); }

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; }

// A stride matters only when its dimension has more than one index.
bool stride_aligned16(int64_t extent, int64_t stride, int64_t bytes_per_unit) {
  return extent <= 1 || (stride * bytes_per_unit) % 16 == 0;
}

int dtype_bytes(ctxattn_dtype_t dtype) {
  return dtype == CTXATTN_DTYPE_FLOAT16 || dtype == CTXATTN_DTYPE_BFLOAT16 ? 2 : 1;
}

// The kernel moves 16-byte chunks, so every row it reads or writes must start on 16 bytes.
Status check_alignment(const Params& p) {
  const int qb = dtype_bytes(p.q_dtype);
  if (!aligned16(p.q) || !stride_aligned16(p.num_tokens, p.q_stride_token, qb) ||
      !stride_aligned16(p.num_qo_heads, p.q_stride_head, qb)) {
    return unsupported("query: the portable CUDA backend needs the data pointer and the token / head strides "
                       "16-byte aligned");
  }
  const int kb = dtype_bytes(p.kv_dtype);
  const bool k_ok = aligned16(p.k) && stride_aligned16(p.num_pages, p.k_stride_page, kb) &&
                    stride_aligned16(p.num_kv_heads, p.k_stride_head, kb) &&
                    stride_aligned16(p.page_size, p.k_stride_token, kb);
  const bool v_ok = aligned16(p.v) && stride_aligned16(p.num_pages, p.v_stride_page, kb) &&
                    stride_aligned16(p.num_kv_heads, p.v_stride_head, kb) &&
                    stride_aligned16(p.page_size, p.v_stride_token, kb);
  if (!k_ok || !v_ok) {
    return unsupported("kv_cache: the portable CUDA backend needs K and V data pointers and page / head / token "
                       "strides 16-byte aligned");
  }
  const int ob = p.out_dtype == CTXATTN_DTYPE_FLOAT16 || p.out_dtype == CTXATTN_DTYPE_BFLOAT16 ? 2 : 1;
  if (!aligned16(p.out) || !stride_aligned16(p.num_tokens, p.out_stride_token, ob) ||
      !stride_aligned16(p.num_qo_heads, p.out_stride_head, ob)) {
    return unsupported("out: the portable CUDA backend needs the data pointer and the token / head strides "
                       "16-byte aligned");
  }
  return Status::Ok();
}

KvStore kv_store(const Params& p) {
  return p.kv_dtype == CTXATTN_DTYPE_FLOAT8_E4M3 ? KvStore::kE4m3
         : p.kv_dtype == CTXATTN_DTYPE_NVFP4     ? KvStore::kNvfp4
                                                 : KvStore::k16;
}

// Head dim 512 is built for the combinations FlashInfer serves there (16-bit Q and KV, e4m3 Q
// and KV: fp16 matrices over an e4m3 cache), not for bf16 queries over an e4m3 cache nor NVFP4
// caches (supports() refuses them), which keeps the library small.
template <MmaType kType, int kHeadDim>
Status run_matrix_type(const Params& p, const sm80::LaunchEnv& env) {
  switch (kv_store(p)) {
    case KvStore::kE4m3:
      if constexpr (kHeadDim == 512 && kType == MmaType::kBFloat16) break;
      else return sm80::run_attention<kType, kHeadDim, KvStore::kE4m3>(p, env);
    case KvStore::kNvfp4:
      if constexpr (kHeadDim == 512) break;
      else return sm80::run_attention<kType, kHeadDim, KvStore::kNvfp4>(p, env);
    default: return sm80::run_attention<kType, kHeadDim, KvStore::k16>(p, env);
  }
  return unsupported("kv_cache: dtype combination not implemented by the portable CUDA backend at head_dim 512");
}

// Whether the portable kernel of head dim 512 is built for the call's dtypes (run_matrix_type).
bool d512_builds(const Params& p) {
  if (p.kv_dtype == CTXATTN_DTYPE_NVFP4) return false;
  return !(p.kv_dtype == CTXATTN_DTYPE_FLOAT8_E4M3 && p.q_dtype == CTXATTN_DTYPE_BFLOAT16);
}

template <int kHeadDim>
Status run_head_dim(const Params& p, const sm80::LaunchEnv& env) {
  // fp16 matrices for fp16 and e4m3 queries (e4m3 is exact in fp16, and P keeps 10 mantissa bits).
  if (p.q_dtype == CTXATTN_DTYPE_BFLOAT16) return run_matrix_type<MmaType::kBFloat16, kHeadDim>(p, env);
  return run_matrix_type<MmaType::kFloat16, kHeadDim>(p, env);
}

template <int kHeadDim>
int smem_for(const Params& p) {
  switch (kv_store(p)) {
    case KvStore::kE4m3: return sm80::Traits<kHeadDim, KvStore::kE4m3>::kSmemBytes;
    case KvStore::kNvfp4: return sm80::Traits<kHeadDim, KvStore::kNvfp4>::kSmemBytes;
    default: return sm80::Traits<kHeadDim, KvStore::k16>::kSmemBytes;
  }
}

template <int kHeadDim>
int block_m_for() {
  return sm80::Traits<kHeadDim, KvStore::k16>::kBlockM;
}

template <int kHeadDim>
size_t split_bytes_for(const Params& p, int sms) {
  // Every KV storage shares the thread layout and CTAs an SM.
  using Tr = sm80::Traits<kHeadDim, KvStore::k16>;
  static_assert(Tr::kSplitGroupFloats == sm80::Traits<kHeadDim, KvStore::kE4m3>::kSplitGroupFloats &&
                    Tr::kSplitGroupFloats == sm80::Traits<kHeadDim, KvStore::kNvfp4>::kSplitGroupFloats &&
                    Tr::kMinBlocksPerSm == sm80::Traits<kHeadDim, KvStore::kNvfp4>::kMinBlocksPerSm,
                "one partial size");
  return split_workspace_bytes(p, sms * Tr::kMinBlocksPerSm, 1, Tr::kSplitGroupFloats);
}

template <int kHeadDim>
int64_t slots_for(const Params& p, int sms) {
  using Tr = sm80::Traits<kHeadDim, KvStore::k16>;
  return split_slots(p, Tr::kSplits ? sms * Tr::kMinBlocksPerSm : 0, Tr::kBlockM);
}

// NVFP4 block scales: each token row's D / 16 bytes are copied whole (cp.async of 4, 8 or 16
// bytes), so their base and every stride must be multiples of min(D / 16, 16) bytes.
Status check_scale_alignment(const Params& p) {
  if (p.kv_dtype != CTXATTN_DTYPE_NVFP4) return Status::Ok();
  const int64_t unit = std::min<int64_t>(p.head_dim / 16, 16);
  auto ok = [&](const void* base, int64_t page, int64_t head, int64_t token) {
    return reinterpret_cast<uintptr_t>(base) % unit == 0 && (p.num_pages <= 1 || page % unit == 0) &&
           (p.num_kv_heads <= 1 || head % unit == 0) && (p.page_size <= 1 || token % unit == 0);
  };
  if (!ok(p.k_sf, p.k_sf_stride_page, p.k_sf_stride_head, p.k_sf_stride_token) ||
      !ok(p.v_sf, p.v_sf_stride_page, p.v_sf_stride_head, p.v_sf_stride_token)) {
    return unsupported("kv_cache_sf: the portable CUDA backend needs the scale pointers and their page / head / "
                       "token strides multiples of " + std::to_string(unit) + " bytes at head_dim " +
                       std::to_string(p.head_dim));
  }
  return Status::Ok();
}

}  // namespace

size_t cuda_portable_workspace_bytes(const Params& p) {
  // Split-KV counters and partials (cuda/common/split_policy.h); nothing when no request of the
  // call can split.
  int sms = 0;
  if (!cuda_sm_count(p.device_index, &sms).ok()) return 0;
  switch (p.head_dim) {
    case 64: return split_bytes_for<64>(p, sms);
    case 128: return split_bytes_for<128>(p, sms);
    case 256: return split_bytes_for<256>(p, sms);
    default: return 0;  // D = 512 never splits
  }
}

Status cuda_portable_supports(const Params& p) {
  // Skip-softmax runs dense here: no tile is ever skipped (docs/cuda-portable.md).
  CTXATTN_RETURN_IF_ERROR(cuda_feature_gate(p, "cuda_portable", CudaFeatures{true, true}));
  int smem = 0;
  int block_m = 0;
  switch (p.head_dim) {
    case 64: smem = smem_for<64>(p); block_m = block_m_for<64>(); break;
    case 128: smem = smem_for<128>(p); block_m = block_m_for<128>(); break;
    case 256: smem = smem_for<256>(p); block_m = block_m_for<256>(); break;
    case 512:
      if (!d512_builds(p)) {
        return unsupported("kv_cache: at head_dim 512 the portable CUDA backend runs 16-bit caches of the query's "
                           "dtype and e4m3 caches under fp16 or e4m3 queries (not NVFP4, nor e4m3 under bf16)");
      }
      smem = smem_for<512>(p); block_m = block_m_for<512>(); break;
    default:
      return unsupported("head_dim: the portable CUDA backend implements head dims 64, 128, 256 and 512, got " +
                         std::to_string(p.head_dim));
  }
  const bool q16 = p.q_dtype == CTXATTN_DTYPE_FLOAT16 || p.q_dtype == CTXATTN_DTYPE_BFLOAT16;
  const bool dtypes_ok = (q16 && (p.kv_dtype == p.q_dtype || p.kv_dtype == CTXATTN_DTYPE_FLOAT8_E4M3)) ||
                         (p.q_dtype == CTXATTN_DTYPE_FLOAT8_E4M3 && p.kv_dtype == CTXATTN_DTYPE_FLOAT8_E4M3) ||
                         p.kv_dtype == CTXATTN_DTYPE_NVFP4;
  if (!dtypes_ok) return unsupported("kv_cache: dtype combination not implemented by the portable CUDA backend");
  CTXATTN_RETURN_IF_ERROR(check_alignment(p));
  CTXATTN_RETURN_IF_ERROR(check_scale_alignment(p));
  // A CTA walks packed rows (query row * G + head) up to two m-blocks past its first one
  // (sm80/work.cuh), which must stay inside int32; the gate allows num_tokens * num_qo_heads up to
  // INT32_MAX itself.
  if (p.num_tokens * p.num_qo_heads > INT32_MAX - 2 * static_cast<int64_t>(block_m)) {
    return unsupported("query: num_tokens * num_qo_heads = " + std::to_string(p.num_tokens * p.num_qo_heads) +
                       " is too close to the 32-bit limit for the portable CUDA backend (at most " +
                       std::to_string(INT32_MAX - 2 * static_cast<int64_t>(block_m)) + ")");
  }
  // One grid of batch_size * slots CTAs (cuda/common/split.cuh).
  int sms = 0;
  CTXATTN_RETURN_IF_ERROR(cuda_sm_count(p.device_index, &sms));
  const int64_t slots = p.head_dim == 64    ? slots_for<64>(p, sms)
                        : p.head_dim == 128 ? slots_for<128>(p, sms)
                        : p.head_dim == 256 ? slots_for<256>(p, sms)
                                            : slots_for<512>(p, sms);
  if (slots * p.batch_size > INT32_MAX) {
    return unsupported("max_q_len: max_q_len * num_qo_heads * batch_size is too large for one grid of the portable "
                       "CUDA backend");
  }
  int arch = 0;
  CTXATTN_RETURN_IF_ERROR(cuda_device_arch(p.device_index, &arch));
  if (arch < 80) {
    return unsupported("device: the portable CUDA backend needs compute capability 8.0 or newer, got " +
                       std::to_string(arch / 10) + "." + std::to_string(arch % 10));
  }
  int smem_limit = 0;
  CTXATTN_CUDA_TRY(cudaDeviceGetAttribute(&smem_limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, p.device_index));
  if (smem_limit < smem) {
    return unsupported("device: the portable CUDA kernel for head_dim " + std::to_string(p.head_dim) + " needs " +
                       std::to_string(smem) + " bytes of shared memory per block, the device allows " +
                       std::to_string(smem_limit));
  }
  return Status::Ok();
}

Status cuda_portable_run(const Params& p) {
  // Nothing to compute: no launch (a grid of zero blocks is a launch error).
  if (p.batch_size == 0 || p.max_q_len == 0 || p.num_tokens == 0) return Status::Ok();
  int arch = 0;
  CTXATTN_RETURN_IF_ERROR(cuda_device_arch(p.device_index, &arch));
  DeviceGuard guard;
  CTXATTN_RETURN_IF_ERROR(guard.set(p.device_index));
  CTXATTN_RETURN_IF_ERROR(reset_skip_stats(p));
  int sms = 0;
  CTXATTN_RETURN_IF_ERROR(cuda_sm_count(p.device_index, &sms));
  const sm80::LaunchEnv env{static_cast<cudaStream_t>(p.stream), p.device_index, p.enable_pdl, sms};
  switch (p.head_dim) {
    case 64: return run_head_dim<64>(p, env);
    case 128: return run_head_dim<128>(p, env);
    case 256: return run_head_dim<256>(p, env);
    case 512: return run_head_dim<512>(p, env);
    default: break;
  }
  return unsupported("head_dim: the portable CUDA backend implements head dims 64, 128, 256 and 512, got " +
                     std::to_string(p.head_dim));
}

}  // namespace ctxattn
