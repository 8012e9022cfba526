// Portable attention kernel: f16 matrices, NVFP4 KV (e2m1 codes x e4m3 block scales) widened to f16, head dim 256.
#include "cuda/sm80/run.cuh"

CTXATTN_SM80_INSTANTIATE(kFloat16, 256, kNvfp4)
