// Backend choice: policy in one place, with the reason on every branch.
#pragma once

#include "core/params.h"
#include "core/status.h"

namespace ctxattn {

// The backend that runs a validated call; `requested` is args.backend (AUTO picks).
Status select_backend(const Params& p, ctxattn_device_type_t device, ctxattn_backend_t requested,
                      ctxattn_backend_t* chosen);

// Whether AUTO sends a call with pages of fewer than 8 tokens to the sm90 kernel (its cp.async
// gather) rather than the portable one: a function of host integers and dtypes only.
inline bool sm90_takes_small_pages(const Params& p) {
  // Pages of 1 and 4 tokens on the H200 (docs/perf.md, v30, item 2): with an e4m3 operand or
  // at D = 256 the gather is ahead of the portable kernel on every measured shape but one (1.03-2.7x;
  // fp8 chunk_long_tp8 at page 1: 0.93x). With 16-bit Q and K/V at D = 64 and 128 it is behind on
  // chunked prefill over a cached prefix (chunk_prefix 0.77x at page 1, the split calls 0.52-0.86x)
  // and on long requests at page 1 (long_8k 0.92x, batch_4k 0.95x); ahead on short and ragged
  // batches at D = 128 (1.05-1.47x), behind on them at D = 64 at page 1 (0.89-0.91x). The rule
  // reads no lengths, so that a request gets the same backend, and the same bits, whatever batch
  // it is in.
  // D = 512 (the column-split kernel) is taken like D = 256: at page 1 it ran 228 TFLOP/s on the
  // H100, the portable kernel 101 at page 64 (docs/perf.md, v35).
  const bool e4m3 = p.q_dtype == CTXATTN_DTYPE_FLOAT8_E4M3 || p.kv_dtype == CTXATTN_DTYPE_FLOAT8_E4M3;
  return e4m3 || p.head_dim >= 256;
}

// Runs a validated call on `backend` (metadata checks included where the backend does them).
Status run_backend(const Params& p, ctxattn_backend_t backend);

}  // namespace ctxattn
