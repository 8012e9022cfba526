// The cases of the GPU metadata torture (test_cuda_metadata_torture.cpp): the problem's request
// lengths, which requests lie, and the families of lying metadata, each case a function that
// rewrites the honest metadata. Host code only, so that the cases' own promises (the honest
// requests stay honest in every family but the one where no request is) are checked on every
// machine (test_metadata_torture_cases.cpp).
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace ctxattn_test {
namespace torture {

// Every torture problem has these requests. 0, 4 and 6 are honest unless a case lies about them
// too (q_len 1, 37 and 16; a cached prefix, none, partial pages); the others are the liars.
// cum_seq_lens_q entries 2, 3 and 8 (= B) bound liars only, so lying there keeps the honest
// requests honest.
inline const std::vector<int32_t> kQLens = {1, 5, 0, 12, 37, 20, 16, 3};
inline const std::vector<int32_t> kKvLens = {77, 20, 9, 64, 187, 100, 16, 3};
inline const std::vector<int> kLiars = {1, 2, 3, 5, 7};
inline const std::vector<int> kLiarBounds = {2, 3, 8};

// ---- metadata and the rows a request may write ----

struct Metadata {
  std::vector<int32_t> cu_q, seq_lens, tables;
  bool seq_lens_uint32 = false;
};

struct Rows {
  int64_t begin = 0, end = 0;
  bool empty() const { return end <= begin; }
  bool overlaps(const Rows& o) const { return !empty() && !o.empty() && begin < o.end && o.begin < end; }
};

// The host twin of load_request_span: the query rows request b owns whatever its metadata holds.
inline Rows request_rows(const Metadata& m, int b, int64_t num_tokens, int64_t max_q_len) {
  const int64_t q0 = m.cu_q[b], q1 = m.cu_q[b + 1];
  if (q0 < 0 || q0 >= num_tokens || q1 <= q0) return {};
  return {q0, q0 + std::min({q1 - q0, num_tokens - q0, max_q_len})};
}

// ---- the cases ----

struct Case {
  std::string name;
  std::function<void(Metadata&)> apply;
};

// What a family of cases may use: the problem's sizes and the honest metadata.
struct Sizes {
  int64_t num_tokens;
  int64_t num_pages;
  int32_t max_kv_len;
  int32_t page_size;
  int64_t cols;  // block-table row stride
  Metadata honest;
  int64_t kv_cols = 0;  // separate K / V indices: V's ids start this many columns into a row; 0 shared
};

inline std::string num(int64_t v) { return std::to_string(v); }

// The extremes and the neighbours of the problem's sizes, as int32 bits.
inline std::vector<int32_t> extreme_values(const Sizes& z) {
  const int64_t T = z.num_tokens, P = z.num_pages;
  return {INT32_MIN,
          INT32_MIN + 1,
          -1,
          0,
          1,
          INT32_MAX - 1,
          INT32_MAX,
          static_cast<int32_t>(T - 1),
          static_cast<int32_t>(T),
          static_cast<int32_t>(T + 1),
          static_cast<int32_t>(-T),
          static_cast<int32_t>(P - 1),
          static_cast<int32_t>(P),
          static_cast<int32_t>(P + 1),
          static_cast<int32_t>(-P)};
}

// Random values: two over the whole 32-bit range, two near the problem's sizes.
inline std::vector<int32_t> random_values(const Sizes& z, std::mt19937& rng) {
  const int64_t span = 2 * std::max(z.num_tokens, z.num_pages);
  std::uniform_int_distribution<int64_t> near(-span, span);
  return {static_cast<int32_t>(rng()), static_cast<int32_t>(rng()), static_cast<int32_t>(near(rng)),
          static_cast<int32_t>(near(rng))};
}

inline int64_t pages_of(int32_t kv_len, int32_t page_size) { return (static_cast<int64_t>(kv_len) + page_size - 1) / page_size; }

// Fills request b's block-table row from column `first` on with f(column).
inline void fill_row(Metadata& m, const Sizes& z, int b, int64_t first, const std::function<int32_t(int64_t)>& f) {
  // With separate indices the row is K's ids then V's: both from `first` on (V's column c at kv_cols + c).
  const int64_t width = z.kv_cols > 0 ? z.kv_cols : z.cols;
  for (int64_t c = first; c < width; ++c) m.tables[b * z.cols + c] = f(c);
  if (z.kv_cols > 0) {
    for (int64_t c = z.kv_cols + first; c < z.cols; ++c) m.tables[b * z.cols + c] = f(c);
  }
}

inline std::vector<Case> cum_seq_lens_q_cases(const Sizes& z, std::mt19937& rng) {
  std::vector<Case> cases;
  std::vector<int32_t> values = extreme_values(z);
  for (int32_t v : random_values(z, rng)) values.push_back(v);
  for (size_t i = 0; i < values.size(); ++i) {
    const int32_t v = values[i];
    const int entry = kLiarBounds[i % kLiarBounds.size()];
    cases.push_back({"cum_seq_lens_q[" + num(entry) + "] = " + num(v), [=](Metadata& m) { m.cu_q[entry] = v; }});
    cases.push_back({"cum_seq_lens_q[2, 3, 8] = " + num(v), [=](Metadata& m) {
                       for (int e : kLiarBounds) m.cu_q[e] = v;
                     }});
  }
  // Both ends of lying request 2; the first is the shape of the issue's [0, 5, 2147483647, 46].
  const int64_t T = z.num_tokens;
  const std::pair<int32_t, int32_t> ends[] = {{INT32_MAX, z.honest.cu_q[3]},
                                               {0, INT32_MAX},
                                               {INT32_MIN, INT32_MAX},
                                               {static_cast<int32_t>(T - 1), INT32_MAX},
                                               {INT32_MAX, INT32_MIN},
                                               {-1, static_cast<int32_t>(T + 1)},
                                               {static_cast<int32_t>(T), 0},
                                               {INT32_MIN, -1}};
  for (const auto& e : ends) {
    cases.push_back({"cum_seq_lens_q[2] = " + num(e.first) + ", cum_seq_lens_q[3] = " + num(e.second),
                     [=](Metadata& m) {
                       m.cu_q[2] = e.first;
                       m.cu_q[3] = e.second;
                     }});
  }
  return cases;
}

inline std::vector<Case> seq_lens_cases(const Sizes& z, std::mt19937& rng) {
  std::vector<Case> cases;
  std::vector<int32_t> values = extreme_values(z);
  for (int32_t v : {z.max_kv_len - 1, z.max_kv_len, z.max_kv_len + 1}) values.push_back(v);
  for (int32_t v : random_values(z, rng)) values.push_back(v);
  for (int32_t v : values) {
    cases.push_back({"int32 seq_lens of the liars = " + num(v), [=](Metadata& m) {
                       for (int b : kLiars) m.seq_lens[b] = v;
                     }});
  }
  // uint32: above INT32_MAX (read as negative bits by the kernels) and ordinary values.
  std::vector<uint32_t> unsigned_values = {0x80000000u, 0x80000001u, 0xFFFFFFFFu, 0xFFFFFFFEu,
                                           0x80000000u + static_cast<uint32_t>(z.max_kv_len),
                                           static_cast<uint32_t>(rng()) | 0x80000000u, 0u,
                                           static_cast<uint32_t>(z.max_kv_len),
                                           static_cast<uint32_t>(z.max_kv_len) + 1u};
  for (uint32_t u : unsigned_values) {
    cases.push_back({"uint32 seq_lens of the liars = " + num(u), [=](Metadata& m) {
                       m.seq_lens_uint32 = true;
                       for (int b : kLiars) m.seq_lens[b] = static_cast<int32_t>(u);
                     }});
  }
  for (int rotation = 0; rotation < 2; ++rotation) {
    cases.push_back({"uint32 seq_lens, each liar its own value (rotation " + num(rotation) + ")", [=](Metadata& m) {
                       m.seq_lens_uint32 = true;
                       for (size_t i = 0; i < kLiars.size(); ++i) {
                         m.seq_lens[kLiars[i]] =
                             static_cast<int32_t>(unsigned_values[(i * 2 + rotation) % unsigned_values.size()]);
                       }
                     }});
  }
  return cases;
}

inline std::vector<Case> block_table_cases(const Sizes& z, std::mt19937& rng) {
  std::vector<Case> cases;
  std::vector<int32_t> values = extreme_values(z);
  for (int32_t v : random_values(z, rng)) values.push_back(v);
  // The liars' whole rows, and the columns past the honest requests' pages (never to be read).
  for (int32_t v : values) {
    cases.push_back({"block_tables of the liars and past the honest pages = " + num(v), [=](Metadata& m) {
                       for (int b = 0; b < static_cast<int>(kQLens.size()); ++b) {
                         const bool liar = std::find(kLiars.begin(), kLiars.end(), b) != kLiars.end();
                         fill_row(m, z, b, liar ? 0 : pages_of(kKvLens[b], z.page_size), [v](int64_t) { return v; });
                       }
                     }});
  }
  const uint32_t seed = static_cast<uint32_t>(rng());
  cases.push_back({"block_tables of the liars: random 32-bit ids", [=](Metadata& m) {
                     std::mt19937 r(seed);
                     for (int b : kLiars) fill_row(m, z, b, 0, [&](int64_t) { return static_cast<int32_t>(r()); });
                   }});
  cases.push_back({"block_tables of the liars: random ids near the pool", [=](Metadata& m) {
                     std::mt19937 r(seed + 1);
                     std::uniform_int_distribution<int64_t> near(-2 * z.num_pages, 2 * z.num_pages);
                     for (int b : kLiars) fill_row(m, z, b, 0, [&](int64_t) { return static_cast<int32_t>(near(r)); });
                   }});
  cases.push_back({"block_tables of the liars: pages of other requests, in the pool", [=](Metadata& m) {
                     std::mt19937 r(seed + 2);
                     std::uniform_int_distribution<int64_t> pool(0, z.num_pages - 1);
                     for (int b : kLiars) fill_row(m, z, b, 0, [&](int64_t) { return static_cast<int32_t>(pool(r)); });
                   }});
  return cases;
}

// Each liar lies in a random mix of arrays, with values from every list.
inline std::vector<Case> mixed_cases(const Sizes& z, std::mt19937& rng) {
  std::vector<Case> cases;
  std::vector<int32_t> values = extreme_values(z);
  for (int32_t v : random_values(z, rng)) values.push_back(v);
  values.push_back(z.max_kv_len + 1);
  for (int i = 0; i < 12; ++i) {
    const uint32_t seed = static_cast<uint32_t>(rng());
    cases.push_back({"mixed lies, seed " + num(seed), [=](Metadata& m) {
                       std::mt19937 r(seed);
                       auto pick = [&] { return values[r() % values.size()]; };
                       m.seq_lens_uint32 = r() % 2 == 0;
                       for (int e : kLiarBounds) {
                         if (r() % 2) m.cu_q[e] = pick();
                       }
                       for (int b : kLiars) {
                         if (r() % 2) m.seq_lens[b] = pick();
                         if (r() % 2) fill_row(m, z, b, 0, [&](int64_t) { return pick(); });
                       }
                     }});
  }
  return cases;
}

// One array (or all of them) holds a single value everywhere, or random values everywhere: no
// request is honest.
inline std::vector<Case> alone_cases(const Sizes& z, std::mt19937& rng) {
  std::vector<Case> cases;
  const int32_t T = static_cast<int32_t>(z.num_tokens), P = static_cast<int32_t>(z.num_pages);
  const std::vector<int32_t> values = {INT32_MIN, -1, 0, 1, T, P, INT32_MAX, static_cast<int32_t>(rng())};
  for (int32_t v : values) {
    auto fill = [v](std::vector<int32_t>& a) { std::fill(a.begin(), a.end(), v); };
    cases.push_back({"all of cum_seq_lens_q = " + num(v), [=](Metadata& m) { fill(m.cu_q); }});
    cases.push_back({"all of seq_lens (int32) = " + num(v), [=](Metadata& m) { fill(m.seq_lens); }});
    cases.push_back({"all of seq_lens (uint32) = " + num(static_cast<uint32_t>(v)), [=](Metadata& m) {
                       m.seq_lens_uint32 = true;
                       fill(m.seq_lens);
                     }});
    cases.push_back({"all of block_tables = " + num(v), [=](Metadata& m) { fill(m.tables); }});
    cases.push_back({"every metadata array = " + num(v), [=](Metadata& m) {
                       fill(m.cu_q);
                       fill(m.seq_lens);
                       fill(m.tables);
                     }});
  }
  for (int i = 0; i < 3; ++i) {
    const uint32_t seed = static_cast<uint32_t>(rng());
    cases.push_back({"every metadata entry random, seed " + num(seed), [=](Metadata& m) {
                       std::mt19937 r(seed);
                       for (auto* a : {&m.cu_q, &m.seq_lens, &m.tables}) {
                         for (int32_t& x : *a) x = static_cast<int32_t>(r());
                       }
                       m.seq_lens_uint32 = r() % 2 == 0;
                     }});
    cases.push_back({"cum_seq_lens_q random near [0, T], seed " + num(seed), [=](Metadata& m) {
                       std::mt19937 r(seed);
                       std::uniform_int_distribution<int32_t> near(-2, T + 2);
                       for (int32_t& x : m.cu_q) x = near(r);
                     }});
  }
  return cases;
}

using CaseFamily = std::vector<Case> (*)(const Sizes&, std::mt19937&);

// Whether request b's metadata in m (its two cum_seq_lens_q bounds, its length and the table
// entries of its pages) is the honest metadata h's.
inline bool same_request(const Metadata& m, const Metadata& h, const Sizes& z, int b) {
  if (m.cu_q[b] != h.cu_q[b] || m.cu_q[b + 1] != h.cu_q[b + 1] || m.seq_lens[b] != h.seq_lens[b]) return false;
  const int64_t pages = pages_of(h.seq_lens[b], z.page_size);
  const auto same_ids = [&](int64_t at) {
    return std::equal(m.tables.begin() + at, m.tables.begin() + at + pages, h.tables.begin() + at);
  };
  return same_ids(b * z.cols) && (z.kv_cols == 0 || same_ids(b * z.cols + z.kv_cols));
}

}  // namespace torture
}  // namespace ctxattn_test
