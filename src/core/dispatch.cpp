#include "core/dispatch.h"

#include <string>

#include "core/backends.h"

namespace ctxattn {

Status select_backend(const Params& p, ctxattn_device_type_t device, ctxattn_backend_t requested,
                      ctxattn_backend_t* chosen) {
  if (device == CTXATTN_DEVICE_CPU) {
    // Every CPU request is served; AUTO takes the fast path (the reference is for tests).
    *chosen = requested == CTXATTN_BACKEND_AUTO ? CTXATTN_BACKEND_CPU : requested;
    return Status::Ok();
  }
  if (requested == CTXATTN_BACKEND_CUDA_SM90) {
    // Asked for by name: served or refused with the reason, never silently replaced, so that
    // benchmarks and tests never mislabel a run.
    CTXATTN_RETURN_IF_ERROR(cuda_sm90_supports(p));
    *chosen = CTXATTN_BACKEND_CUDA_SM90;
    return Status::Ok();
  }
  // Hopper with arguments the TMA / WGMMA kernels cover: the fast path (1.2-2.4x the portable
  // kernel on the H200 suite, docs/perf.md). Short sliding windows included: windows of
  // 127, 255 and 511 keys measured 1.05-2.6x the portable kernel on every kernel family and page
  // size (docs/perf.md, v26; the sm90 kernel had been the slower one on d64_sinks_swa).
  // Pages the sm90 kernel gathers with cp.async (fewer than 8 tokens), as sm90_takes_small_pages
  // says.
  if (requested == CTXATTN_BACKEND_AUTO && (!cuda_sm90_gathers_pages(p) || sm90_takes_small_pages(p)) &&
      cuda_sm90_supports(p).ok()) {
    *chosen = CTXATTN_BACKEND_CUDA_SM90;
    return Status::Ok();
  }
  // Everything else on CUDA: the portable mma.sync backend serves sm80 and newer.
  Status s = cuda_portable_supports(p);
  if (!s.ok()) return s;
  *chosen = CTXATTN_BACKEND_CUDA_PORTABLE;
  return Status::Ok();
}

Status run_backend(const Params& p, ctxattn_backend_t backend) {
  switch (backend) {
    case CTXATTN_BACKEND_CPU_REFERENCE:
    case CTXATTN_BACKEND_CPU:
      // Host memory is cheap to inspect, so the CPU always checks the metadata contents.
      CTXATTN_RETURN_IF_ERROR(cpu_check_metadata(p));
      return backend == CTXATTN_BACKEND_CPU ? cpu_run(p) : cpu_reference_run(p);
    case CTXATTN_BACKEND_CUDA_PORTABLE:
    case CTXATTN_BACKEND_CUDA_SM90:
      // On the GPU the check costs a sync, so it runs only in check mode.
      if (p.check_metadata) CTXATTN_RETURN_IF_ERROR(cuda_check_metadata(p));
      return backend == CTXATTN_BACKEND_CUDA_SM90 ? cuda_sm90_run(p) : cuda_portable_run(p);
    default:
      break;
  }
  return Status::Error(CTXATTN_STATUS_INTERNAL_ERROR,
                       "backend: no runner for backend code " + std::to_string(static_cast<int>(backend)));
}

}  // namespace ctxattn
