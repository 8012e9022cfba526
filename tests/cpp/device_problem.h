// A PagedProblem (paged_cache.h) mirrored in device memory: every buffer copied to the GPU, the
// arguments relocated to the copies, outputs copied back into the host problem. Used by the GPU
// tests (cuda_harness.h) and by the demo (tools/ctxattn_demo.cpp); no test framework here.
#pragma once

#include <cuda_runtime.h>

#include <cstdlib>
#include <map>
#include <string>

#include "ctxattn/ctxattn.h"
#include "paged_cache.h"

namespace ctxattn_test {

// The CUDA backend the GPU tests ask for: $CTXATTN_TEST_BACKEND = cuda_portable (default),
// cuda_sm90 or auto, so the same suite runs against each backend (tests/gpu/run_gpu_suite.sh).
inline ctxattn_backend_t test_backend() {
  const char* env = std::getenv("CTXATTN_TEST_BACKEND");
  const std::string name = env != nullptr ? env : "";
  if (name == "cuda_sm90") return CTXATTN_BACKEND_CUDA_SM90;
  if (name == "auto") return CTXATTN_BACKEND_AUTO;
  return CTXATTN_BACKEND_CUDA_PORTABLE;
}

// Device copies of every buffer of a PagedProblem, kept at the same sizes so the inputs of
// another problem of the same shape can be copied into them (graph replay).
class DeviceProblem {
 public:
  explicit DeviceProblem(PagedProblem& pb, cudaStream_t stream = nullptr) : pb_(pb), stream_(stream) {
    for (const HostBuffer& b : pb.buffers()) {
      void* ptr = nullptr;
      if (cudaMalloc(&ptr, b.bytes > 0 ? b.bytes : 1) != cudaSuccess) {
        ok_ = false;
        return;
      }
      device_[b.name] = ptr;
      sizes_[b.name] = b.bytes;
    }
    ok_ = upload(pb);
    args = pb.relocated_args([&](const HostBuffer& b) { return device_.at(b.name); });
    args.device_type = CTXATTN_DEVICE_CUDA;
    args.device_index = 0;
    args.backend = test_backend();
    args.stream = stream;
    if (ok_) ok_ = fit_workspace();
  }
  DeviceProblem(const DeviceProblem&) = delete;
  DeviceProblem& operator=(const DeviceProblem&) = delete;
  ~DeviceProblem() {
    for (auto& kv : device_) cudaFree(kv.second);
  }

  bool ok() const { return ok_; }

  // Copies every buffer of `other` (same shape as this problem) into the device copies.
  bool upload(PagedProblem& other) {
    for (const HostBuffer& b : other.buffers()) {
      auto it = device_.find(b.name);
      // The workspace may have grown past the host buffer (fit_workspace); its head is refreshed.
      const bool fits = std::string(b.name) == "workspace" ? sizes_.at(b.name) >= b.bytes : sizes_.at(b.name) == b.bytes;
      if (it == device_.end() || !fits) return false;
      // Stream-ordered, as an engine refreshes its captured buffers: a copy must not land while
      // an earlier launch on the stream still reads or writes the buffer.
      if (b.bytes > 0 &&
          cudaMemcpyAsync(it->second, b.data, b.bytes, cudaMemcpyHostToDevice, stream_) != cudaSuccess) {
        return false;
      }
    }
    return true;
  }

  // Grows the device workspace to what the call needs (split-KV partials for calls over long
  // KV), zeroed as the API asks; a call the library refuses keeps the host-sized buffer.
  bool fit_workspace() {
    size_t need = 0;
    if (ctxattn_workspace_size(&args, &need) != CTXATTN_STATUS_OK || need <= sizes_.at("workspace")) return true;
    void* ptr = nullptr;
    if (cudaMalloc(&ptr, need) != cudaSuccess || cudaMemset(ptr, 0, need) != cudaSuccess) return false;
    cudaFree(device_.at("workspace"));
    device_["workspace"] = ptr;
    sizes_["workspace"] = need;
    args.workspace = ptr;
    args.workspace_size = need;
    return true;
  }

  // Copies out, out_scale and lse back into the host problem.
  bool download() {
    if (cudaDeviceSynchronize() != cudaSuccess) return false;
    for (const HostBuffer& b : pb_.buffers()) {
      const std::string name = b.name;
      if (name != "out" && name != "out_scale" && name != "lse") continue;
      if (b.bytes > 0 && cudaMemcpy(b.data, device_.at(name), b.bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
        return false;
      }
    }
    return true;
  }

  ctxattn_status_t run() { return ctxattn_batch_context_with_kv_cache(&args); }

  void* device(const std::string& name) const { return device_.at(name); }

  ctxattn_args_t args;

 private:
  PagedProblem& pb_;
  cudaStream_t stream_;
  std::map<std::string, void*> device_;
  std::map<std::string, size_t> sizes_;
  bool ok_ = true;
};

}  // namespace ctxattn_test
