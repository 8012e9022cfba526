// The vectorised inner pieces of the tiled CPU path, chosen at run time by CPU features (never by
// compile flags): one table of function pointers per instruction set.
//
// Shapes (all buffers row-major, owned by the tiled path):
//   a KV tile holds kTileKeys keys; head dims are padded to dp = round_up(D, 16) with zeros;
//   S / P tiles are [rows][kTileKeys] fp32; the output accumulator O is [rows][dp] fp32.
//   fp32 operands: Q [rows][ldq], K^T [dp][kTileKeys], V [kTileKeys][dp].
//   bf16 operands of Q K^T hold pairs of bf16 along d in one uint32 (low half first), the layout
//   of the avx512_bf16 dot product: Q [rows][ldq], K^T [dp/2][kTileKeys].
//   P V always runs in fp32: P is never rounded, whatever the output dtype.
#pragma once

#include <stdint.h>

namespace ctxattn {
namespace cpu {

// Keys per KV tile: four 16-lane fp32 vectors of scores per query row.
constexpr int kTileKeys = 64;
// Head dims are padded to a multiple of one 16-lane vector.
constexpr int kDimAlign = 16;
// Q K^T computes key columns in groups of this many: a tile whose last keys no row may attend to
// (the causal diagonal) skips the groups past its last live key.
constexpr int kKeyAlign = 16;
// Largest head dim the CPU path packs (the validated maximum).
constexpr int kMaxPackedDim = 512;

// One online-softmax step over a tile of scores.
struct SoftmaxStep {
  int rows;
  int64_t first_key;     // logical index of the tile's key 0
  bool masked;           // boundary tile: keys outside [key_lo[r], key_hi[r]] get weight 0
  const int64_t* key_lo; // per row, inclusive
  const int64_t* key_hi;
  float scale_log2;      // bmm1_scale * log2(e): scores become base-2 logits
  float* row_max;        // running max m (base 2), -inf before any key or sink
  float* row_sum;        // running sum l
  float* alpha;          // out: factor the row's accumulator must be multiplied by
};

struct Kernels {
  const char* isa;
  // S[r][j] = sum_c Q[r][c] * Kt[c][j] for r < rows and j < round_up(keys, kKeyAlign); the other
  // columns of S are left as they were (the softmax masks them).
  void (*qk_f32)(const float* q, int64_t ldq, int rows, const float* kt, int dp, int keys, float* s);
  // In place: S (raw dot products) becomes P = exp2(S * scale_log2 - m_new); updates m, l, alpha.
  void (*softmax)(float* s, const SoftmaxStep& step);
  // O[r][c] = alpha[r] * O[r][c] + sum_{j < keys} P[r][j] * V[j][c].
  void (*pv_f32)(const float* p, int rows, int keys, const float* v, int dp, const float* alpha, float* o);
  // n fp16 values (n a multiple of 8) to fp32; F16C where the instruction set has it.
  void (*f16_to_f32)(const uint16_t* src, int n, float* dst);
  // Q K^T on bf16 pairs (null where the CPU lacks avx512_bf16).
  void (*qk_bf16)(const uint32_t* q, int64_t ldq, int rows, const uint32_t* kt, int dp, int keys, float* s);
};

// The best table for this CPU. The environment variable CTXATTN_CPU_ISA ("avx512", "avx2" or
// "scalar") can lower the choice, e.g. to compare or test the fallbacks; it never raises it.
const Kernels& select_kernels();

// Per-instruction-set tables (kernels_*.cpp).
const Kernels& kernels_scalar();
const Kernels& kernels_avx2();
const Kernels& kernels_avx512();
// kernels_avx512 plus the avx512_bf16 dot-product forms.
const Kernels& kernels_avx512_bf16();

}  // namespace cpu
}  // namespace ctxattn
