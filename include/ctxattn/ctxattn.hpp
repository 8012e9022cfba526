// C++ wrapper over the C API: RAII-free (the library owns no handles), throwing ctxattn::Error.
#pragma once

#include <stdexcept>
#include <string>

#include "ctxattn/ctxattn.h"

namespace ctxattn {

// A failed call: the status code and the message that names the argument.
class Error : public std::runtime_error {
 public:
  Error(ctxattn_status_t status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  ctxattn_status_t status() const noexcept { return status_; }

 private:
  ctxattn_status_t status_;
};

// ctxattn_args_t with its defaults filled in.
struct Args : ctxattn_args_t {
  Args() { ctxattn_args_init(this); }
};

inline void check(ctxattn_status_t status) {
  if (status != CTXATTN_STATUS_OK) throw Error(status, ctxattn_last_error());
}

inline void batch_context_with_kv_cache(const ctxattn_args_t& args) {
  check(ctxattn_batch_context_with_kv_cache(&args));
}

inline void validate(const ctxattn_args_t& args) { check(ctxattn_validate(&args)); }

inline size_t workspace_size(const ctxattn_args_t& args) {
  size_t bytes = 0;
  check(ctxattn_workspace_size(&args, &bytes));
  return bytes;
}

inline ctxattn_backend_t select_backend(const ctxattn_args_t& args) {
  ctxattn_backend_t backend = CTXATTN_BACKEND_AUTO;
  check(ctxattn_select_backend(&args, &backend));
  return backend;
}

}  // namespace ctxattn
