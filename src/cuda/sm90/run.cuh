// Host side of one instantiation: grid from host integers only (max_q_len, batch_size, heads),
// the shared-memory opt-in, and the launch. Included by the files under inst/ alone.
#pragma once

#include <cstdlib>

#include "core/backends.h"
#include "cuda/common/launch.cuh"
#include "cuda/common/split_policy.h"
#include "cuda/sm90/kernel.cuh"
#include "cuda/sm90/launch.h"

namespace ctxattn {
namespace sm90 {

template <Elem kElem>
struct ElemType;
template <>
struct ElemType<Elem::kFloat16> {
  using type = __half;
};
template <>
struct ElemType<Elem::kBFloat16> {
  using type = __nv_bfloat16;
};
template <>
struct ElemType<Elem::kE4m3> {
  using type = __nv_fp8_e4m3;
};

// The kernel of a call: split code or not, the scheduler's walk or the static one (launch_attention
// says which). <..., Tr::kSchedulerWalk>: traits without the scheduler never take the dynamic arms,
// and name the static kernels there, so their scheduler forms are not compiled; <Tr::kSplitCode,
// ...> likewise for traits without the split code (which never split).
// Calls with a non-zero skip factor run kernels compiled with the vote (kSkip), so that dense calls
// run none of it; to keep the library lean those are compiled in the split-code forms only (which
// run unsplit items as well, at the 2-4% the split branch costs short requests).
// The column-split kernel at D = 512 has one form of each, the split code on the static walk (it
// runs unsplit items too).
template <typename T, class Tr, bool kSkip>
auto* kernel_of(bool split, bool dynamic) {
  if constexpr (Tr::kColSplit) {
    return attention_kernel<T, Tr, true, false, kSkip>;
  } else if constexpr (kSkip) {
    return dynamic ? attention_kernel<T, Tr, Tr::kSplitCode, Tr::kSchedulerWalk, true>
                   : attention_kernel<T, Tr, Tr::kSplitCode, false, true>;
  } else {
    return split && dynamic ? attention_kernel<T, Tr, Tr::kSplitCode, Tr::kSchedulerWalk, false>
           : split          ? attention_kernel<T, Tr, Tr::kSplitCode, false, false>
           : dynamic        ? attention_kernel<T, Tr, false, Tr::kSchedulerWalk, false>
                            : attention_kernel<T, Tr, false, false, false>;
  }
}

// stripes: the short form of a two-form kernel (traits.cuh kTake) in a call that also runs the
// long form. Its requests have fewer than kLongTileMinKv keys, which no request splits with, so
// it plans as if the call's keys stopped there (no split) and walks its items statically, one
// CTA an SM taking them striped: the long requests' items, empty here, cost a CTA a few
// metadata reads each, and no CTA waits for a long request.
template <typename T, class Tr>
Status launch_attention(const Params& p, const LaunchEnv& env, const TmaMaps& maps, bool stripes = false) {
  static_assert(kLongTileMinKv <= kSplitMinKeys, "the short form's requests never split");
  Params planned = p;
  if (stripes && planned.max_kv_len >= kLongTileMinKv) planned.max_kv_len = kLongTileMinKv - 1;
  const SplitPlan plan = make_split_plan(planned, env.sm_count, Tr::kBlockM, Tr::kSplitGroups,
                                         Tr::kSplitGroupFloats, kWorkspaceHeaderBytes);
  // Four kernels: calls where no request can split run one compiled without the split code
  // (measured 2-4% faster on short requests on the H200: a shorter prologue and epilogue), on the
  // scheduler's walk (scheduler.cuh) over keys longer than kPersistentMaxKv where the traits take
  // it, on the static walk otherwise. Calls where a request may split (8192 keys or more with few
  // KV heads: long_8k, d64 and d256 are such calls) run the kernel with the split code: on the
  // scheduler's walk when one request of max_q_len rows alone fills more than a wave, so that its
  // items cannot split; statically otherwise, one item a CTA. On the H200 the scheduler took
  // long_8k 856 -> 835 us and d64 1284 -> 1211 at page 64 but chunk_long_tp8_batch (split items)
  // 1044 -> 1125 (docs/perf.md, v15); at page 16 it had measured slower on d64 (1312 ->
  // 1352, with two consumer warpgroups), but with the D = 64 kernels' third it takes d64_sinks_swa
  // 186 -> 159 us and fp8.d64 1023 -> 987 there ("sm90 v27"). The walk gives each item the same
  // arithmetic: the choice moves no result.
  // max_q_len and max_kv_len are the caller's bounds; every input of the choice is a host integer
  // (graph-safe).
  static unsigned long long smem_ready[8] = {};  // devices whose smem limit was raised, per kernel form
  const bool split = plan.shape.target != 0;
  const bool unsplit_walk = !split || plan.slots > plan.shape.target;
  const bool dynamic = Tr::kSchedulerWalk && p.max_kv_len > kPersistentMaxKv && unsplit_walk && !stripes;
  const bool skip = p.skip_softmax_factor != 0.0f;
  const int64_t num_tiles = static_cast<int64_t>(plan.slots) * p.batch_size;
  auto* kernel = skip ? kernel_of<T, Tr, true>(split, dynamic) : kernel_of<T, Tr, false>(split, dynamic);
  const int which = (skip ? 4 : 0) + (split ? 2 : 0) + (dynamic ? 1 : 0);
  CTXATTN_RETURN_IF_ERROR(allow_dynamic_smem(kernel, Tr::kSmemBytes, env.device, &smem_ready[which]));
  // The scheduler's CTAs are persistent, one an SM (one fits: shared memory), drawing items from
  // its counter. The static walk runs one CTA a work item, the hardware handing items to SMs as
  // they free up, except over keys of at most kPersistentMaxKv: there one CTA an SM walks its
  // items striped, with the next item's Q (and K/V, from the producer) loading under the current
  // one (short_256 -10%, batch_1k -6% on the H200, docs/perf.md, v5).
  int64_t ctas = num_tiles;
  const int64_t wave = env.sm_count;
  if ((dynamic || stripes || p.max_kv_len <= kPersistentMaxKv) && wave > 0 && ctas > wave) {
    ctas = wave;
  }
  // CTXATTN_SM90_GRID_CTAS=N caps the grid at N CTAs (tests and tuning).
  if (const char* cap = std::getenv("CTXATTN_SM90_GRID_CTAS")) {
    const long n = std::strtol(cap, nullptr, 10);
    if (n > 0 && n < ctas) ctas = n;
  }
  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(ctas), 1, 1);
  shape.block = dim3(Tr::kThreads, 1, 1);
  shape.smem_bytes = Tr::kSmemBytes;
  shape.stream = env.stream;
  shape.pdl = env.pdl;
  return launch_kernel(kernel, shape, "sm90 attention kernel launch", p, maps, plan,
                       static_cast<int>(num_tiles));
}

// e4m3 Q/K/V: the kernel with a two-term P for nvfp4 output, one term otherwise (mma.cuh; at head
// dim 512 one term only). The
// one-term kernel at D = 128 runs as two forms (traits.cuh kTake): the short form over the whole
// call, then, where the call may hold requests of kLongTileMinKv keys or more, the long form
// (192-key tiles, TMA boxes of at most 64 rows: env.long_maps). Each computes its own requests
// and skips the other's; max_kv_len bounds every request's keys (cuda/common/request.cuh), so a
// call below the threshold launches the short form alone.
template <Elem kElem, int kHeadDim, int kKv>
Status run_attention(const Params& p, const LaunchEnv& env, const TmaMaps& maps) {
  using T = typename ElemType<kElem>::type;
  if constexpr (kElem == Elem::kE4m3) {
    if (p.out_dtype == CTXATTN_DTYPE_NVFP4) {
      // (Head dim 512 has no two-term kernel: hopper.cpp fp8_mma sends nvfp4 output to the widened one.)
      if constexpr (kHeadDim == 512) {
        return Status::Error(CTXATTN_STATUS_UNSUPPORTED,
                             "out: nvfp4 output at head dim 512 runs on the e4m3-cache kernel");
      } else {
        return launch_attention<T, Traits<kHeadDim, kKv, true, true>>(p, env, maps);
      }
    }
    if constexpr (kHeadDim == 128) {
      const bool long_keys = p.max_kv_len >= kLongTileMinKv;
      CTXATTN_RETURN_IF_ERROR(
          (launch_attention<T, Traits<kHeadDim, kKv, true, false, kTakeShort>>(p, env, maps, long_keys)));
      if (!long_keys) return Status::Ok();
      return launch_attention<T, Traits<kHeadDim, kKv, true, false, kTakeLong>>(p, env, *env.long_maps);
    } else {
      return launch_attention<T, Traits<kHeadDim, kKv, true, false>>(p, env, maps);
    }
  } else {
    return launch_attention<T, Traits<kHeadDim, kKv>>(p, env, maps);
  }
}

}  // namespace sm90
}  // namespace ctxattn

// One explicit instantiation; the files under inst/ hold nothing else.
#define CTXATTN_SM90_INSTANTIATE(elem, head_dim, kv)                                                   \
  namespace ctxattn {                                                                                   \
  namespace sm90 {                                                                                      \
  template Status run_attention<Elem::elem, head_dim, kv>(const Params&, const LaunchEnv&,              \
                                                          const TmaMaps&);                             \
  }                                                                                                     \
  }
