// Micro-benchmark for the head dim 512 kernels' GEMM shapes (docs/perf.md, d512): the cycles one
// tile's GEMMs take on one SM when one or both consumer warpgroups of a CTA issue them back to back
// (issue, commit, wait, again), with the A operand from shared memory (SS) or from registers (RS).
// The column-split kernel's Q K^T is N = 32 (a 32-key tile) over k = 256 (its half of Q): SS
// re-reads A (64 x 16 of Q) for every 32 keys, so if shared memory's bandwidth bounds it, RS runs
// it faster at the same tensor work; P V is N = 256 from registers. The e4m3 forms are the FP8
// kernel's planned shapes (docs/perf.md, d512 over an e4m3 cache): k32 steps, P V's B as V^T rows of
// 32 key bytes in the 32-byte swizzle. One CTA, no global traffic in the timed part; the operands
// hold small hashed values (the timing does not depend on them; they keep the datapath busy as real
// data does). Needs an sm_90 GPU; runs in well under a second.
//
// Built with the tools in builds with the Hopper backend (`make build`) as build/ctxattn_gmma_rates,
// or alone from the repository root:
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Isrc -Iinclude \
//     -isystem .deps/cutlass-4.2.0.0/include bench/cpp/gmma_rates.cu -o gmma_rates
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "cuda/sm90/mma.cuh"

