// The index maps of the Hopper kernel's FP8 P V (src/cuda/sm90/fp8_layout.h), checked on the
// host: the A operand built from a thread's own accumulator registers must hold, in every byte,
// the P value of the key that V^T stores at that k position, for every thread and k step; the
// key order must be a permutation; the V^T swizzle must place every byte of a tile exactly once.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "cuda/sm90/fp8_layout.h"

namespace ctxattn_test {
namespace {

namespace fp8 = ctxattn::sm90::fp8;

TEST(Sm90Fp8Layout, KeyOrderIsAPermutationOfEachGroupOf32) {
  std::set<int> keys;
  for (int pos = 0; pos < 32; ++pos) {
    const int key = fp8::key_at(pos);
    EXPECT_GE(key, 0);
    EXPECT_LT(key, 32);
    keys.insert(key);
  }
  EXPECT_EQ(keys.size(), 32u);
}

TEST(Sm90Fp8Layout, TheAOperandHoldsThePOfTheKeyVtStoresThere) {
  for (int block_n : {32, 64, 128, 192}) {
    for (int kk = 0; kk < block_n / 32; ++kk) {
      for (int q = 0; q < 4; ++q) {
        for (int r = 0; r < 4; ++r) {
          for (int b = 0; b < 4; ++b) {
            SCOPED_TRACE("block_n " + std::to_string(block_n) + " kk " + std::to_string(kk) + " q " +
                         std::to_string(q) + " r " + std::to_string(r) + " b " + std::to_string(b));
            const int i = fp8::a_source(kk, r, b);
            ASSERT_GE(i, 0);
            ASSERT_LT(i, block_n / 2);  // one of the thread's S registers
            EXPECT_EQ(fp8::acc_row_half(i), fp8::a_row_half(r));
            const int position = fp8::a_position(r, b, q);
            EXPECT_EQ(fp8::acc_column(i, q), 32 * kk + fp8::key_at(position));
          }
        }
      }
    }
  }
}

TEST(Sm90Fp8Layout, EverySRegisterFeedsTheAOperandOnce) {
  for (int block_n : {32, 64, 128, 192}) {
    std::vector<int> uses(block_n / 2, 0);
    for (int kk = 0; kk < block_n / 32; ++kk) {
      for (int r = 0; r < 4; ++r) {
        for (int b = 0; b < 4; ++b) ++uses[fp8::a_source(kk, r, b)];
      }
    }
    for (int i = 0; i < block_n / 2; ++i) EXPECT_EQ(uses[i], 1) << "S register " << i;
  }
}

// 192-key tiles (the long form at D = 128) are two parts: keys 0-127 in 128-byte rows, then keys
// 128-191 in 64-byte rows; every byte still lands inside its own row of its part.
// Q K^T's A operand of the column-split kernels, read from shared memory by ldmatrix.x4 (mma.cuh
// load_q_fragments): lanes 8m .. 8m + 7 give the rows of matrix m, rows 8 (m % 2) + lane % 8 of the
// warp's 16 at byte 16 (m / 2) of the 32-byte k step, and thread T gets in register m the 16-bit
// elements 2 (T % 4), 2 (T % 4) + 1 of its matrix's row T / 4 (PTX ISA, ldmatrix fragments). In
// bytes, that is what the FP8 k32 A operand wants of register m (a_row_half, a_position), so one
// load serves the 16-bit and the e4m3 kernels.
TEST(Sm90Fp8Layout, LdmatrixFillsTheFp8AOperand) {
  for (int lane = 0; lane < 32; ++lane) {
    // The row lane `lane` addresses (load_q_fragments' formula) is row lane % 8 of matrix lane / 8.
    const int m_addr = lane / 8;
    EXPECT_EQ((lane % 8) + 8 * ((lane / 8) % 2), 8 * (m_addr % 2) + lane % 8);
    EXPECT_EQ(16 * (lane / 16), 16 * (m_addr / 2));
    const int q = lane % 4;
    for (int m = 0; m < 4; ++m) {
      for (int b = 0; b < 4; ++b) {
        // Thread `lane` receives byte b of register m from row lane / 4 of matrix m, element
        // 2 q + b / 2: byte 4 q + b of that row's 16 bytes.
        const int row = 8 * (m % 2) + lane / 4;
        const int k_byte = 16 * (m / 2) + 4 * q + b;
        EXPECT_EQ(row / 8, fp8::a_row_half(m));
        EXPECT_EQ(k_byte, fp8::a_position(m, b, q)) << "lane " << lane << " m " << m << " b " << b;
      }
    }
  }
}

TEST(Sm90Fp8Layout, VtSwizzlePlacesEveryByteOfATileOnce) {
  for (int block_n : {32, 64, 128, 192}) {
    for (int head_dim : {128, 256, 512}) {
      std::vector<int> hits(static_cast<size_t>(block_n) * head_dim, 0);
      for (int d = 0; d < head_dim; ++d) {
        for (int pos = 0; pos < block_n; ++pos) {
          const int row_bytes = block_n == 192 ? (pos < 128 ? 128 : 64) : block_n;
          const int part = block_n == 192 && pos >= 128 ? head_dim * 128 : 0;
          const int off = fp8::vt_offset(d, pos, block_n, head_dim);
          ASSERT_GE(off, part + d * row_bytes);  // inside its own row
          ASSERT_LT(off, part + (d + 1) * row_bytes);
          EXPECT_EQ(off % 4, pos % 4);  // 4-byte words stay whole (the transposer stores words)
          ++hits[off];
        }
      }
      for (size_t k = 0; k < hits.size(); ++k) ASSERT_EQ(hits[k], 1) << "byte " << k;
    }
  }
}

// Each row size's swizzle is the one its WGMMA descriptor names (CuTe's Swizzle<B, 4, 3>: address
// bits 4 .. 4 + B - 1 XOR-ed with bits 7 .. 7 + B - 1; B = 3, 2, 1 for 128-, 64- and 32-byte rows),
// on offsets from a 1024-byte-aligned tile.
TEST(Sm90Fp8Layout, VtRowsFollowTheDescriptorSwizzles) {
  for (int row_bytes : {32, 64, 128}) {
    const int bits = row_bytes == 128 ? 3 : row_bytes == 64 ? 2 : 1;
    const int mask = (1 << bits) - 1;
    for (int d = 0; d < 64; ++d) {
      for (int pos = 0; pos < row_bytes; ++pos) {
        const int linear = d * row_bytes + pos;
        const int swizzled = linear ^ (((linear >> 7) & mask) << 4);
        ASSERT_EQ(fp8::vt_row_offset(d, pos, row_bytes), swizzled) << "rows of " << row_bytes << " d " << d;
      }
    }
  }
}

// The transposer's stmatrix addresses (vt_store_offset, the terms load.cuh VTransposer adds up)
// put byte 4 q + b of each lane's word at vt_offset of its V^T row and key position, for every
// group of every tile height, including the second part of 192-key tiles.
TEST(Sm90Fp8Layout, TransposerAddressesFollowTheVtLayout) {
  for (int block_n : {32, 64, 128, 192}) {
    for (int head_dim : {128, 256, 512}) {
      for (int g = 0; g < block_n / 32; ++g) {
        for (int unit = 0; unit < head_dim / 16; ++unit) {
          for (int lane = 0; lane < 32; ++lane) {
            for (int q = 0; q < 4; ++q) {
              for (int b = 0; b < 4; ++b) {
                const int d = 16 * unit + fp8::stsm_d(lane);
                const int pos = 32 * g + fp8::stsm_pos(lane) + 4 * q + b;
                ASSERT_EQ(fp8::vt_store_offset(g, unit, lane, block_n, head_dim) + 4 * q + b,
                          fp8::vt_offset(d, pos, block_n, head_dim))
                    << "block_n " << block_n << " D " << head_dim << " g " << g << " unit " << unit << " lane "
                    << lane << " q " << q << " b " << b;
              }
            }
          }
        }
      }
    }
  }
}

TEST(Sm90Fp8Layout, FourByFourByteTranspose) {
  const uint32_t w[4] = {0x03020100u, 0x13121110u, 0x23222120u, 0x33323130u};  // byte i of key j: 0xji
  uint32_t out[4];
  fp8::transpose_4x4(w, out);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ((out[i] >> (8 * j)) & 0xffu, static_cast<uint32_t>(16 * j + i)) << "row " << i << " key " << j;
    }
  }
}

