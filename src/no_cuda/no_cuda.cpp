// The CUDA entry points of a build without CUDA: every GPU request is answered with
// NO_DEVICE_SUPPORT, so a CPU-only library still links and reports why.
#include "core/backends.h"

namespace ctxattn {
namespace {
Status no_cuda() {
  return Status::Error(CTXATTN_STATUS_NO_DEVICE_SUPPORT,
                       "device_type: CUDA requested, but this ctxattn library was built without CUDA "
                       "(rebuild with nvcc available and CTXATTN_CUDA=AUTO or ON)");
}
}  // namespace

bool cuda_built() { return false; }
bool cuda_available() { return false; }
Status cuda_device_arch(int, int*) { return no_cuda(); }
Status cuda_sm_count(int, int*) { return no_cuda(); }
size_t cuda_portable_workspace_bytes(const Params&) { return 0; }
Status cuda_portable_supports(const Params&) { return no_cuda(); }
Status cuda_portable_run(const Params&) { return no_cuda(); }
Status cuda_check_metadata(const Params&) { return no_cuda(); }
size_t cuda_sm90_workspace_bytes(const Params&) { return 0; }
Status cuda_sm90_supports(const Params&) { return no_cuda(); }
Status cuda_sm90_run(const Params&) { return no_cuda(); }
bool cuda_sm90_gathers_pages(const Params&) { return false; }

}  // namespace ctxattn
