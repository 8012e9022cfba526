// The small-page gather of the Hopper kernel (src/cuda/sm90/gather_layout.h, used by
// sm90/load.cuh KvProducer::gather), checked on the host for every stage it fills: each lane's
// 16-byte copies, pass by pass, must land byte for byte where the TMA boxes put that row's bytes
// (the layouts of sm90/traits.cuh), fill the tile exactly once, read whole 32-byte sectors, cover
// 16 consecutive rows a pass, and, in the swizzled stages, store from each quarter warp to eight
// different 16-byte bank groups.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "cuda/sm90/gather_layout.h"

namespace ctxattn_test {
namespace {

namespace gather = ctxattn::sm90::gather;

struct Stage {
  const char* what;
  gather::Shape shape;
  int block_n;  // keys a tile
};

// The stages of sm90/traits.cuh: kBlockN, kRowBytes, kKvGroupStride and kKvChunkStride of each
// kernel family.
std::vector<Stage> stages() {
  return {
      {"16-bit D = 64 (chunk-major)", {gather::kSwizzle128, 128, 1024, 128 * 128}, 128},
      {"16-bit D = 128 (group-major)", {gather::kSwizzle128, 256, 2 * 1024, 1024}, 128},
      {"16-bit D = 256 (group-major)", {gather::kSwizzle128, 512, 4 * 1024, 1024}, 64},
      {"16-bit D = 512 (group-major, column split)", {gather::kSwizzle128, 1024, 8 * 1024, 1024}, 32},
      {"e4m3 KV D = 64 (raw)", {gather::kRaw, 64, 0, 0}, 128},
      {"e4m3 KV D = 128 (raw)", {gather::kRaw, 128, 0, 0}, 128},
      {"e4m3 KV D = 256 (raw)", {gather::kRaw, 256, 0, 0}, 64},
      {"e4m3 KV D = 512 (raw, column split)", {gather::kRaw, 512, 0, 0}, 32},
      {"e4m3 Q/K/V D = 64", {gather::kSwizzle64, 64, 0, 0}, 128},
      {"e4m3 Q/K/V D = 128", {gather::kSwizzle128, 128, 1024, 128 * 128}, 128},
      {"e4m3 Q/K/V D = 128, long form", {gather::kSwizzle128, 128, 1024, 192 * 128}, 192},
      {"e4m3 Q/K/V D = 256, 128 keys", {gather::kSwizzle128, 256, 1024, 128 * 128}, 128},
      {"e4m3 Q/K/V D = 256, nvfp4 (64 keys)", {gather::kSwizzle128, 256, 1024, 64 * 128}, 64},
  };
}

// Where the TMA boxes put byte b of key row r (sm90/traits.cuh, sm90/load.cuh issue).
uint32_t box_offset(const Stage& st, int r, int b) {
  const gather::Shape& s = st.shape;
  if (s.kind == gather::kRaw) return static_cast<uint32_t>(r * s.row_bytes + b);
  const int unit = (b % 128) / 16, rest = b % 16;
  if (s.kind == gather::kSwizzle64) return static_cast<uint32_t>(r * 64 + ((unit ^ ((r / 2) % 4)) * 16) + rest);
  return static_cast<uint32_t>((r / 8) * s.group_stride + (b / 128) * s.chunk_stride + (r % 8) * 128 +
                               ((unit ^ (r % 8)) * 16) + rest);
}

// Every copy the gather makes for one tile: (pass k, unit pair m, lane) -> destination, row, unit.
struct Copy {
  int k, m, lane, row, unit;
  uint32_t to;
};
std::vector<Copy> copies(const Stage& st) {
  std::vector<Copy> all;
  const gather::Shape& s = st.shape;
  const int pair_units = s.row_bytes / 32;
  for (int k = 0; k < st.block_n / gather::kRowsPerPass; ++k) {
    for (int m = 0; m < pair_units; ++m) {
      for (int lane = 0; lane < 32; ++lane) {
        const uint32_t at = gather::lane_offset(s, lane) + static_cast<uint32_t>(k) * gather::pass_step(s);
        all.push_back({k, m, lane, gather::lane_row(s, lane) + gather::kRowsPerPass * k, 2 * m + lane % 2,
                       gather::unit_offset(s, at, m)});
      }
    }
  }
  return all;
}

TEST(Sm90GatherLayout, EveryByteLandsWhereTheBoxesPutIt) {
  for (const Stage& st : stages()) {
    SCOPED_TRACE(st.what);
    std::set<uint32_t> seen;
    for (const Copy& c : copies(st)) {
      ASSERT_LT(c.row, st.block_n);
      for (int b = 0; b < 16; ++b) {
        const uint32_t want = box_offset(st, c.row, 16 * c.unit + b);
        ASSERT_EQ(c.to + b, want) << "pass " << c.k << " unit pair " << c.m << " lane " << c.lane;
        ASSERT_TRUE(seen.insert(want).second) << "byte written twice: " << want;
      }
    }
    // The whole tile, once: as many bytes as it holds, all below its size.
    const size_t tile_bytes = static_cast<size_t>(st.block_n) * st.shape.row_bytes;
    EXPECT_EQ(seen.size(), tile_bytes);
    EXPECT_LT(*seen.rbegin(), tile_bytes);
  }
}

TEST(Sm90GatherLayout, EachCopyInstructionReadsWholeSectorsOfSixteenConsecutiveRows) {
  for (const Stage& st : stages()) {
    SCOPED_TRACE(st.what);
    const std::vector<Copy> all = copies(st);
    for (size_t first = 0; first < all.size(); first += 32) {
      std::set<int> rows;
      for (int lane = 0; lane < 32; lane += 2) {
        const Copy& even = all[first + lane];
        const Copy& odd = all[first + lane + 1];
        // A lane pair reads the two halves of one 32-byte sector of its row.
        EXPECT_EQ(even.row, odd.row);
        EXPECT_EQ(even.unit % 2, 0);
        EXPECT_EQ(odd.unit, even.unit + 1);
        rows.insert(even.row);
      }
      ASSERT_EQ(rows.size(), 16u);
      EXPECT_EQ(*rows.rbegin() - *rows.begin(), 15) << "rows of pass " << all[first].k;
      EXPECT_EQ(*rows.begin() % 16, 0);
    }
  }
}

TEST(Sm90GatherLayout, QuarterWarpsStoreToEightBankGroupsInTheSwizzledStages) {
  for (const Stage& st : stages()) {
    if (st.shape.kind == gather::kRaw) continue;  // unswizzled: not spread (gather_layout.h)
    SCOPED_TRACE(st.what);
    const std::vector<Copy> all = copies(st);
    for (size_t first = 0; first < all.size(); first += 32) {
      for (int quarter = 0; quarter < 4; ++quarter) {
        std::set<uint32_t> groups;
        for (int lane = 8 * quarter; lane < 8 * quarter + 8; ++lane) groups.insert((all[first + lane].to / 16) % 8);
        EXPECT_EQ(groups.size(), 8u) << "pass " << all[first].k << " unit pair " << all[first].m << " quarter "
                                     << quarter;
      }
    }
  }
}

TEST(Sm90GatherLayout, PairRowsArePermutationsOfSixteen) {
  for (const Stage& st : stages()) {
    SCOPED_TRACE(st.what);
    std::set<int> rows;
    for (int j = 0; j < 16; ++j) rows.insert(gather::pair_row(st.shape, j));
    EXPECT_EQ(rows.size(), 16u);
    EXPECT_EQ(*rows.begin(), 0);
    EXPECT_EQ(*rows.rbegin(), 15);
  }
}

}  // namespace
}  // namespace ctxattn_test
