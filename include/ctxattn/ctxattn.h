/*
 * ctxattn: batched context (prefill) attention over a paged KV cache.
 *
 * The C edge of the library. One call, `ctxattn_batch_context_with_kv_cache`, computes
 *
 *   O[t,h,:] = bmm2_scale * softmax_j(bmm1_scale * Q[t,h,:] . K[b,j,h/G,:]) V[b,j,h/G,:]
 *
 * for every query token t of every request b, over KV tokens that live in fixed-size pages of a
 * pool and are addressed through a block table (see docs/api.md for the full contract).
 *
 * Rules of this edge:
 *   - Every function returns a status code; ctxattn_last_error() gives a thread-local message that
 *     names the offending argument, the expected and the actual value.
 *   - Nothing is printed, nothing exits, no exception crosses this edge.
 *   - Every argument is validated before anything is launched or written.
 *   - Strides are in elements of the tensor's own dtype (bytes for nvfp4 data and scale tensors).
 */
#ifndef CTXATTN_CTXATTN_H_
#define CTXATTN_CTXATTN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define CTXATTN_API __declspec(dllexport)
#else
#define CTXATTN_API __attribute__((visibility("default")))
#endif

#define CTXATTN_VERSION_MAJOR 0
#define CTXATTN_VERSION_MINOR 1
#define CTXATTN_VERSION_PATCH 0

typedef enum ctxattn_status {
  CTXATTN_STATUS_OK = 0,
  /* A value, shape, stride or size is wrong (Python: ValueError). */
  CTXATTN_STATUS_INVALID_ARGUMENT = 1,
  /* A dtype or kind of argument is wrong (Python: TypeError). */
  CTXATTN_STATUS_INVALID_TYPE = 2,
  /* Valid, but not implemented by any available backend (Python: NotImplementedError). */
  CTXATTN_STATUS_UNSUPPORTED = 3,
  /* Metadata contents (block tables, lengths) are inconsistent; only reported by backends that
     can inspect them (the CPU backend always, GPU backends in check mode). */
  CTXATTN_STATUS_INVALID_METADATA = 4,
  /* A CUDA runtime call failed. */
  CTXATTN_STATUS_CUDA_ERROR = 5,
  /* The library was built without the requested device support. */
  CTXATTN_STATUS_NO_DEVICE_SUPPORT = 6,
  CTXATTN_STATUS_INTERNAL_ERROR = 7
} ctxattn_status_t;

typedef enum ctxattn_dtype {
  CTXATTN_DTYPE_FLOAT16 = 0,
  CTXATTN_DTYPE_BFLOAT16 = 1,
  CTXATTN_DTYPE_FLOAT8_E4M3 = 2,
  /* Two e2m1 values per byte plus e4m3 block scales: an output dtype, and a KV cache dtype
     (kv_dtype, with k_cache_sf / v_cache_sf below). */
  CTXATTN_DTYPE_NVFP4 = 3,
  CTXATTN_DTYPE_FLOAT32 = 4,
  CTXATTN_DTYPE_INT32 = 5,
  CTXATTN_DTYPE_UINT32 = 6
} ctxattn_dtype_t;

typedef enum ctxattn_kv_layout {
  /* Each cache tensor is [num_pages, num_kv_heads, page_size, head_dim]. */
  CTXATTN_KV_LAYOUT_HND = 0,
  /* Each cache tensor is [num_pages, page_size, num_kv_heads, head_dim]. */
  CTXATTN_KV_LAYOUT_NHD = 1
} ctxattn_kv_layout_t;

typedef enum ctxattn_device_type {
  CTXATTN_DEVICE_CPU = 0,
  CTXATTN_DEVICE_CUDA = 1
} ctxattn_device_type_t;

typedef enum ctxattn_backend {
  /* The best backend for the device and arguments. */
  CTXATTN_BACKEND_AUTO = 0,
  /* Plain loops; short and readable; the oracle of the tests. */
  CTXATTN_BACKEND_CPU_REFERENCE = 1,
  /* Tiled, multi-threaded, vectorised CPU path. */
  CTXATTN_BACKEND_CPU = 2,
  /* mma.sync kernels, sm80 and newer. */
  CTXATTN_BACKEND_CUDA_PORTABLE = 3,
  /* TMA / WGMMA kernels, sm90a. */
  CTXATTN_BACKEND_CUDA_SM90 = 4
} ctxattn_backend_t;

/*
 * All arguments of one call. Initialise with ctxattn_args_init(), then set the fields.
 * Sizes are counts; strides are in elements (see the per-field notes).
 */
