// The FlashInfer 0.7.2 features (SPEC 8) the CUDA backends do not run yet (NVFP4 KV caches,
// skip-softmax; separate K / V page indices they run): each backend's supports() asks here
// first, so a call with one of them is refused with the argument and the backend named, never
// run as something else. The CPU backends run all of them.
#pragma once

#include <string>

#include "core/params.h"
#include "core/status.h"

namespace ctxattn {

inline Status cuda_feature_gate(const Params& p, const char* backend) {
  const std::string by = std::string(" on the ") + backend + " backend";
  if (p.kv_dtype == CTXATTN_DTYPE_NVFP4) {
    return Status::Error(CTXATTN_STATUS_UNSUPPORTED,
                         "kv_cache_sf: an NVFP4 KV cache is not implemented" + by + " yet (CPU tensors run it)");
  }
  if (p.skip_softmax_factor != 0.0f) {
    return Status::Error(CTXATTN_STATUS_UNSUPPORTED,
                         "skip_softmax_threshold_scale_factor: skip-softmax is not implemented" + by +
                             " yet; None or 0 run dense attention (CPU tensors run it)");
  }
  return Status::Ok();
}

}  // namespace ctxattn
