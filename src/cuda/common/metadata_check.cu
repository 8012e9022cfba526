// cuda_check_metadata: the device-side twin of cpu_check_metadata (src/cpu/metadata.cpp), with the
// same checks in the same order and the same messages. One kernel finds the first violation
// (smallest request, then the order of the checks) with an atomic minimum in the workspace
// header; a second one, a single block, re-reads what the message quotes; then one copy to the
// host and one stream sync. Used only in check mode.
#include <stdint.h>

#include <sstream>
#include <string>

#include "core/backends.h"
#include "cuda/common/cuda_status.h"
#include "cuda/common/launch.cuh"
#include "cuda/common/workspace.h"

namespace ctxattn {
namespace {

// Violation codes, in the order the CPU check tests them.
enum Violation : unsigned {
  kFirstNegative = 0,    // cum_seq_lens_q[0] < 0            (request -1 in the key)
  kQueryLenNegative = 1, // cum_seq_lens_q decreasing
  kQueryLenTooLong = 2,  // q_len > max_q_len
  kKvLenOutOfRange = 3,  // seq_lens outside [0, max_kv_len] (the caller's)
  kKvShorterThanQ = 4,   // causal and seq_lens < q_len
  kTooManyPages = 5,     // ceil(seq_lens / page_size) > max_pages_per_seq
  kPageOutOfPool = 6,    // a block-table entry outside [0, num_pages)
  kPastTokens = 7,       // cum_seq_lens_q[B] > num_tokens (request B in the key)
};

constexpr unsigned long long kNone = ~0ull;
constexpr int kCheckThreads = 128;

__device__ unsigned long long violation_key(int64_t request, unsigned code) {
  return (static_cast<unsigned long long>(request + 1) << 32) | code;
}

// Entry e of request b's page ids in the CPU check's order: K's row, then (separate K / V page
// indices) V's row.
__device__ int32_t page_entry(const Params& p, int b, int64_t e, int64_t pages) {
  const int32_t* table = e < pages ? p.block_tables : p.v_block_tables;
  return table[static_cast<int64_t>(b) * p.block_tables_stride + (e < pages ? e : e - pages)];
}

// The request-level violation of b (codes 1-5), or kNone; *pages receives the pages to scan.
__device__ unsigned request_violation(const Params& p, int b, int64_t* pages) {
  const int64_t q_len = static_cast<int64_t>(p.cum_seq_lens_q[b + 1]) - p.cum_seq_lens_q[b];
  const int64_t kv_len = p.seq_lens[b];
  *pages = 0;
  if (q_len < 0) return kQueryLenNegative;
  if (q_len > p.max_q_len) return kQueryLenTooLong;
  if (kv_len < 0 || kv_len > p.max_kv_len_arg) return kKvLenOutOfRange;
  if (p.causal && kv_len < q_len) return kKvShorterThanQ;
  *pages = (kv_len + p.page_size - 1) / p.page_size;
  if (*pages > p.max_pages_per_seq) return kTooManyPages;
  return ~0u;
}

// One block per request.
__global__ void find_first_violation(const Params p, MetadataCheckSlot* slot) {
  __shared__ int64_t pages;
  __shared__ int bad;
  const int b = static_cast<int>(blockIdx.x);
  if (threadIdx.x == 0) {
    bad = 0;
    if (b == 0 && p.cum_seq_lens_q[0] < 0) atomicMin(&slot->key, violation_key(-1, kFirstNegative));
    if (b == p.batch_size - 1 && p.cum_seq_lens_q[p.batch_size] > p.num_tokens) {
      atomicMin(&slot->key, violation_key(p.batch_size, kPastTokens));
    }
    const unsigned code = request_violation(p, b, &pages);
    if (code != ~0u) {
      atomicMin(&slot->key, violation_key(b, code));
      pages = 0;
    }
  }
  __syncthreads();
  const int64_t entries = p.separate_kv_idx ? 2 * pages : pages;
  for (int64_t e = threadIdx.x; e < entries; e += blockDim.x) {
    const int32_t page = page_entry(p, b, e, pages);
    if (page < 0 || page >= p.num_pages) atomicOr(&bad, 1);
  }
  __syncthreads();
  if (threadIdx.x == 0 && bad) atomicMin(&slot->key, violation_key(b, kPageOutOfPool));
}

// One block: fills in the values the message quotes for the violation in slot->key.
__global__ void describe_violation(const Params p, MetadataCheckSlot* slot) {
  __shared__ unsigned long long first_bad;
  const unsigned long long key = slot->key;
  if (key == kNone) return;
  const int b = static_cast<int>(static_cast<int64_t>(key >> 32) - 1);
  const unsigned code = static_cast<unsigned>(key & 0xffffffffu);
  if (code == kPageOutOfPool) {
    if (threadIdx.x == 0) first_bad = kNone;
    __syncthreads();
    const int64_t pages = (static_cast<int64_t>(p.seq_lens[b]) + p.page_size - 1) / p.page_size;
    const int64_t entries = p.separate_kv_idx ? 2 * pages : pages;
    for (int64_t e = threadIdx.x; e < entries; e += blockDim.x) {
      const int32_t page = page_entry(p, b, e, pages);
      if (page < 0 || page >= p.num_pages) atomicMin(&first_bad, static_cast<unsigned long long>(e));
    }
    __syncthreads();
    if (threadIdx.x == 0 && first_bad != kNone) {
      // value[0]: the column, with V's row (1) above bit 32; value[1]: the entry.
      const int64_t e = static_cast<int64_t>(first_bad);
      slot->value[0] = e < pages ? e : (1ll << 32) | (e - pages);
      slot->value[1] = page_entry(p, b, e, pages);
    }
    return;
  }
  if (threadIdx.x != 0) return;
  switch (code) {
    case kFirstNegative: slot->value[0] = p.cum_seq_lens_q[0]; break;
    case kQueryLenNegative:
      slot->value[0] = p.cum_seq_lens_q[b];
      slot->value[1] = p.cum_seq_lens_q[b + 1];
      break;
    case kQueryLenTooLong: slot->value[0] = static_cast<int64_t>(p.cum_seq_lens_q[b + 1]) - p.cum_seq_lens_q[b]; break;
    case kKvLenOutOfRange: slot->value[0] = p.seq_lens[b]; break;
    case kKvShorterThanQ:
      slot->value[0] = p.seq_lens[b];
      slot->value[1] = static_cast<int64_t>(p.cum_seq_lens_q[b + 1]) - p.cum_seq_lens_q[b];
      break;
    case kTooManyPages:
      slot->value[0] = (static_cast<int64_t>(p.seq_lens[b]) + p.page_size - 1) / p.page_size;
      slot->value[1] = p.seq_lens[b];
      break;
    default: slot->value[0] = p.cum_seq_lens_q[b]; break;  // kPastTokens: b == batch_size
  }
}

Status invalid_metadata(const std::string& message) {
  return Status::Error(CTXATTN_STATUS_INVALID_METADATA, message);
}

// The CPU check's messages, word for word.
Status describe(const Params& p, const MetadataCheckSlot& s) {
  const int64_t b = static_cast<int64_t>(s.key >> 32) - 1;
  const long long v0 = s.value[0];
  const long long v1 = s.value[1];
  // A seq_lens value as the caller wrote it: the device read the int32 bits (sign-extended here).
  auto seq_len = [&p](long long v) { return seq_lens_value(p, static_cast<int32_t>(v)); };
  std::ostringstream m;
  switch (static_cast<unsigned>(s.key & 0xffffffffu)) {
    case kFirstNegative:
      m << "cum_seq_lens_q: request 0 starts at cum_seq_lens_q[0] = " << v0 << "; expected >= 0";
      break;
    case kQueryLenNegative:
      m << "cum_seq_lens_q: request " << b << " has a negative query length (cum_seq_lens_q[" << b << "] = " << v0
        << ", cum_seq_lens_q[" << b + 1 << "] = " << v1 << "); expected non-decreasing values";
      break;
    case kQueryLenTooLong:
      m << "cum_seq_lens_q: request " << b << " has query length " << v0 << "; expected <= max_q_len = " << p.max_q_len;
      break;
    case kKvLenOutOfRange:
      m << "seq_lens: request " << b << " has seq_lens[" << b << "] = " << seq_len(v0)
        << "; expected a value in [0, max_kv_len = " << p.max_kv_len_arg << "]";
      break;
    case kKvShorterThanQ:
      m << "seq_lens: request " << b << " has seq_lens[" << b << "] = " << seq_len(v0) << " below its query length " << v1
        << "; expected seq_lens >= query length when causal";
      break;
    case kTooManyPages:
      m << "block_tables: request " << b << " needs " << v0 << " pages for seq_lens = " << seq_len(v1)
        << "; expected at most max_pages_per_seq = " << p.max_pages_per_seq;
      break;
    case kPageOutOfPool:
      m << "block_tables: request " << b << " has block_tables[" << b << "][";
      if (p.separate_kv_idx) m << (v0 >> 32) << "][";
      m << (v0 & 0xffffffffll) << "] = " << v1 << "; expected a page id in [0, num_pages = " << p.num_pages << ")";
      break;
    default:
      m << "cum_seq_lens_q: request " << p.batch_size - 1 << " ends at cum_seq_lens_q[" << p.batch_size
        << "] = " << v0 << "; expected <= num_tokens = " << p.num_tokens;
      break;
  }
  return invalid_metadata(m.str());
}

}  // namespace

Status cuda_check_metadata(const Params& p) {
  if (p.batch_size == 0) return Status::Ok();
  int arch = 0;
  CTXATTN_RETURN_IF_ERROR(cuda_device_arch(p.device_index, &arch));
  DeviceGuard guard;
  CTXATTN_RETURN_IF_ERROR(guard.set(p.device_index));
  const cudaStream_t stream = static_cast<cudaStream_t>(p.stream);
  auto* slot = reinterpret_cast<MetadataCheckSlot*>(static_cast<char*>(p.workspace) + kMetadataCheckOffset);
  CTXATTN_CUDA_TRY(cudaMemsetAsync(slot, 0xff, sizeof(MetadataCheckSlot), stream));
  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(p.batch_size));
  shape.block = dim3(kCheckThreads);
  shape.stream = stream;
  CTXATTN_RETURN_IF_ERROR(launch_kernel(find_first_violation, shape, "metadata check launch", p, slot));
  shape.grid = dim3(1);
  CTXATTN_RETURN_IF_ERROR(launch_kernel(describe_violation, shape, "metadata check launch", p, slot));
  MetadataCheckSlot host{};
  CTXATTN_CUDA_TRY(cudaMemcpyAsync(&host, slot, sizeof(host), cudaMemcpyDeviceToHost, stream));
  CTXATTN_CUDA_TRY(cudaStreamSynchronize(stream));
  if (host.key == kNone) return Status::Ok();
  return describe(p, host);
}

}  // namespace ctxattn
