// Device-side dtype conversion for the CUDA kernels: packing fp32 pairs into the 16-bit matrix
// type, and widening float8_e4m3fn into it. e4m3 values are exact in fp16 and bf16, so widening
// loses nothing; the bit-level path below is the same on every architecture (sm80 has no e4m3
// conversion instruction), so what the tests check on one GPU holds on all.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include <type_traits>

namespace ctxattn {

template <typename T>
__device__ __forceinline__ uint32_t pack_float2(float lo, float hi);

template <>
__device__ __forceinline__ uint32_t pack_float2<__half>(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

template <>
__device__ __forceinline__ uint32_t pack_float2<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// Two e4m3 bytes (bits 0-7 and 16-23 of `x`; other bits ignored) to two fp16 values.
// e4m3 is 1-4-3 with bias 7, fp16 is 1-5-10 with bias 15: moving exponent and mantissa up by 7
// bits gives the value times 2^-8 (subnormals included), which one exact multiply restores.
// The one NaN code (S.1111.111) would land on 480, so it is patched to a NaN first.
__device__ __forceinline__ uint32_t e4m3x2_to_half2_bits(uint32_t x) {
  const uint32_t magnitude = x & 0x007f007fu;
  const uint32_t sign = (x & 0x00800080u) << 8;
  uint32_t h = (magnitude << 7) | sign;
  const uint32_t nan_lanes = __vcmpeq2(magnitude, 0x007f007fu);
  h |= nan_lanes & 0x7e007e00u;
  const __half2 scaled = __hmul2(*reinterpret_cast<const __half2*>(&h), __half2(__half(256.0f), __half(256.0f)));
  return *reinterpret_cast<const uint32_t*>(&scaled);
}

// Four e4m3 values (byte 0 is element 0) to four values of T, as two packed pairs:
// lo = elements (0, 1), hi = elements (2, 3).
template <typename T>
__device__ __forceinline__ void e4m3x4_to(uint32_t x, uint32_t& lo, uint32_t& hi);

template <>
__device__ __forceinline__ void e4m3x4_to<__half>(uint32_t x, uint32_t& lo, uint32_t& hi) {
  // Bytes (0, 2) and (1, 3) line up with the 16-bit lanes directly; a byte permute restores order.
  const uint32_t even = e4m3x2_to_half2_bits(x);       // elements 0, 2
  const uint32_t odd = e4m3x2_to_half2_bits(x >> 8);   // elements 1, 3
  lo = __byte_perm(even, odd, 0x5410);
  hi = __byte_perm(even, odd, 0x7632);
}

template <>
__device__ __forceinline__ void e4m3x4_to<__nv_bfloat16>(uint32_t x, uint32_t& lo, uint32_t& hi) {
  uint32_t h01 = 0;
  uint32_t h23 = 0;
  e4m3x4_to<__half>(x, h01, h23);
  // fp16 -> fp32 -> bf16 is exact for every e4m3 value.
  const float2 f01 = __half22float2(*reinterpret_cast<const __half2*>(&h01));
  const float2 f23 = __half22float2(*reinterpret_cast<const __half2*>(&h23));
  lo = pack_float2<__nv_bfloat16>(f01.x, f01.y);
  hi = pack_float2<__nv_bfloat16>(f23.x, f23.y);
}

// One e4m3 byte (bits 0-7 of `x`) as an fp16 pair holding its value twice.
__device__ __forceinline__ uint32_t e4m3_to_half2_splat(uint32_t x) {
  x &= 0xffu;
  return e4m3x2_to_half2_bits(x | (x << 16));
}

// Eight NVFP4 values (one 32-bit word, element 2i in the low nibble of byte i; e2m1 codes with
// bit 3 the sign) times one block scale (`scale`: an fp16 pair holding it twice) to eight values
// of T, as four packed pairs. e2m1 is 1-2-1 with bias 1: its three magnitude bits placed at the
// top of fp16's exponent and mantissa give the value times 2^-14 (the subnormal 0.5 included),
// which one exact multiply restores. code x scale has at most 6 significant bits and lies in
// [2^-10, 2688]: exact in fp16, and in bf16 after it, so the decode loses nothing.
template <typename T>
__device__ __forceinline__ uint4 e2m1x8_scaled_to(uint32_t x, uint32_t scale) {
  const __half2 restore = __half2(__half(16384.0f), __half(16384.0f));
  uint32_t out[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t byte = x >> (8 * i);
    const uint32_t codes = (byte & 0xfu) | ((byte << 12) & 0xf0000u);  // nibbles at lanes 0 and 1
    const uint32_t bits = ((codes & 0x00070007u) << 9) | ((codes & 0x00080008u) << 12);
    const __half2 v = __hmul2(__hmul2(*reinterpret_cast<const __half2*>(&bits), restore),
                              *reinterpret_cast<const __half2*>(&scale));
    if constexpr (std::is_same<T, __half>::value) {
      out[i] = *reinterpret_cast<const uint32_t*>(&v);
    } else {
      const float2 f = __half22float2(v);
      out[i] = pack_float2<T>(f.x, f.y);
    }
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// Sixteen e4m3 values (one 16-byte chunk) to sixteen values of T (two 16-byte chunks).
template <typename T>
__device__ __forceinline__ void e4m3x16_to(const uint4& in, uint4& out_lo, uint4& out_hi) {
  e4m3x4_to<T>(in.x, out_lo.x, out_lo.y);
  e4m3x4_to<T>(in.y, out_lo.z, out_lo.w);
  e4m3x4_to<T>(in.z, out_hi.x, out_hi.y);
  e4m3x4_to<T>(in.w, out_hi.z, out_hi.w);
}

}  // namespace ctxattn
