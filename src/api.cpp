// The extern "C" edge: validation, backend choice and the run, with every failure turned into a
// status code and a thread-local message. No exception crosses this file.
#include <exception>
#include <new>
#include <string>

#include "core/backends.h"
#include "core/dispatch.h"
#include "core/validate.h"
#include "ctxattn/ctxattn.h"

namespace {

thread_local std::string g_last_error;

ctxattn_status_t finish(const ctxattn::Status& s) {
  g_last_error = s.message;
  return s.code;
}

// Runs `body` (returning a Status) behind the C edge: exceptions become INTERNAL_ERROR.
template <typename Body>
ctxattn_status_t guarded(Body&& body) {
  try {
    return finish(body());
  } catch (const std::bad_alloc&) {
    return finish(ctxattn::Status::Error(CTXATTN_STATUS_INTERNAL_ERROR, "out of host memory"));
  } catch (const std::exception& e) {
    return finish(ctxattn::Status::Error(CTXATTN_STATUS_INTERNAL_ERROR, std::string("internal error: ") + e.what()));
  } catch (...) {
    return finish(ctxattn::Status::Error(CTXATTN_STATUS_INTERNAL_ERROR, "internal error: unknown exception"));
  }
}

// Validation and backend choice shared by every entry point.
ctxattn::Status prepare(const ctxattn_args_t* args, ctxattn::Params* p, ctxattn_backend_t* backend) {
  CTXATTN_RETURN_IF_ERROR(ctxattn::validate_args(args, p));
  return ctxattn::select_backend(*p, args->device_type, args->backend, backend);
}

}  // namespace

extern "C" {

void ctxattn_args_init(ctxattn_args_t* args) {
  if (args == nullptr) return;
  *args = ctxattn_args_t{};
  args->struct_size = sizeof(ctxattn_args_t);
  args->device_type = CTXATTN_DEVICE_CPU;
  args->backend = CTXATTN_BACKEND_AUTO;
  args->query_dtype = CTXATTN_DTYPE_BFLOAT16;
  args->kv_dtype = CTXATTN_DTYPE_BFLOAT16;
  args->out_dtype = CTXATTN_DTYPE_BFLOAT16;
  args->kv_layout = CTXATTN_KV_LAYOUT_HND;
  args->seq_lens_dtype = CTXATTN_DTYPE_INT32;
  args->bmm1_scale = 1.0f;
  args->bmm2_scale = 1.0f;
  args->window_left = -1;
  args->causal = 1;
  args->o_sf_scale = 1.0f;
  args->o_sf_vec_size = 16;
  args->enable_pdl = -1;
  args->check_metadata = -1;
  args->uses_shared_paged_kv_idx = 1;
}

ctxattn_status_t ctxattn_validate(const ctxattn_args_t* args) {
  return guarded([&] {
    ctxattn::Params p;
    ctxattn_backend_t backend;
    CTXATTN_RETURN_IF_ERROR(prepare(args, &p, &backend));
    return ctxattn::validate_workspace(p, backend);
  });
}

ctxattn_status_t ctxattn_batch_context_with_kv_cache(const ctxattn_args_t* args) {
  return guarded([&] {
    ctxattn::Params p;
    ctxattn_backend_t backend;
    CTXATTN_RETURN_IF_ERROR(prepare(args, &p, &backend));
    CTXATTN_RETURN_IF_ERROR(ctxattn::validate_workspace(p, backend));
    if (p.num_tokens == 0 || p.batch_size == 0) return ctxattn::Status::Ok();  // nothing to write
    return ctxattn::run_backend(p, backend);
  });
}

ctxattn_status_t ctxattn_workspace_size(const ctxattn_args_t* args, size_t* bytes) {
  return guarded([&] {
    if (bytes == nullptr) {
      return ctxattn::Status::Error(CTXATTN_STATUS_INVALID_ARGUMENT, "bytes: expected a pointer, got NULL");
    }
    ctxattn::Params p;
    ctxattn_backend_t backend;
    CTXATTN_RETURN_IF_ERROR(prepare(args, &p, &backend));
    *bytes = ctxattn::required_workspace_bytes(p, backend);
    return ctxattn::Status::Ok();
  });
}

ctxattn_status_t ctxattn_select_backend(const ctxattn_args_t* args, ctxattn_backend_t* backend) {
  return guarded([&] {
    if (backend == nullptr) {
      return ctxattn::Status::Error(CTXATTN_STATUS_INVALID_ARGUMENT, "backend: expected a pointer, got NULL");
    }
    ctxattn::Params p;
    return prepare(args, &p, backend);
  });
}

const char* ctxattn_last_error(void) { return g_last_error.c_str(); }

const char* ctxattn_status_string(ctxattn_status_t status) {
  switch (status) {
    case CTXATTN_STATUS_OK: return "ok";
    case CTXATTN_STATUS_INVALID_ARGUMENT: return "invalid argument";
    case CTXATTN_STATUS_INVALID_TYPE: return "invalid type";
    case CTXATTN_STATUS_UNSUPPORTED: return "unsupported";
    case CTXATTN_STATUS_INVALID_METADATA: return "invalid metadata";
    case CTXATTN_STATUS_CUDA_ERROR: return "CUDA error";
    case CTXATTN_STATUS_NO_DEVICE_SUPPORT: return "no device support";
    case CTXATTN_STATUS_INTERNAL_ERROR: return "internal error";
  }
  return "unknown status";
}

const char* ctxattn_backend_name(ctxattn_backend_t backend) {
  switch (backend) {
    case CTXATTN_BACKEND_AUTO: return "auto";
    case CTXATTN_BACKEND_CPU_REFERENCE: return "cpu-reference";
    case CTXATTN_BACKEND_CPU: return "cpu";
    case CTXATTN_BACKEND_CUDA_PORTABLE: return "cuda-portable";
    case CTXATTN_BACKEND_CUDA_SM90: return "cuda-sm90";
  }
  return "unknown";
}

const char* ctxattn_version(void) { return "0.1.0"; }

int ctxattn_has_cuda(void) { return ctxattn::cuda_available() ? 1 : 0; }

}  // extern "C"