typedef struct ctxattn_args {
  /* sizeof(ctxattn_args_t) as the caller was compiled; set by ctxattn_args_init(). */
  size_t struct_size;

  /* Where every pointer below lives. */
  ctxattn_device_type_t device_type;
  int32_t device_index;
  ctxattn_backend_t backend;

  /* ---- sizes ---- */
  int64_t num_tokens;        /* T: rows of query / out / lse */
  int32_t num_qo_heads;      /* Hq */
  int32_t num_kv_heads;      /* Hkv; Hq must be a multiple of it */
  int32_t head_dim;          /* D */
  int32_t page_size;         /* N: tokens per page, a power of two in [1, 1024] */
  int64_t num_pages;         /* P: pages in the pool; no page index outside [0, P) is ever read */
  int32_t batch_size;        /* B */
  int32_t max_pages_per_seq; /* columns of block_tables */
  int32_t max_q_len;         /* upper bound of every query length */
  int32_t max_kv_len;        /* upper bound of every KV length */

  /* ---- query [T, Hq, D], last-dim stride 1 ---- */
  const void* query;
  ctxattn_dtype_t query_dtype;  /* FLOAT16, BFLOAT16 or FLOAT8_E4M3 */
  int64_t query_stride_token;
  int64_t query_stride_head;

  /* ---- KV cache ----
   * k_cache / v_cache point at element [0,0,0,0] of the K and V tensors (for the one-tensor form
   * [P, 2, ...] that is index 0 and 1 of dim 1; for the shared form v_cache == k_cache).
   * k_strides / v_strides are the strides of dims 0, 1, 2 in the order of kv_layout
   * (HND: page, head, token; NHD: page, token, head); dim 3 has stride 1. */
  const void* k_cache;
  const void* v_cache;
  ctxattn_dtype_t kv_dtype;     /* FLOAT16, BFLOAT16, FLOAT8_E4M3 or NVFP4 (bytes; see k_cache_sf) */
  ctxattn_kv_layout_t kv_layout;
  int64_t k_strides[3];
  int64_t v_strides[3];

  /* ---- metadata ---- */
  const int32_t* block_tables;   /* [B, max_pages_per_seq], or [B, 2, max_pages_per_seq] when
                                    uses_shared_paged_kv_idx = 0 */
  int64_t block_tables_stride;   /* stride between requests, in elements */
  const void* seq_lens;          /* [B], INT32 or UINT32 */
  ctxattn_dtype_t seq_lens_dtype;
  const int32_t* cum_seq_lens_q; /* [B+1] */
  const int32_t* cum_seq_lens_kv;/* [B+1]; accepted, never read (the kernels use seq_lens) */

  /* ---- math ---- */
  float bmm1_scale;              /* used when bmm1_scale_ptr is NULL */
  float bmm2_scale;              /* used when bmm2_scale_ptr is NULL */
  const float* bmm1_scale_ptr;   /* optional one float on the device of the call */
  const float* bmm2_scale_ptr;
  int32_t window_left;           /* -1: no window */
  int32_t causal;                /* 1: bottom-right causal (default), 0: full */
  const float* sinks;            /* optional [Hq] float32, contiguous */

  /* ---- output ----
   * Dense: [T, Hq, D] of out_dtype (FLOAT16, BFLOAT16, FLOAT8_E4M3), last-dim stride 1.
   * NVFP4: uint8 [T, Hq, D/2] (strides in bytes), plus out_scale: e4m3 scale factors in the
   *        128x4 swizzled layout of [round_up(out_scale_start_index + T, 128), round_up(Hq*D/16, 4)]
   *        (out_scale_size_bytes is its capacity). */
  void* out;
  ctxattn_dtype_t out_dtype;
  int64_t out_stride_token;
  int64_t out_stride_head;
  void* out_scale;
  int64_t out_scale_size_bytes;
  int64_t out_scale_start_index;
  float o_sf_scale;
  int32_t o_sf_vec_size;         /* 16 (0 means 16) */

  /* ---- optional LSE [T, Hq] float32, base 2 ---- */
  float* lse;
  int64_t lse_stride_token;
  int64_t lse_stride_head;

  /* ---- execution ---- */
  void* workspace;               /* zeroed once before first use; see ctxattn_workspace_size() */
  size_t workspace_size;         /* bytes */
  void* stream;                  /* cudaStream_t for CUDA; ignored on the CPU */
  int32_t enable_pdl;            /* -1: where supported (sm90+), 0: off, 1: on */
  int32_t num_threads;           /* CPU: 0 = CTXATTN_NUM_THREADS or all cores */
  int32_t check_metadata;        /* -1: CTXATTN_CHECK_METADATA env, 0: off, 1: on */

  /* ---- FlashInfer 0.7.2 keywords (SPEC 8) ---- */

  /* NVFP4 KV cache (kv_dtype = NVFP4). k_cache / v_cache then hold bytes, two e2m1 codes each
   * (even element in the low nibble, bit 3 the sign), D/2 bytes a token row, and k_strides /
   * v_strides count bytes. k_cache_sf / v_cache_sf hold one float8_e4m3fn scale per 16
   * consecutive elements of a token row, [P, Hkv, N, D/16] (HND) or [P, N, Hkv, D/16] (NHD);
   * k_sf_strides / v_sf_strides are the byte strides of dims 0, 1, 2 in kv_layout order, dim 3
   * has stride 1. K scales are linear: block s of token t is element (t, s). V scales are
   * interleaved by 4 tokens in each page x head tile, as FlashInfer's
   * nvfp4_quantize_paged_kv_cache writes them: with S = D/16, block s of token t is the
   * element at tile position f = (t/4)*4*S + 4*s + t%4, i.e. token f/S, block f%S of the V
   * scale tensor. Values are e2m1 * scale (global scales are folded into bmm1 / bmm2_scale by
   * the caller). Needs head_dim % 64 == 0 and page_size % 4 == 0. Ignored for other kv dtypes. */
  const void* k_cache_sf;
  const void* v_cache_sf;
  int64_t k_sf_strides[3];
  int64_t v_sf_strides[3];

  /* 1 (default): block_tables is [B, max_pages_per_seq], one page index for K and V.
   * 0 (TensorRT-LLM): block_tables is [B, 2, max_pages_per_seq]: for request b, the row at
   * b * block_tables_stride holds K page indices (into k_cache and k_cache_sf) and the row at
   * b * block_tables_stride + block_tables_kv_stride V page indices (into v_cache and
   * v_cache_sf). K and V may be one aliased pool (K page 2p, V page 2p + 1). */
  int32_t uses_shared_paged_kv_idx;
  int64_t block_tables_kv_stride;  /* elements; separate form only */

  /* Skip-softmax (BLASST). 0: dense. Any other value f: per request lambda = f / seq_lens[b];
   * the keys are cut into tiles and the packed query rows (query row x the G heads of a KV
   * head, counted from the request's first row) into groups; a tile is skipped for a group when
   * exp(tile_max - running_max) < lambda for every row of the group (scaled logits, running max
   * before the tile, a row with no allowed key in the tile agreeing), except the first tile
   * the group visits. A skipped tile changes nothing. NaN or negative f never skips. */
  float skip_softmax_threshold_scale_factor;
  /* The geometry the CPU backends vote at (GPU backends vote at their kernels' own; see
   * docs/api.md): rows of a group (0: 64), keys of a tile (a multiple of 64; 0: 128) and the
   * order tiles are visited in (CTXATTN_TILE_ORDER_*; 0: from the last tile to the first). */
  int32_t skip_softmax_rows;
  int32_t skip_softmax_keys;
  int32_t skip_softmax_order;

  /* FlashInfer's SM107-only (Rubin) kernel variants: 0 accepted; 1 is INVALID_ARGUMENT, as
     FlashInfer answers on every other GPU. */
  int32_t use_fp16_softmax;
  int32_t uses_spcompress;
} ctxattn_args_t;

