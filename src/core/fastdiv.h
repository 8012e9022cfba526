// Division by a divisor fixed for a call, for host and device code.
#pragma once

#include <stdint.h>

#include "core/host_device.h"

namespace ctxattn {

// Division by a divisor fixed for the call, as one 32x32 -> 64-bit multiply and a shift (the
// work decode and the packed-row decode run at the start of every CTA, on the path to its first
// load): for 0 <= n < 2^31 and d >= 1, n / d = (n * ceil(2^(31+p) / d)) >> (31 + p) with
// 2^p >= d, and the multiplier fits 32 bits.
struct FastDiv {
  uint32_t multiplier;
  uint32_t shift;
  int divisor;

  static FastDiv make(int d) {
    FastDiv f;
    uint32_t p = 0;
    while ((uint64_t{1} << p) < static_cast<uint64_t>(d)) ++p;
    f.multiplier = static_cast<uint32_t>(((uint64_t{1} << (31 + p)) + d - 1) / d);
    f.shift = 31 + p;
    f.divisor = d;
    return f;
  }
  CTXATTN_HD int div(int n) const {
    return static_cast<int>((static_cast<uint64_t>(static_cast<uint32_t>(n)) * multiplier) >> shift);
  }
  CTXATTN_HD int mod(int n) const { return n - div(n) * divisor; }
};

}  // namespace ctxattn
