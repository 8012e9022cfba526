// The CUDA backends' use of the workspace header (kWorkspaceHeaderBytes at the start of the
// workspace buffer, core/backends.h).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "core/params.h"
#include "core/status.h"
#include "ctxattn/ctxattn.h"
#include "cuda/common/cuda_status.h"

namespace ctxattn {

// Result of the metadata check (check mode), at offset 0 of the header. `key` orders the
// violations as the CPU check visits them: (request + 1) << 32 | code; ~0 means none found.
struct MetadataCheckSlot {
  unsigned long long key;
  long long value[2];  // what the message quotes; meaning depends on the code
};

constexpr size_t kMetadataCheckOffset = 0;

// The Hopper kernel's tile scheduler (sm90/scheduler.cuh): two uint32 counters, zero between
// calls (the last CTA of each call resets them).
constexpr size_t kSchedulerOffset = 64;
static_assert(kSchedulerOffset >= kMetadataCheckOffset + sizeof(MetadataCheckSlot), "header fields overlap");

// Skip-softmax statistics (two uint64, ctxattn.h CTXATTN_WORKSPACE_SKIP_STATS_OFFSET) follow.
static_assert(CTXATTN_WORKSPACE_SKIP_STATS_OFFSET >= kSchedulerOffset + 2 * sizeof(uint32_t), "header fields overlap");

// A call with a non-zero skip factor reports its own statistics: they are cleared on the call's
// stream before its kernels add theirs (the sm90 kernels' votes; the portable kernel, which runs
// such calls dense, adds none).
inline Status reset_skip_stats(const Params& p) {
  if (p.skip_softmax_factor == 0.0f) return Status::Ok();
  CTXATTN_CUDA_TRY(cudaMemsetAsync(static_cast<char*>(p.workspace) + CTXATTN_WORKSPACE_SKIP_STATS_OFFSET, 0,
                                   2 * sizeof(uint64_t), static_cast<cudaStream_t>(p.stream)));
  return Status::Ok();
}

}  // namespace ctxattn
