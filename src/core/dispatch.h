// Backend choice: policy in one place, with the reason on every branch.
#pragma once

#include "core/params.h"
#include "core/status.h"

namespace ctxattn {

// The backend that runs a validated call; `requested` is args.backend (AUTO picks).
Status select_backend(const Params& p, ctxattn_device_type_t device, ctxattn_backend_t requested,
                      ctxattn_backend_t* chosen);

// Runs a validated call on `backend` (metadata checks included where the backend does them).
Status run_backend(const Params& p, ctxattn_backend_t backend);

}  // namespace ctxattn
