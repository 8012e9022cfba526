// Where the Hopper kernel's small-page gather (load.cuh KvProducer::gather) puts each 16-byte unit
// of a K / V tile, shared with a host test (tests/cpp/test_sm90_gather_layout.cpp) that checks it
// byte for byte against the layouts the TMA boxes write and counts the stores' bank wavefronts.
//
// A lane pair copies a key row: lanes 2j and 2j + 1 take rows i + 16 k (i = lane_row(j)) and, in
// each, the 16-byte units 2m + h (h = lane % 2). 16 being a multiple of every gathered page size
// and of the swizzles' row periods, a lane's rows share their place in the swizzle: the lane's
// first row gives an offset whose bits below 128 hold the lane's swizzle, a pass adds a constant,
// and unit m is an XOR away. lane_row orders the 16 rows of a pass so that the eight lanes of each
// quarter warp store to eight different 16-byte bank groups in the swizzled layouts: their four
// rows' swizzles differ where a unit pair's position depends on them (bits 1-2 of r % 8 in the
// 128-byte swizzle: rows 0, 2, 4, 6 and 1, 3, 5, 7; in the 64-byte one the row's half of the
// 128 bytes and bit 1 of (r / 2) % 4: rows 0, 1, 4, 5 and 2, 3, 6, 7). The raw tile's stores are
// not spread so (its rows start on the same bank group at D >= 128).
#pragma once

#include <stdint.h>

#include "core/host_device.h"

namespace ctxattn {
namespace sm90 {
namespace gather {

constexpr int kRowsPerPass = 16;  // rows one copy instruction covers: 16 lane pairs

enum Kind : int {
  // 64-column (128-byte) chunks of 128-byte rows in the 128-byte swizzle (unit c of row r at
  // c ^ (r % 8)): 8-row groups group_stride apart, chunks chunk_stride apart (traits.cuh: the
  // group-major 16-bit stages and the chunk-major ones).
  kSwizzle128 = 0,
  // 64-byte rows in the 64-byte swizzle (unit c of row r at c ^ ((r / 2) % 4)): e4m3 Q/K/V at D = 64.
  kSwizzle64 = 1,
  // Rows of row_bytes, unswizzled: the raw e4m3 tile the wideners read.
  kRaw = 2,
};

struct Shape {
  int kind;
  int row_bytes;     // a key row: D x the element's bytes
  int group_stride;  // kSwizzle128
  int chunk_stride;  // kSwizzle128
};

// The first row (0 .. 15) of lane pair j (lanes 2j, 2j + 1); a permutation of 0 .. 15.
CTXATTN_HD int pair_row(const Shape& s, int j) {
  const int q = j / 4, r = j % 4;  // quarter warp q, its r-th pair
  if (s.kind == kSwizzle128) return 8 * (q / 2) + 2 * r + q % 2;
  if (s.kind == kSwizzle64) return 8 * (q / 2) + 2 * (q % 2) + (r / 2) * 4 + r % 2;
  return j;
}
CTXATTN_HD int lane_row(const Shape& s, int lane) { return pair_row(s, lane / 2); }

// The offset of lane `lane`'s first row, with the lane's swizzle in bits 4-6.
CTXATTN_HD uint32_t lane_offset(const Shape& s, int lane) {
  const int i = lane_row(s, lane), h = lane % 2;
  if (s.kind == kRaw) return static_cast<uint32_t>(i * s.row_bytes + h * 16);
  if (s.kind == kSwizzle64) return static_cast<uint32_t>(i * 64 + ((h ^ ((i / 2) % 4)) * 16));
  return static_cast<uint32_t>((i / 8) * s.group_stride + (i % 8) * 128 + ((h ^ (i % 8)) * 16));
}

// From a lane's row i + 16 k to row i + 16 (k + 1).
CTXATTN_HD uint32_t pass_step(const Shape& s) {
  if (s.kind == kRaw) return static_cast<uint32_t>(kRowsPerPass * s.row_bytes);
  if (s.kind == kSwizzle64) return kRowsPerPass * 64;
  return static_cast<uint32_t>(kRowsPerPass / 8 * s.group_stride);
}

// The lane's unit 2m + h of the row whose lane offset is `at`: the XOR moves the unit inside the
// row (the row lies on a multiple of 128 bytes, or of 64 in the 64-byte swizzle, from a 1024-byte
// aligned stage); at 128-byte rows, units 8 and up lie in the next chunks.
CTXATTN_HD uint32_t unit_offset(const Shape& s, uint32_t at, int m) {
  if (s.kind == kRaw) return at + static_cast<uint32_t>(m * 32);
  if (s.kind == kSwizzle64) return at ^ static_cast<uint32_t>(m * 32);
  return (at ^ static_cast<uint32_t>((m % 4) * 32)) + static_cast<uint32_t>((m / 4) * s.chunk_stride);
}

}  // namespace gather
}  // namespace sm90
}  // namespace ctxattn