/* Values of ctxattn_args_t.skip_softmax_order. */
#define CTXATTN_TILE_ORDER_DEFAULT 0
#define CTXATTN_TILE_ORDER_ASCENDING 1
#define CTXATTN_TILE_ORDER_DESCENDING 2

/* Skip-softmax statistics: after a call with skip_softmax_threshold_scale_factor != 0, bytes
   [CTXATTN_WORKSPACE_SKIP_STATS_OFFSET, +16) of the workspace hold two uint64 (native byte order):
   the (row group, key tile) pairs that had an allowed key, and how many of them were skipped, at
   the backend's geometry (the CUDA backends write them on the call's stream: the sm90 kernels'
   votes; cuda_portable, which runs such calls dense, (0, 0)). CPU calls without skipping set both
   to 0; CUDA calls without skipping leave them as they are. */
#define CTXATTN_WORKSPACE_SKIP_STATS_OFFSET 128

/* Fills *args with defaults: CPU device, AUTO backend, causal, no window, no sinks, scales 1,
   o_sf_vec_size 16, enable_pdl -1, check_metadata -1, uses_shared_paged_kv_idx 1, everything
   else zero / NULL. */
CTXATTN_API void ctxattn_args_init(ctxattn_args_t* args);

/* The call. Validates every argument, then computes (asynchronously on `stream` for CUDA). */
CTXATTN_API ctxattn_status_t ctxattn_batch_context_with_kv_cache(const ctxattn_args_t* args);

/* Bytes of workspace the call with these arguments needs (sizes, device and backend are read;
   pointers are not). */
CTXATTN_API ctxattn_status_t ctxattn_workspace_size(const ctxattn_args_t* args, size_t* bytes);

/* Validates the arguments only (no launch, no write). */
CTXATTN_API ctxattn_status_t ctxattn_validate(const ctxattn_args_t* args);

/* The backend AUTO would pick for these arguments (after validation). */
CTXATTN_API ctxattn_status_t ctxattn_select_backend(const ctxattn_args_t* args,
                                                    ctxattn_backend_t* backend);

/* Thread-local message of the last failing call on this thread ("" after success). */
CTXATTN_API const char* ctxattn_last_error(void);

CTXATTN_API const char* ctxattn_status_string(ctxattn_status_t status);
CTXATTN_API const char* ctxattn_backend_name(ctxattn_backend_t backend);
CTXATTN_API const char* ctxattn_version(void);

/* 1 when the library was built with CUDA support and a CUDA device is visible. */
CTXATTN_API int ctxattn_has_cuda(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CTXATTN_CTXATTN_H_ */
