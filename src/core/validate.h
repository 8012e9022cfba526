// The one gate: every argument of a call is checked here, on the host, before any backend sees
// it. Nothing is launched or written by validation.
#pragma once

#include <stddef.h>

#include "core/params.h"
#include "core/status.h"

namespace ctxattn {

// Checks `args` and resolves it into `*p` (layouts folded into strides, defaults applied).
// Does not look at the workspace size (see validate_workspace) nor at metadata contents.
Status validate_args(const ctxattn_args_t* args, Params* p);

// Workspace bytes the call described by resolved params needs on the chosen backend.
size_t required_workspace_bytes(const Params& p, ctxattn_backend_t backend);

// Checks that the given workspace is large enough for `backend`.
Status validate_workspace(const Params& p, ctxattn_backend_t backend);

}  // namespace ctxattn
