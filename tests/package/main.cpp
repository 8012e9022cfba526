// A downstream project: finds the installed package, includes the public headers, links the
// library and makes one validating call through the C++ wrapper.
#include <cstdio>

#include <ctxattn/ctxattn.hpp>

int main() {
  ctxattn::Args args;  // defaults describe no problem (zero heads): validation must refuse it
  try {
    ctxattn::validate(args);
  } catch (const ctxattn::Error& e) {
    std::printf("ctxattn %s installed; validation answers: %s\n", ctxattn_version(), e.what());
    return 0;
  }
  return 1;
}
