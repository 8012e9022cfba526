// The swizzle of the 16-bit tiles in shared memory: rows of 16-byte chunks, chunk c of row r
// stored at position c ^ (r % 8), so the eight rows that one ldmatrix phase reads (same chunk,
// consecutive rows) land in eight different groups of four banks.
#pragma once

namespace ctxattn {
namespace sm80 {

// Byte offset of chunk `chunk` of row `row` in a swizzled tile of `row_chunks` chunks a row.
__device__ __forceinline__ int swizzled_chunk(int row, int chunk, int row_chunks) {
  return (row * row_chunks + (chunk ^ (row & 7))) * 16;
}

}  // namespace sm80
}  // namespace ctxattn
