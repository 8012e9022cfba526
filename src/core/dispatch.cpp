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
    // The Hopper kernels are not part of this build yet; asking for them by name is an error
    // rather than a silent fallback, so benchmarks never mislabel a run.
    return Status::Error(CTXATTN_STATUS_UNSUPPORTED,
                         "backend: the sm90 (Hopper) backend is not available in this build; use AUTO or "
                         "CUDA_PORTABLE");
  }
  // CUDA: the portable mma.sync backend serves sm80 and newer, so AUTO and CUDA_PORTABLE meet here.
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
      // On the GPU the check costs a sync, so it runs only in check mode.
      if (p.check_metadata) CTXATTN_RETURN_IF_ERROR(cuda_check_metadata(p));
      return cuda_portable_run(p);
    default:
      break;
  }
  return Status::Error(CTXATTN_STATUS_INTERNAL_ERROR,
                       "backend: no runner for backend code " + std::to_string(static_cast<int>(backend)));
}

}  // namespace ctxattn
