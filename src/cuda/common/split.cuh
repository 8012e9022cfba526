// The work list of both GPU kernels and the mechanism of split-KV (the policy: split_policy.h).
//
// A call's grid is batch_size * slots CTAs; CTA `linear` is work item linear % slots of request
// linear / slots. Inside a request, items run KV head fastest, then split piece, then m-block
// longest first (the last rows see the most keys); items past the request's own count are
// empty. Everything is derived on the GPU from the request's safe span, so whatever the metadata
// holds an item stays inside its request's slots and the workspace.
//
// A split piece runs the online softmax over its key tiles without the sink, then stores its
// unnormalised O, its row maxima and denominators (fp32) in its workspace slot and counts itself
// in the tile's counter. The group that arrives last merges the pieces in piece order -- the same
// arithmetic whichever CTA is last, so reruns are bitwise identical -- adds the sink, resets the
// counter for the next call and runs the ordinary epilogue (normalisation, LSE, output kinds).
#pragma once

#include <math_constants.h>
#include <stdint.h>

#include "core/params.h"
#include "cuda/common/request.cuh"
#include "cuda/common/rows.cuh"
#include "cuda/common/split_policy.h"

namespace ctxattn {

struct WorkTile {
  int batch;
  int kv_head;
  int64_t q_start;
  int q_len;
  int kv_len;
  int packed_rows;  // q_len * G, <= T * Hq, which the gate keeps within int32
  int m0;           // first packed row of the tile; packed_rows when the item is empty
  int piece;        // split piece of this item, 0 .. pieces - 1
  int pieces;       // 1: the request is not split
  int tile;         // (m-block, KV head) index inside the request: kv_head + Hkv * rank
  int item;         // work item inside the request

  // kSplit == false: a call where no request can split (plan.shape.target == 0), decoded
  // without the split arithmetic (and the kernels then compile without the split code).
  template <int kBlockM, bool kSplit>
  __device__ static WorkTile make(const Params& p, const SplitPlan& plan, int linear) {
    WorkTile w;
    w.batch = plan.by_slots.div(linear);
    w.item = linear - w.batch * plan.slots;
    const RequestSpan span = load_request_span(p, w.batch);
    w.q_start = span.q_start;
    w.q_len = span.q_len;
    w.kv_len = span.kv_len;
    w.packed_rows = span.q_len * p.group_size;
    w.pieces = kSplit ? split_pieces(plan.shape, span.q_len, span.kv_len) : 1;
    const int rest = plan.by_kv_heads.div(w.item);
    w.kv_head = w.item - rest * p.num_kv_heads;
    int rank = rest;
    w.piece = 0;
    if (w.pieces > 1) {
      rank = rest / w.pieces;
      w.piece = rest - rank * w.pieces;
    }
    // packed_rows + kBlockM - 1 stays below 2^31 (the backends' gates).
    const int m_blocks = static_cast<int>((static_cast<unsigned>(w.packed_rows) + kBlockM - 1) / kBlockM);
    w.tile = w.kv_head + p.num_kv_heads * rank;
    w.m0 = rank < m_blocks ? (m_blocks - 1 - rank) * kBlockM : w.packed_rows;
    return w;
  }

  __device__ bool empty() const { return m0 >= packed_rows; }
  __device__ bool split() const { return pieces > 1; }
};

// One thread group's partial of a split piece: kRegs accumulators and kRows rows a thread, for
// kThreads threads. Stored register-major ([register / 4][thread] float4, then [row][thread] for
// the maxima and the denominators) so that each store instruction of a warp is coalesced; the
// merging group has the same thread layout and reads its own values back.
template <int kRegs, int kRows, int kThreads>
struct SplitPartial {
  static_assert(kRegs % 4 == 0, "accumulators come in float4s");
  static constexpr int kFloats = (kRegs + 2 * kRows) * kThreads;

  __device__ static float* group_slot(const SplitPlan& plan, const WorkTile& w, int item, int group) {
    const int64_t slot = (static_cast<int64_t>(w.batch) * plan.shape.target + item) * plan.groups + group;
    return plan.partials + slot * plan.group_floats;
  }