namespace {

namespace sm90 = ctxattn::sm90;
namespace gmma = ctxattn::sm90::gmma;

// Per warpgroup: an A region of 64 rows x 256 bytes-of-k per chunk set (32 KB: a 16-bit half of Q
// at D = 512, or 64 rows x 256 e4m3 bytes twice over) and a B region of 32 KB (K of 32 keys x 256
// 16-bit columns is 16 KB; V of 32 keys x 256 columns 16 KB; V^T of 256 rows x 32 bytes 8 KB).
constexpr int kRegionBytes = 32 * 1024;
constexpr int kSmemBytes = 1024 + 4 * kRegionBytes;

enum Mode : int {
  kQkSs = 0,      // bf16 Q K^T, N = 32, 16 k16 steps, A and B from shared memory (the kernel today)
  kQkRs = 1,      // the same with A (Q) from registers
  kPvRs = 2,      // bf16 O += P V, N = 256, 2 k16 steps (32 keys), P from registers (the kernel's)
  kStepSs = 3,    // Q K^T (SS) and P V issued together: the tile's GEMMs as the kernel issues them
  kStepRs = 4,    // the same with Q K^T from registers
  kQk64Ss = 5,    // bf16 Q K^T, N = 64, 16 k16 steps, SS: the D = 256 kernel's shape, for reference
  kFp8QkSs = 6,   // e4m3 Q K^T, N = 32, 8 k32 steps, SS
  kFp8QkRs = 7,   // the same, Q from registers
  kFp8PvRs = 8,   // e4m3 O += P V^T, N = 256, one k32 step, B K-major in the 32-byte swizzle
  kFp8StepRs = 9, // e4m3 Q K^T (RS) and P V together: the FP8 column-split kernel's tile
  kModes = 10,
};
const char* const kModeNames[kModes] = {
    "bf16 QK^T n32 SS",   "bf16 QK^T n32 RS",  "bf16 PV n256 RS",   "bf16 QK(SS)+PV",  "bf16 QK(RS)+PV",
    "bf16 QK^T n64 SS",   "e4m3 QK^T n32 SS",  "e4m3 QK^T n32 RS",  "e4m3 PV n256 RS", "e4m3 QK(RS)+PV"};
// Dense FLOPs of one step of one warpgroup (2 M N K).
constexpr double kStepFlops[kModes] = {
    2.0 * 64 * 32 * 256, 2.0 * 64 * 32 * 256, 2.0 * 64 * 256 * 32, 4.0 * 64 * 32 * 256, 4.0 * 64 * 32 * 256,
    2.0 * 64 * 64 * 256, 2.0 * 64 * 32 * 256, 2.0 * 64 * 32 * 256, 2.0 * 64 * 256 * 32, 4.0 * 64 * 32 * 256};
// Bytes of shared memory the step's WGMMAs read for one warpgroup (A where it comes from there, B).
constexpr double kStepSmemBytes[kModes] = {
    16 * (2048 + 1024), 16 * 1024,          2 * 8192,  16 * 3072 + 2 * 8192, 16 * 1024 + 2 * 8192,
    16 * (2048 + 2048), 8 * (2048 + 1024),  8 * 1024,  8192,                 8 * 1024 + 8192};

using QkSs = gmma::MMA_64x32x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::K>;
using QkRs = gmma::MMA_64x32x16_F32BF16BF16_RS<gmma::Major::K, gmma::Major::K>;
using Qk64Ss = gmma::MMA_64x64x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::K>;
using PvRs = gmma::MMA_64x256x16_F32BF16BF16_RS<gmma::Major::K, gmma::Major::MN>;
using Fp8QkSs = gmma::MMA_64x32x32_F32E4M3E4M3_SS_TN<>;
using Fp8QkRs = gmma::MMA_64x32x32_F32E4M3E4M3_RS_TN<>;
using Fp8PvRs = gmma::MMA_64x256x32_F32E4M3E4M3_RS_TN<>;

// K-major operand in the 32-byte swizzle: rows of 32 bytes, 8-row groups 256 bytes apart.
__device__ __forceinline__ uint64_t sw32_desc(uint32_t addr) {
  cute::GmmaDescriptor d;
  d.bitfield.start_address_ = static_cast<uint16_t>(addr >> 4);
  d.bitfield.leading_byte_offset_ = 1;
  d.bitfield.stride_byte_offset_ = static_cast<uint16_t>(256 >> 4);
  d.bitfield.base_offset_ = 0;
  d.bitfield.layout_type_ = static_cast<uint8_t>(gmma::LayoutType::B32);
  return d.desc_;
}

template <class Op, int N, size_t... I>
__device__ __forceinline__ void ss(uint64_t a, uint64_t b, float (&d)[N], bool zero, std::index_sequence<I...>) {
  Op::fma(a, b, d[I]..., zero ? gmma::ScaleOut::Zero : gmma::ScaleOut::One);
}
template <class Op, int N, size_t... I>
__device__ __forceinline__ void rs(const uint32_t* a, uint64_t b, float (&d)[N], bool zero, std::index_sequence<I...>) {
  Op::fma(a[0], a[1], a[2], a[3], b, d[I]..., zero ? gmma::ScaleOut::Zero : gmma::ScaleOut::One);
}

// Q K^T over kSteps 32-byte k steps: A (64 rows) from the region at a (128-byte swizzled chunks of
// 8 KB) or from q; B from b (chunks of kChunkB bytes: 32 or 64 rows of 128 bytes). Every step
// accumulates onto the last (no zeroing scale): a step whose result the next overwrote would be
// dead code, which ptxas removes (it did, for the e4m3 forms).
template <class Ss, class Rs, int kSteps, int kChunkB, bool kRegsA, int kS, int kQ>
__device__ __forceinline__ void qk(float (&s)[kS], const uint32_t (&q)[kQ], uint32_t a, uint32_t b) {
#pragma unroll
  for (int kk = 0; kk < kSteps; ++kk) {
    const uint32_t in_chunk = (kk % 4) * 32;
    const uint64_t db = sm90::sw128_desc(b + (kk / 4) * kChunkB + in_chunk, 16, sm90::kGroupBytes);
    if constexpr (kRegsA) {
      rs<Rs>(&q[4 * kk], db, s, false, std::make_index_sequence<kS>{});
    } else {
      const uint64_t da = sm90::sw128_desc(a + (kk / 4) * 8192 + in_chunk, 16, sm90::kGroupBytes);
      ss<Ss>(da, db, s, false, std::make_index_sequence<kS>{});
    }
  }
}

// What a mode's step holds in registers: S (16 fp32, 32 at N = 64), O (128 where it has a P V),
// Q (64 words for a 16-bit A from registers, 32 for e4m3) and P (8 words).
template <int kMode>
struct Regs {
  static constexpr bool kBf16Qk = kMode == kQkSs || kMode == kQkRs || kMode == kStepSs || kMode == kStepRs;
  static constexpr bool kBf16Pv = kMode == kPvRs || kMode == kStepSs || kMode == kStepRs;
  static constexpr bool kFp8Qk = kMode == kFp8QkSs || kMode == kFp8QkRs || kMode == kFp8StepRs;
  static constexpr bool kFp8Pv = kMode == kFp8PvRs || kMode == kFp8StepRs;
  static constexpr bool kRegsA = kMode == kQkRs || kMode == kStepRs || kMode == kFp8QkRs || kMode == kFp8StepRs;
  static constexpr int kS = kMode == kQk64Ss ? 32 : 16;
  static constexpr int kO = kBf16Pv || kFp8Pv ? 128 : 4;
  static constexpr int kQ = !kRegsA ? 4 : kFp8Qk ? 32 : 64;
  static constexpr int kP = 8;
};

// One step of `mode` for this warpgroup (async; committed as one group). a / b: its regions.
template <int kMode, class R = Regs<kMode>>
__device__ __forceinline__ void issue(float (&s)[R::kS], float (&o)[R::kO], uint32_t (&q)[R::kQ],
                                      uint32_t (&p)[R::kP], uint32_t a, uint32_t b) {
  constexpr bool kBf16Qk = R::kBf16Qk, kBf16Pv = R::kBf16Pv, kFp8Qk = R::kFp8Qk, kFp8Pv = R::kFp8Pv;
  constexpr bool kRegsA = R::kRegsA;
  sm90::fence_operands(s);
  sm90::fence_operands(o);
  sm90::fence_operands(q);
  sm90::fence_operands(p);
  cute::warpgroup_arrive();
  if constexpr (kBf16Qk) qk<QkSs, QkRs, 16, 4096, kRegsA>(s, q, a, b);
  if constexpr (kMode == kQk64Ss) qk<Qk64Ss, Qk64Ss, 16, 8192, false>(s, q, a, b);
  if constexpr (kFp8Qk) qk<Fp8QkSs, Fp8QkRs, 8, 4096, kRegsA>(s, q, a, b);
  if constexpr (kBf16Pv) {
#pragma unroll
    for (int kk = 0; kk < 2; ++kk) {
      // V of 32 keys x 256 columns, MN-major: 64-column chunks 4 KB apart, 8-key groups 1 KB.
      const uint64_t db = sm90::sw128_desc(b + 16384 + kk * 2048, 4096, sm90::kGroupBytes);
      rs<PvRs>(&p[4 * kk], db, o, false, std::make_index_sequence<128>{});
    }
  }
  if constexpr (kFp8Pv) rs<Fp8PvRs>(&p[0], sw32_desc(b + 16384), o, false, std::make_index_sequence<128>{});
  cute::warpgroup_commit_batch();
  sm90::fence_operands(s);
  sm90::fence_operands(o);
  sm90::fence_operands(q);
  sm90::fence_operands(p);
}

// Each active warpgroup runs `iters` steps back to back; cycles[w] its clock64 span.
template <int kMode>
__global__ void __launch_bounds__(256, 1) rates(int iters, int active, long long* cycles, float* sink) {
  extern __shared__ char smem_raw[];
  char* smem = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
  for (int i = threadIdx.x; i < 4 * kRegionBytes / 4; i += blockDim.x) {
    const uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
    reinterpret_cast<uint32_t*>(smem)[i] = (h & 0x3f3f3f3fu) | 0x30303030u;  // small values, any type
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const int wg = threadIdx.x / 128;
  if (wg >= active) return;
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem)) + wg * 2 * kRegionBytes;
  using R = Regs<kMode>;
  float s[R::kS], o[R::kO];
  uint32_t q[R::kQ], p[R::kP];
#pragma unroll
  for (int i = 0; i < R::kS; ++i) s[i] = 0.0f;
#pragma unroll
  for (int i = 0; i < R::kO; ++i) o[i] = 0.0f;
#pragma unroll
  for (int i = 0; i < R::kQ; ++i) q[i] = 0x34343434u ^ ((threadIdx.x * 64 + i) & 0x0b0b0b0bu);
#pragma unroll
  for (int i = 0; i < R::kP; ++i) p[i] = 0x34343434u ^ ((threadIdx.x * 8 + i) & 0x0b0b0b0bu);
  issue<kMode>(s, o, q, p, base, base + kRegionBytes);  // warm-up
  cute::warpgroup_wait<0>();
  asm volatile("bar.sync %0, 128;" ::"r"(wg + 1));
  const long long start = clock64();
  for (int it = 0; it < iters; ++it) {
    issue<kMode>(s, o, q, p, base, base + kRegionBytes);
    cute::warpgroup_wait<0>();
  }
  asm volatile("bar.sync %0, 128;" ::"r"(wg + 1));
  const long long span = clock64() - start;
  if (threadIdx.x % 128 == 0) cycles[wg] = span;
  float acc = 0.0f;
#pragma unroll
  for (int i = 0; i < R::kS; ++i) acc += s[i];
#pragma unroll
  for (int i = 0; i < R::kO; ++i) acc += o[i];
  if (acc == 12345.0f) *sink = acc;  // keeps every GEMM
}