// The ldmatrix.trans / stmatrix transpose, simulated with the instructions' fragment layouts
// (PTX ISA): every step of every thread writes each V^T byte of its group and unit once, with the
// byte of the key key_at names.
TEST(Sm90Fp8Layout, LdmatrixTransposeWritesVtInKeyOrder) {
  // Each V^T byte's source (key, d) is identified in two runs: one where a raw byte holds its key,
  // one where it holds its d.
  for (int run = 0; run < 2; ++run) {
    auto raw = [&](int key, int d) { return static_cast<uint8_t>(run == 0 ? key : d); };
    uint8_t vt[16][32];
    int hits[16][32] = {};
    for (int t = 0; t < 32; ++t) {
      const int j = t / 4, q = t % 4;
      uint32_t r[4];
      for (int m = 0; m < 4; ++m) {
        // ldmatrix.trans: register m of thread t = (M[2q][j], M[2q + 1][j]), M's row i being the
        // row lane 8 m + i supplied, element j its bytes 2 j, 2 j + 1.
        const int k0 = fp8::ldsm_key(8 * m + 2 * q), k1 = fp8::ldsm_key(8 * m + 2 * q + 1);
        r[m] = static_cast<uint32_t>(raw(k0, 2 * j)) | static_cast<uint32_t>(raw(k0, 2 * j + 1)) << 8 |
               static_cast<uint32_t>(raw(k1, 2 * j)) << 16 | static_cast<uint32_t>(raw(k1, 2 * j + 1)) << 24;
      }
      uint32_t w[4];
      fp8::stored_words(r, w);
      for (int m = 0; m < 4; ++m) {
        // stmatrix: register m of thread t goes to matrix m, row j, bytes 4 q .. 4 q + 3; the
        // row's address comes from lane 8 m + j.
        const int lane = 8 * m + j;
        for (int b = 0; b < 4; ++b) {
          const int d = fp8::stsm_d(lane), pos = fp8::stsm_pos(lane) + 4 * q + b;
          ASSERT_LT(d, 16);
          ASSERT_LT(pos, 32);
          vt[d][pos] = static_cast<uint8_t>(w[m] >> (8 * b));
          ++hits[d][pos];
        }
      }
    }
    for (int d = 0; d < 16; ++d) {
      for (int pos = 0; pos < 32; ++pos) {
        ASSERT_EQ(hits[d][pos], 1) << "d " << d << " pos " << pos;
        EXPECT_EQ(vt[d][pos], raw(fp8::key_at(pos), d)) << (run == 0 ? "key" : "d") << ", d " << d << " pos " << pos;
      }
    }
  }
}

}  // namespace
}  // namespace ctxattn_test
