// cpu_check_metadata: the host check of the metadata contents. The CPU backends run it before
// every call, so the compute loops may trust lengths and page ids.
#include <sstream>
#include <string>

#include "core/backends.h"

namespace ctxattn {
namespace {

template <typename... Parts>
Status lying(const Parts&... parts) {
  std::ostringstream s;
  (s << ... << parts);
  return Status::Error(CTXATTN_STATUS_INVALID_METADATA, s.str());
}

Status check_request(const Params& p, int32_t b) {
  const int64_t q0 = p.cum_seq_lens_q[b];
  const int64_t q1 = p.cum_seq_lens_q[b + 1];
  const int64_t q_len = q1 - q0;
  if (q_len < 0) {
    return lying("cum_seq_lens_q: request ", b, " has a negative query length (cum_seq_lens_q[", b, "] = ", q0,
                 ", cum_seq_lens_q[", b + 1, "] = ", q1, "); expected non-decreasing values");
  }
  if (q_len > p.max_q_len) {
    return lying("cum_seq_lens_q: request ", b, " has query length ", q_len, "; expected <= max_q_len = ",
                 p.max_q_len);
  }
  const int64_t kv_len = seq_lens_value(p, p.seq_lens[b]);  // uint32 above INT32_MAX: above max_kv_len
  if (kv_len < 0 || kv_len > p.max_kv_len_arg) {
    return lying("seq_lens: request ", b, " has seq_lens[", b, "] = ", kv_len, "; expected a value in [0, max_kv_len = ",
                 p.max_kv_len_arg, "]");
  }
  if (p.causal && kv_len < q_len) {
    return lying("seq_lens: request ", b, " has seq_lens[", b, "] = ", kv_len, " below its query length ", q_len,
                 "; expected seq_lens >= query length when causal");
  }
  const int64_t pages = (kv_len + p.page_size - 1) / p.page_size;
  if (pages > p.max_pages_per_seq) {
    return lying("block_tables: request ", b, " needs ", pages, " pages for seq_lens = ", kv_len,
                 "; expected at most max_pages_per_seq = ", p.max_pages_per_seq);
  }
  // The separate K / V form has a second row per request (block_tables[b][1][j]: V's page ids).
  for (int kv = 0; kv < (p.separate_kv_idx ? 2 : 1); ++kv) {
    const int32_t* table = kv ? p.v_block_tables : p.block_tables;
    for (int64_t j = 0; j < pages; ++j) {
      const int32_t page = table[static_cast<int64_t>(b) * p.block_tables_stride + j];
      if (page < 0 || page >= p.num_pages) {
        const std::string at = p.separate_kv_idx ? (kv ? "][1][" : "][0][") : "][";
        return lying("block_tables: request ", b, " has block_tables[", b, at, j, "] = ", page,
                     "; expected a page id in [0, num_pages = ", p.num_pages, ")");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status cpu_check_metadata(const Params& p) {
  if (p.batch_size == 0) return Status::Ok();
  const int64_t first = p.cum_seq_lens_q[0];
  if (first < 0) {
    return lying("cum_seq_lens_q: request 0 starts at cum_seq_lens_q[0] = ", first, "; expected >= 0");
  }
  for (int32_t b = 0; b < p.batch_size; ++b) CTXATTN_RETURN_IF_ERROR(check_request(p, b));
  const int64_t last = p.cum_seq_lens_q[p.batch_size];
  if (last > p.num_tokens) {
    return lying("cum_seq_lens_q: request ", p.batch_size - 1, " ends at cum_seq_lens_q[", p.batch_size, "] = ", last,
                 "; expected <= num_tokens = ", p.num_tokens);
  }
  return Status::Ok();
}

}  // namespace ctxattn
