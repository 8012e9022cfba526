#include <cstdlib>
#include <cstring>

#include "cpu/kernels.h"

namespace ctxattn {
namespace cpu {
namespace {

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kAvx512Bf16 = 3 };

Isa detect() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (avx512 && __builtin_cpu_supports("avx512bf16")) return Isa::kAvx512Bf16;
  if (avx512) return Isa::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
#endif
  return Isa::kScalar;
}

// The ceiling CTXATTN_CPU_ISA asks for (no variable or an unknown value: no ceiling).
Isa requested_ceiling() {
  const char* env = std::getenv("CTXATTN_CPU_ISA");
  if (env == nullptr) return Isa::kAvx512Bf16;
  if (std::strcmp(env, "scalar") == 0) return Isa::kScalar;
  if (std::strcmp(env, "avx2") == 0) return Isa::kAvx2;
  if (std::strcmp(env, "avx512") == 0) return Isa::kAvx512;
  return Isa::kAvx512Bf16;
}

}  // namespace

const Kernels& select_kernels() {
  static const Isa detected = detect();
  const Isa ceiling = requested_ceiling();
  const Isa isa = static_cast<int>(ceiling) < static_cast<int>(detected) ? ceiling : detected;
  switch (isa) {
    case Isa::kAvx512Bf16: return kernels_avx512_bf16();
    case Isa::kAvx512: return kernels_avx512();
    case Isa::kAvx2: return kernels_avx2();
    default: return kernels_scalar();
  }
}

}  // namespace cpu
}  // namespace ctxattn
