// GPU test harness for the CUDA backends: a PagedProblem (paged_cache.h) mirrored in device
// memory, the call on the GPU, outputs copied back into the host problem so the shared
// comparison helpers read them, and the comparisons with SPEC section 6 tolerances against the
// CPU reference backend run on a twin host problem. Tests skip when no GPU is present.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ctxattn/ctxattn.h"
#include "dense_reference.h"
#include "device_problem.h"
#include "paged_cache.h"

namespace ctxattn_test {

inline bool gpu_present() {
  static const bool present = ctxattn_has_cuda() != 0;
  return present;
}

#define CTXATTN_REQUIRE_GPU() \
  if (!::ctxattn_test::gpu_present()) GTEST_SKIP() << "no CUDA GPU on this machine"

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call


// Runs the CPU reference backend on a host problem.
inline ctxattn_status_t run_cpu_reference(PagedProblem& pb) {
  pb.poison_outputs();
  ctxattn_args_t a = pb.args;
  a.device_type = CTXATTN_DEVICE_CPU;
  a.backend = CTXATTN_BACKEND_CPU_REFERENCE;
  return ctxattn_batch_context_with_kv_cache(&a);
}

// SPEC section 6 tolerances for the problem's dtypes (rtol, atol).
inline void tolerances(const ProblemSpec& s, double* rtol, double* atol) {
  // An NVFP4 cache counts as fp8 inputs (SPEC 8.1).
  const bool fp8_in = s.q_dtype == CTXATTN_DTYPE_FLOAT8_E4M3 || s.kv_dtype == CTXATTN_DTYPE_FLOAT8_E4M3 ||
                      s.kv_dtype == CTXATTN_DTYPE_NVFP4;
  if (s.out_dtype == CTXATTN_DTYPE_FLOAT8_E4M3) {
    *rtol = 5e-2, *atol = 7e-2;
  } else if (fp8_in) {
    *rtol = 4e-2, *atol = 6e-2;
  } else {
    *rtol = 1e-2, *atol = 1e-2;
  }
}

// The SPEC's fp8-output tolerance is against the exact (float64) result. The CPU reference's
// e4m3 output is that result rounded to the grid, up to half a grid step away, so a comparison
// with it widens the tolerance by half the step above |w| (the larger of w's two gaps): an output
// that rounded to the other neighbour of a value near a midpoint is one code from the reference.
inline double e4m3_half_step(double w) {
  const double a = std::fabs(w);
  if (a < 0x1p-6) return 0x1p-10;  // subnormals: steps of 2^-9
  return 0.5 * std::ldexp(1.0, std::ilogb(a) - 3);
}

// Position of an e2m1 code on the signed grid (-7 .. 7): codes one step apart differ by 1.
inline int e2m1_position(uint8_t code) { return (code & 8) ? -static_cast<int>(code & 7) : static_cast<int>(code & 7); }

// Compares the outputs of `got` (GPU, downloaded) with `want` (CPU reference) over the rows the
// requests own (or, given `row_checked`, over those of them it accepts); returns an empty string
// when everything is within tolerance, else a description.
inline std::string compare_outputs(const PagedProblem& got, const PagedProblem& want,
                                   const std::function<bool(int64_t)>& row_checked = nullptr) {
  const ProblemSpec& s = got.spec();
  const int64_t rows = got.q_begin(got.batch_size());
  auto skip = [&](int64_t t) { return row_checked && !row_checked(t); };
  const int32_t Hq = s.num_qo_heads, D = s.head_dim;
  std::ostringstream err;
  int64_t bad = 0;
  auto note = [&](const std::string& what) {
    if (bad++ < 5) err << what << "\n";
  };
  if (s.out_dtype == CTXATTN_DTYPE_NVFP4) {
    double sq = 0.0;
    int64_t n = 0;
    for (int64_t t = 0; t < rows; ++t) {
      if (skip(t)) continue;
      for (int32_t h = 0; h < Hq; ++h) {
        for (int32_t k = 0; k < D / 16; ++k) {
          const float sg = ctxattn::e4m3_to_float(nvfp4_scale(got, t, h, k));
          const float sw = ctxattn::e4m3_to_float(nvfp4_scale(want, t, h, k));
          if (!(std::fabs(sg - sw) <= 0.2 * std::max(1.0f, std::fabs(sw)))) {
            std::ostringstream m;
            m << "scale t=" << t << " h=" << h << " block=" << k << " got " << sg << " want " << sw;
            note(m.str());
          }
        }
        for (int32_t d = 0; d < D; ++d) {
          const uint8_t sfg = nvfp4_scale(got, t, h, d / 16), sfw = nvfp4_scale(want, t, h, d / 16);
          const int step = e2m1_position(nvfp4_code(got, t, h, d)) - e2m1_position(nvfp4_code(want, t, h, d));
          sq += static_cast<double>(step) * step;
          ++n;
          // Codes compare under one scale. When the two sides rounded amax/6 to neighbouring e4m3
          // scales (a tiny subnormal scale moves by up to 50% in one step), compare the
          // dequantized values instead, within the widest grid step (2) of the larger scale.
          bool ok = std::abs(step) <= 1;
          if (sfg != sfw) {
            const double vg = e2m1_value(nvfp4_code(got, t, h, d)) * ctxattn::e4m3_to_float(sfg);
            const double vw = e2m1_value(nvfp4_code(want, t, h, d)) * ctxattn::e4m3_to_float(sfw);
            const double widest = 2.0 * std::max(ctxattn::e4m3_to_float(sfg), ctxattn::e4m3_to_float(sfw));
            ok = std::fabs(vg - vw) <= widest;
          }
          if (!ok) {
            std::ostringstream m;
            m << "code t=" << t << " h=" << h << " d=" << d << " differs by " << step << " steps (scale codes "
              << int(sfg) << " / " << int(sfw) << ")";
            note(m.str());
          }
        }
      }
    }
    if (n > 0 && std::sqrt(sq / n) >= 0.3) note("nvfp4 RMS code error " + std::to_string(std::sqrt(sq / n)));
  } else {
    double rtol = 0, atol = 0;
    tolerances(s, &rtol, &atol);
    const bool e4m3_out = s.out_dtype == CTXATTN_DTYPE_FLOAT8_E4M3;
    for (int64_t t = 0; t < rows; ++t) {
      if (skip(t)) continue;
      for (int32_t h = 0; h < Hq; ++h) {
        for (int32_t d = 0; d < D; ++d) {
          const double g = got.out_value(t, h, d);
          const double w = want.out_value(t, h, d);
          const double slack = e4m3_out ? e4m3_half_step(w) : 0.0;
          if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w) + slack)) {
            std::ostringstream m;
            m << "out t=" << t << " h=" << h << " d=" << d << " got " << g << " want " << w;
            note(m.str());
          }
        }
      }
    }
  }
  if (s.with_lse) {
    for (int64_t t = 0; t < rows; ++t) {
      if (skip(t)) continue;
      for (int32_t h = 0; h < Hq; ++h) {
        const double g = got.lse_value(t, h);
        const double w = want.lse_value(t, h);
        const bool same_inf = std::isinf(g) && std::isinf(w) && (g > 0) == (w > 0);
        if (!same_inf && !(std::fabs(g - w) <= 1e-3 + 1e-3 * std::fabs(w))) {
          std::ostringstream m;
          m << "lse t=" << t << " h=" << h << " got " << g << " want " << w;
          note(m.str());
        }
      }
    }
  }
  if (bad > 0) err << bad << " mismatches in total";
  return err.str();
}