template <int kMode>
bool run(int iters, long long* d_cycles, float* d_sink) {
  if (cudaFuncSetAttribute(rates<kMode>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes) != cudaSuccess) {
    return false;
  }
  for (int active = 1; active <= 2; ++active) {
    long long cycles[2] = {0, 0};
    if (cudaMemset(d_cycles, 0, sizeof(cycles)) != cudaSuccess) return false;
    rates<kMode><<<1, 256, kSmemBytes>>>(iters, active, d_cycles, d_sink);
    if (cudaDeviceSynchronize() != cudaSuccess) return false;
    if (cudaMemcpy(cycles, d_cycles, sizeof(cycles), cudaMemcpyDeviceToHost) != cudaSuccess) return false;
    const double span = static_cast<double>(active == 2 && cycles[1] > cycles[0] ? cycles[1] : cycles[0]);
    const double per_step = span / iters;
    std::printf("%-18s %3d %12.1f %14.0f %16.1f\n", kModeNames[kMode], active, per_step,
                active * kStepFlops[kMode] / per_step, active * kStepSmemBytes[kMode] / per_step);
  }
  return true;
}

template <int... M>
bool run_all(int iters, long long* d_cycles, float* d_sink, std::integer_sequence<int, M...>) {
  return (run<M>(iters, d_cycles, d_sink) && ...);
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 2000;
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess || prop.major != 9) {
    std::printf("gmma_rates: needs an sm_90 GPU\n");
    return 1;
  }
  long long* d_cycles = nullptr;
  float* d_sink = nullptr;
  if (cudaMalloc(&d_cycles, 2 * sizeof(long long)) != cudaSuccess || cudaMalloc(&d_sink, sizeof(float)) != cudaSuccess) {
    std::printf("gmma_rates: allocation failed\n");
    return 1;
  }
  // Dense peaks a clock on one SM: 4096 16-bit FLOP, 8192 e4m3 (H100 / H200 SXM).
  std::printf("device: %s; %d steps a warpgroup; one CTA on one SM\n", prop.name, iters);
  std::printf("%-18s %3s %12s %14s %16s\n", "step", "WGs", "cycles/step", "FLOP/cycle", "smem B/cycle");
  const bool ok = run_all(iters, d_cycles, d_sink, std::make_integer_sequence<int, kModes>{});
  if (!ok) std::printf("gmma_rates: CUDA error %s\n", cudaGetErrorString(cudaGetLastError()));
  cudaFree(d_cycles);
  cudaFree(d_sink);
  return ok ? 0 : 1;
}
