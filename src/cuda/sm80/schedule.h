// Scheduling policy of the portable kernel (host side): how many requests form one group of the
// grid order (work.cuh, GridOrder).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/params.h"

namespace ctxattn {
namespace sm80 {

// Longest-first over the whole batch shortens the tail, but when every request's K/V is read at
// once the working set outgrows L2 and K/V come from DRAM again for every m-block (seen on an
// H200: 16 x 1024-token requests ran 20% slower in one global group than request by request).
// So requests are grouped until their K/V fill half of L2; one request alone may exceed it.
inline int batch_group(const Params& p, size_t l2_bytes) {
  const int kv_bytes = p.kv_dtype == CTXATTN_DTYPE_FLOAT8_E4M3 ? 1 : 2;
  const int64_t per_request =
      static_cast<int64_t>(p.max_kv_len) * p.num_kv_heads * p.head_dim * kv_bytes * 2 + 1;
  int64_t group = static_cast<int64_t>(l2_bytes / 2) / per_request;
  if (group < 1) group = 1;
  if (group > p.batch_size) group = p.batch_size;
  return static_cast<int>(group);
}

}  // namespace sm80
}  // namespace ctxattn