// Bytes of out / out_scale / lse that no request row owns must keep the poison (0xFF; NaN for lse).
inline std::string untouched_outside_rows(const PagedProblem& pb) {
  const ProblemSpec& s = pb.spec();
  const int64_t rows = pb.q_begin(pb.batch_size());
  const bool nvfp4 = s.out_dtype == CTXATTN_DTYPE_NVFP4;
  const int64_t esize = static_cast<int64_t>(dtype_size(s.out_dtype));
  const int64_t row_bytes = (nvfp4 ? s.head_dim / 2 : s.head_dim) * esize;
  std::vector<bool> owned(pb.out.size(), false);
  for (int64_t t = 0; t < rows; ++t) {
    for (int32_t h = 0; h < s.num_qo_heads; ++h) {
      const int64_t first = pb.out_offset(t, h, 0) * esize;
      for (int64_t i = 0; i < row_bytes; ++i) owned[first + i] = true;
    }
  }
  for (size_t i = 0; i < pb.out.size(); ++i) {
    if (!owned[i] && pb.out[i] != 0xFF) return "out byte " + std::to_string(i) + " outside every row was written";
  }
  if (s.with_lse) {
    for (int64_t t = rows; t < pb.num_tokens(); ++t) {
      for (int32_t h = 0; h < s.num_qo_heads; ++h) {
        if (!std::isnan(pb.lse_value(t, h))) return "lse of row " + std::to_string(t) + " was written";
      }
    }
  }
  return "";
}

// Captures one call of `dev` (on the stream it was made with) into an instantiated graph; an
// empty string on success, else what failed.
inline std::string capture_call(DeviceProblem& dev, cudaStream_t stream, cudaGraph_t* graph, cudaGraphExec_t* exec) {
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return "begin capture failed";
  const ctxattn_status_t st = dev.run();
  if (cudaStreamEndCapture(stream, graph) != cudaSuccess) return "end capture failed";
  if (st != CTXATTN_STATUS_OK) return std::string("captured call failed: ") + ctxattn_last_error();
  if (cudaGraphInstantiate(exec, *graph, 0) != cudaSuccess) return "graph instantiation failed";
  return "";
}

