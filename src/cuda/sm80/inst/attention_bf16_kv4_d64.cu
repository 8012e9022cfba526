// Portable attention kernel: bf16 matrices, NVFP4 KV (e2m1 codes x e4m3 block scales) widened to bf16, head dim 64.
#include "cuda/sm80/run.cuh"

CTXATTN_SM80_INSTANTIATE(kBFloat16, 64, kNvfp4)