  __device__ static unsigned int* counter(const SplitPlan& plan, const WorkTile& w, int group) {
    return plan.counters + (static_cast<int64_t>(w.batch) * plan.shape.target + w.tile) * plan.groups + group;
  }

  // o(i): accumulator register i (any order the caller likes, the same for store and merge).
  template <class O>
  __device__ static void store(float* dst, int t, O&& o, const float (&m)[kRows], const float (&l)[kRows]) {
    float4* v = reinterpret_cast<float4*>(dst);
#pragma unroll
    for (int i = 0; i < kRegs / 4; ++i) {
      __stcg(v + i * kThreads + t, make_float4(o(4 * i), o(4 * i + 1), o(4 * i + 2), o(4 * i + 3)));
    }
    float* rows = dst + kRegs * kThreads;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      __stcg(rows + r * kThreads + t, m[r]);
      __stcg(rows + (kRows + r) * kThreads + t, l[r]);
    }
  }

  // Makes the stores of every thread visible before the leader counts the piece (all threads
  // call it after store, then the group synchronises).
  __device__ static void publish() { __threadfence(); }

  // The group leader counts its piece; true for the last of the tile's pieces, which also resets
  // the counter to zero for the next call.
  __device__ static bool arrive(unsigned int* count, int pieces) {
    const unsigned int before = atomicAdd(count, 1u);
    const bool last = before == static_cast<unsigned int>(pieces - 1);
    if (last) atomicExch(count, 0u);
    return last;
  }

  // The last group: o, l and lse of every piece merged (in piece order), sink included -- what the
  // unsplit softmax's finish would give. slot(piece) is the piece's stored partial; row_of(i) is the
  // row of register i.
  template <class Slot, class O, class RowOf>
  __device__ static void merge(int pieces, Slot&& slot, int t, O&& o, RowOf&& row_of, const float (&sink_log2)[kRows],
                               float (&l)[kRows], float (&lse)[kRows]) {
    __threadfence();  // the other pieces' stores, counted before this group's arrival
    float top[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) top[r] = sink_log2[r];
    for (int k = 0; k < pieces; ++k) {
      const float* rows = slot(k) + kRegs * kThreads;
#pragma unroll
      for (int r = 0; r < kRows; ++r) top[r] = fmaxf(top[r], __ldcg(rows + r * kThreads + t));
    }
    float base[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      base[r] = top[r] == -CUDART_INF_F ? 0.0f : top[r];  // no key, no sink: every weight 0
      l[r] = 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kRegs; ++i) o(i) = 0.0f;
    for (int k = 0; k < pieces; ++k) {
      const float* src = slot(k);
      const float* rows = src + kRegs * kThreads;
      float weight[kRows];
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        weight[r] = fast_exp2(__ldcg(rows + r * kThreads + t) - base[r]);
        l[r] = fmaf(__ldcg(rows + (kRows + r) * kThreads + t), weight[r], l[r]);
      }
      const float4* v = reinterpret_cast<const float4*>(src);
#pragma unroll
      for (int i = 0; i < kRegs / 4; ++i) {
        const float4 x = __ldcg(v + i * kThreads + t);
        o(4 * i) = fmaf(x.x, weight[row_of(4 * i)], o(4 * i));
        o(4 * i + 1) = fmaf(x.y, weight[row_of(4 * i + 1)], o(4 * i + 1));
        o(4 * i + 2) = fmaf(x.z, weight[row_of(4 * i + 2)], o(4 * i + 2));
        o(4 * i + 3) = fmaf(x.w, weight[row_of(4 * i + 3)], o(4 * i + 3));
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (top[r] != -CUDART_INF_F) l[r] += fast_exp2(sink_log2[r] - top[r]);
      lse[r] = l[r] == 0.0f ? -CUDART_INF_F : top[r] + log2f(l[r]);
    }
  }
};

}  // namespace ctxattn
