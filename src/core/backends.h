// The backends behind the one gate. Each receives validated Params and must stay inside the
// buffers they describe whatever the metadata contents hold.
#pragma once

#include <stddef.h>

#include "core/params.h"
#include "core/status.h"

namespace ctxattn {

// Workspace bytes every call needs, whatever the backend: a header the backends use for
// scheduling state and the metadata-check result (docs/api.md).
constexpr size_t kWorkspaceHeaderBytes = 4096;

// ---- CPU (src/cpu/) ----
// Checks the metadata contents on the host (page ids inside the pool, lengths consistent).
Status cpu_check_metadata(const Params& p);
Status cpu_reference_run(const Params& p);
Status cpu_run(const Params& p);

// ---- CUDA (src/cuda/); when built without CUDA these return NO_DEVICE_SUPPORT ----
// True in a build with the CUDA backends (whether or not a device is present).
bool cuda_built();
// True when the CUDA backends are built and at least one device is visible.
bool cuda_available();
// Compute capability (major*10+minor) of a device, or a CUDA error.
Status cuda_device_arch(int device_index, int* arch);
// Streaming multiprocessors of a device: the split-KV target (cuda/common/split_policy.h).
Status cuda_sm_count(int device_index, int* count);
// Extra workspace (beyond the header) the portable CUDA backend needs for these sizes.
size_t cuda_portable_workspace_bytes(const Params& p);
// Whether the portable backend implements these arguments (head dim, dtypes); the reason otherwise.
Status cuda_portable_supports(const Params& p);
Status cuda_portable_run(const Params& p);
// The Hopper backend (sm90a TMA + WGMMA kernels): extra workspace, whether it serves these
// arguments (the reason otherwise; AUTO then runs the portable backend), and the run.
size_t cuda_sm90_workspace_bytes(const Params& p);
Status cuda_sm90_supports(const Params& p);
Status cuda_sm90_run(const Params& p);
// Whether the Hopper backend gathers these pages with cp.async (pages too small for a useful TMA
// box) rather than loading them by TMA; false without CUDA.
bool cuda_sm90_gathers_pages(const Params& p);
// Verifies the device metadata with one sync (check mode).
Status cuda_check_metadata(const Params& p);

}  // namespace ctxattn
