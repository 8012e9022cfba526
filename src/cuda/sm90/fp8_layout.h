// Index maps of the Hopper kernel's FP8 P V (e4m3 Q/K/V), shared by the kernel (mma.cuh,
// fp8_stage.cuh) and a host test (tests/cpp/test_sm90_fp8_layout.cpp).
//
// The S accumulator and the FP8 A operand of WGMMA lay a row's columns out differently across a
// thread's registers (PTX ISA, wgmma register fragments): the accumulator gives the thread of
// quad position q columns 2q, 2q + 1 of each 8-column block, the k32 A operand wants k positions
// 4q .. 4q + 3 and 16 + 4q .. 16 + 4q + 3 of each 32. Rather than exchanging values between
// threads, V^T stores the keys of each 32-key group in the order the accumulator already has:
// P V sums over keys, and the same permutation on P and V leaves it unchanged.
#pragma once

#include <stdint.h>

#include "core/host_device.h"

namespace ctxattn {
namespace sm90 {
namespace fp8 {

// ---- the hardware's fragments (PTX ISA) ----
// f32 accumulator of m64nNk*: register i of a thread holds row half (i / 2) % 2 (rows g and g + 8
// of its warp's 16) and column 8 (i / 4) + 2q + i % 2, q = lane % 4.
CTXATTN_HD int acc_row_half(int i) { return (i / 2) % 2; }
CTXATTN_HD int acc_column(int i, int q) { return 8 * (i / 4) + 2 * q + i % 2; }
// e4m3 A operand of m64nNk32: byte b of register r holds row half r % 2 and k position
// 16 (r / 2) + 4q + b.
CTXATTN_HD int a_row_half(int r) { return r % 2; }
CTXATTN_HD int a_position(int r, int b, int q) { return 16 * (r / 2) + 4 * q + b; }

// ---- ctxattn's choices ----
// The key V^T stores at position pos (0 .. 31) of a 32-key group: positions 4q .. 4q + 3 hold keys
// 2q, 2q + 1, 2q + 8, 2q + 9, positions 16 + 4q .. the same keys + 16.
CTXATTN_HD int key_at(int pos) {
  const int q = (pos % 16) / 4, j = pos % 4;
  return (pos / 16) * 16 + 2 * q + (j & 1) + (j >> 1) * 8;
}
// The accumulator register that becomes byte b of A register r in k step kk: with key_at's order
// it is the thread's own (same row half, key 32 kk + key_at(a_position(r, b, q)) for every q).
CTXATTN_HD constexpr int a_source(int kk, int r, int b) {
  return 16 * kk + 8 * (r / 2) + 4 * (b >> 1) + 2 * (r % 2) + (b & 1);
}
// What V^T row d's 16-byte units are XOR-ed with in a part of rows of row_bytes bytes: 128-byte
// rows in the 128-byte swizzle (unit ^ d % 8), 64-byte rows in the 64-byte swizzle (address bits
// 4-5 ^ bits 7-8: unit ^ (d / 2) % 4), 32-byte rows (32-key tiles, head dim 512) in the 32-byte
// swizzle (bit 4 ^ bit 7: unit ^ (d / 4) % 2). WGMMA reads them through a descriptor of that
// swizzle.
CTXATTN_HD constexpr int vt_swizzle(int d, int row_bytes) {
  return row_bytes == 128 ? d % 8 : row_bytes == 64 ? (d / 2) % 4 : (d / 4) % 2;
}
// Byte offset of position pos of V^T row d in such a part.
CTXATTN_HD int vt_row_offset(int d, int pos, int row_bytes) {
  return d * row_bytes + (((pos / 16) ^ vt_swizzle(d, row_bytes)) * 16) + pos % 16;
}
// The same in a V^T tile of block_n keys and head_dim rows: one part of block_n-byte rows for 32,
// 64 and 128 keys; for 192, a part of 128-byte rows (keys 0-127, four 32-key groups) and, after it
// at head_dim * 128, one of 64-byte rows (keys 128-191): a swizzle row holds 64 or 128 bytes.
CTXATTN_HD int vt_offset(int d, int pos, int block_n, int head_dim) {
  if (block_n != 192) return vt_row_offset(d, pos, block_n);
  return pos < 128 ? vt_row_offset(d, pos, 128) : head_dim * 128 + vt_row_offset(d, pos - 128, 64);
}

// ---- the V transpose by ldmatrix.trans and stmatrix (fp8_stage.cuh VTransposer) ----
// One step moves the 32 keys of group g and the 16 d bytes of column unit u of the raw V tile
// ([key][d] bytes): ldmatrix.x4.trans reads four 8 x 8 matrices of 16-bit elements, lane l
// supplying the row of key 32 g + l (matrix l / 8, row l % 8); thread t (j = t / 4, q = t % 4) then
// holds in register m the bytes (key 8 m + 2 q, d 2 j), (8 m + 2 q, 2 j + 1), (8 m + 2 q + 1, 2 j),
// (8 m + 2 q + 1, 2 j + 1) (keys inside the group, d inside the unit). Two byte_perm per pair of
// registers gather V^T words: stored_word(R, w) for w = 0 .. 3 is V^T row 2 j + w % 2 at positions
// 16 (w / 2) + 4 q .. + 3, whose keys key_at lists (2 q, 2 q + 1, 2 q + 8, 2 q + 9, + 16 for w >= 2).
// stmatrix.x4 writes word w as matrix w, row j; lane l supplies the address of matrix l / 8, row
// l % 8: V^T row stsm_d(l) of the unit, positions from stsm_pos(l) of the group.
CTXATTN_HD int ldsm_key(int lane) { return lane; }
CTXATTN_HD int stsm_d(int lane) { return 2 * (lane % 8) + (lane / 8) % 2; }
CTXATTN_HD int stsm_pos(int lane) { return 16 * (lane / 16); }

// Where 32-key group g of a V^T tile of block_n keys lies (vt_offset): the row bytes of its part,
// the part's byte offset in the tile, and the group's rank inside its part.
CTXATTN_HD constexpr int vt_group_row_bytes(int g, int block_n) {
  return block_n == 32 ? 32 : block_n == 64 || g >= 4 ? 64 : 128;
}
CTXATTN_HD constexpr int vt_group_part(int g, int head_dim) { return g >= 4 ? head_dim * 128 : 0; }
CTXATTN_HD constexpr int vt_group_rank(int g) { return g % 4; }
// The byte offset of lane `lane`'s stmatrix row address for group g and column unit `unit`: V^T
// row 16 unit + stsm_d(lane) of the group's part, the 16-byte position unit 2 rank + stsm_pos / 16,
// swizzled by the row (the transposer writes bytes 4 q .. 4 q + 3 of it from thread q's word).
CTXATTN_HD int vt_store_offset(int g, int unit, int lane, int block_n, int head_dim) {
  const int row_bytes = vt_group_row_bytes(g, block_n);
  const int d = 16 * unit + stsm_d(lane);
  return vt_group_part(g, head_dim) + d * row_bytes +
         (((2 * vt_group_rank(g) + stsm_pos(lane) / 16) ^ vt_swizzle(d, row_bytes)) << 4);
}

// __byte_perm(x, y, s): byte k of the result is byte (s >> 4k) & 7 of the eight bytes y:x (x the
// low four); the host form follows the same rule.
CTXATTN_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  const uint64_t v = (static_cast<uint64_t>(y) << 32) | x;
  uint32_t r = 0;
  for (int k = 0; k < 4; ++k) r |= static_cast<uint32_t>((v >> (8 * ((s >> (4 * k)) & 7))) & 0xffu) << (8 * k);
  return r;
#endif
}

// A 4 x 4 byte transpose: w[j] holds bytes 0..3 of key j (four consecutive d), out[i] gets byte i
// of every key, key j in byte j (one V^T row's four positions).
CTXATTN_HD void transpose_4x4(const uint32_t (&w)[4], uint32_t (&out)[4]) {
  const uint32_t lo01 = byte_perm(w[0], w[1], 0x5140), lo23 = byte_perm(w[2], w[3], 0x5140);
  const uint32_t hi01 = byte_perm(w[0], w[1], 0x7362), hi23 = byte_perm(w[2], w[3], 0x7362);
  out[0] = byte_perm(lo01, lo23, 0x5410);
  out[1] = byte_perm(lo01, lo23, 0x7632);
  out[2] = byte_perm(hi01, hi23, 0x5410);
  out[3] = byte_perm(hi01, hi23, 0x7632);
}

// The four V^T words of a step from the four ldmatrix.trans registers (layout above).
CTXATTN_HD void stored_words(const uint32_t (&r)[4], uint32_t (&w)[4]) {
  w[0] = byte_perm(r[0], r[1], 0x6420);  // even d: bytes 0, 2 of each register
  w[1] = byte_perm(r[0], r[1], 0x7531);  // odd d: bytes 1, 3
  w[2] = byte_perm(r[2], r[3], 0x6420);
  w[3] = byte_perm(r[2], r[3], 0x7531);
}

}  // namespace fp8
}  // namespace sm90
}  // namespace ctxattn
