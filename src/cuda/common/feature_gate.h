// The FlashInfer 0.7.2 features (SPEC 8) a CUDA backend may not run (yet): each backend's
// supports() asks here first with what it runs, so a call with a feature it lacks is refused with
// the argument and the backend named, never run as something else (AUTO then asks the next
// backend). Separate K / V page indices every CUDA backend runs; the CPU backends run everything.
#pragma once

#include <string>

#include "core/params.h"
#include "core/status.h"

namespace ctxattn {

struct CudaFeatures {
  bool nvfp4_kv;      // kv_cache_sf: an NVFP4 KV cache
  bool skip_softmax;  // a non-zero skip_softmax_threshold_scale_factor
};

inline Status cuda_feature_gate(const Params& p, const char* backend, CudaFeatures runs) {
  const std::string by = std::string(" on the ") + backend + " backend";
  if (p.kv_dtype == CTXATTN_DTYPE_NVFP4 && !runs.nvfp4_kv) {
    return Status::Error(CTXATTN_STATUS_UNSUPPORTED,
                         "kv_cache_sf: an NVFP4 KV cache is not implemented" + by + " (cuda_portable and CPU tensors run it)");
  }
  if (p.skip_softmax_factor != 0.0f && !runs.skip_softmax) {
    return Status::Error(CTXATTN_STATUS_UNSUPPORTED,
                         "skip_softmax_threshold_scale_factor: skip-softmax is not implemented" + by +
                             "; None or 0 run dense attention");
  }
  return Status::Ok();
}

}  // namespace ctxattn
