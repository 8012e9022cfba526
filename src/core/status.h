// Errors as values inside the library; the C edge turns them into a status code plus the
// thread-local message.
#pragma once

#include <string>
#include <utility>

#include "ctxattn/ctxattn.h"

namespace ctxattn {

struct Status {
  ctxattn_status_t code = CTXATTN_STATUS_OK;
  std::string message;

  bool ok() const { return code == CTXATTN_STATUS_OK; }
  static Status Ok() { return {}; }
  static Status Error(ctxattn_status_t c, std::string m) { return {c, std::move(m)}; }
};

// Propagates a non-OK Status out of the enclosing function.
#define CTXATTN_RETURN_IF_ERROR(expr)          \
  do {                                         \
    ::ctxattn::Status ctxattn_status_ = (expr); \
    if (!ctxattn_status_.ok()) return ctxattn_status_; \
  } while (0)

}  // namespace ctxattn