// Replays `exec` (a capture of `dev`, whose host problem is `captured`) with the inputs of `spec`
// written into the captured device buffers, and compares the outputs with the CPU reference;
// an empty string when they match. `spec` must give the captured buffer sizes.
inline std::string replay_differences(DeviceProblem& dev, PagedProblem& captured, cudaGraphExec_t exec,
                                      cudaStream_t stream, const ProblemSpec& spec) {
  PagedProblem want(spec);
  if (run_cpu_reference(want) != CTXATTN_STATUS_OK) return std::string("reference: ") + ctxattn_last_error();
  PagedProblem got(spec);
  got.poison_outputs();
  if (!dev.upload(got)) return "the replayed problem must have the captured buffer sizes";
  if (cudaGraphLaunch(exec, stream) != cudaSuccess || cudaStreamSynchronize(stream) != cudaSuccess) {
    return "graph launch failed";
  }
  // Read back through the captured problem object (same device buffers), then compare as `spec`.
  if (!dev.download()) return "download failed";
  got.out = captured.out;
  got.lse = captured.lse;
  return compare_outputs(got, want);
}

// Runs the call `runs` times, PDL off and on in turn, and compares out and lse bitwise with the
// first run's; an empty string when every rerun matched.
inline std::string rerun_differences(DeviceProblem& dev, PagedProblem& pb, int runs) {
  if (dev.run() != CTXATTN_STATUS_OK) return std::string("first run: ") + ctxattn_last_error();
  if (!dev.download()) return "download failed";
  const std::vector<uint8_t> out0 = pb.out;
  const std::vector<float> lse0 = pb.lse;
  for (int i = 1; i < runs; ++i) {
    dev.args.enable_pdl = i % 2;
    if (dev.run() != CTXATTN_STATUS_OK) return "rerun " + std::to_string(i) + ": " + ctxattn_last_error();
    if (!dev.download()) return "download failed";
    if (std::memcmp(out0.data(), pb.out.data(), out0.size()) != 0) return "rerun " + std::to_string(i) + ": out differs";
    if (std::memcmp(lse0.data(), pb.lse.data(), lse0.size() * sizeof(float)) != 0) {
      return "rerun " + std::to_string(i) + ": lse differs";
    }
  }
  return "";
}


// Query rows of every magnitude: row (t, h) of spec's problem is multiplied by 2^e(t, h) (exact),
// e from -60 to `top` in steps of 20, mixed in every 16 packed rows; row (5, 1) also holds an
// infinity and row (90, 0) a NaN (spec needs more than 90 query rows and 2 query heads). Runs it
// on `backend` (forced) and on the CPU reference and returns what differs: finite rows beyond the
// SPEC tolerance (with how many rows of each magnitude differ), and in the two non-finite rows
// anything but NaN where the reference has NaN and agreement elsewhere.
inline std::string query_magnitude_differences(const ProblemSpec& spec, ctxattn_backend_t backend, int top) {
  const int classes = (top + 60) / 20 + 1;
  auto magnitude = [&](int64_t t, int32_t h) { return (static_cast<int>((t * 2 + h * 3) % classes)) * 20 - 60; };
  PagedProblem want(spec), got(spec);
  const int64_t tokens = want.q_begin(want.batch_size());
  const int32_t Hq = spec.num_qo_heads, D = spec.head_dim;
  for (PagedProblem* pb : {&want, &got}) {
    for (int64_t t = 0; t < tokens; ++t) {
      for (int32_t h = 0; h < Hq; ++h) {
        for (int32_t d = 0; d < D; ++d) {
          float x = std::ldexp(pb->q(t, h, d), magnitude(t, h));
          if (t == 5 && h == 1 && d == 3) x = INFINITY;
          if (t == 90 && h == 0 && d == 7) x = NAN;
          put_value(pb->query.data(), spec.q_dtype, t * pb->args.query_stride_token + h * pb->args.query_stride_head + d, x);
        }
      }
    }
  }
  if (run_cpu_reference(want) != CTXATTN_STATUS_OK) return std::string("reference: ") + ctxattn_last_error();
  got.poison_outputs();
  DeviceProblem dev(got);
  if (!dev.ok()) return "device problem not set up";
  dev.args.backend = backend;
  if (dev.run() != CTXATTN_STATUS_OK) return std::string("run: ") + ctxattn_last_error();
  if (!dev.download()) return "download failed";
  auto finite_row = [](int64_t t) { return t != 5 && t != 90; };
  std::string diff = compare_outputs(got, want, finite_row);
  double rtol = 0, atol = 0;
  tolerances(spec, &rtol, &atol);
  std::map<int, int> bad_rows;  // magnitude -> rows that differ
  std::ostringstream err;
  for (int64_t t = 0; t < tokens; ++t) {
    for (int32_t h = 0; h < Hq; ++h) {
      for (int32_t d = 0; d < D; ++d) {
        const float w = want.out_value(t, h, d), g = got.out_value(t, h, d);
        const bool ok = std::isnan(w) ? std::isnan(g) : std::fabs(g - w) <= atol + rtol * std::fabs(w);
        if (!ok) {
          if (!finite_row(t)) err << "non-finite query row t=" << t << " h=" << h << " d=" << d << " got " << g << " want " << w << "\n";
          ++bad_rows[magnitude(t, h)];
          break;
        }
      }
    }
  }
  for (const auto& [e, n] : bad_rows) err << n << " rows of magnitude 2^" << e << " differ\n";
  return diff + err.str();
}

}  // namespace ctxattn_test
