"""FA3 (fa3-fwd) calls of two bench shapes, for ncu: fp8 long_8k and bf16 chunk_long_tp8."""
import sys
import torch
from fa3_fwd_interface import flash_attn_varlen_func

name = sys.argv[1]
dev = "cuda"
if name == "fp8.long_8k":
    q_len, kv_len, hq, hkv, dtype = 8192, 8192, 32, 8, torch.float8_e4m3fn
else:
    q_len, kv_len, hq, hkv, dtype = 512, 131072, 8, 1, torch.bfloat16
d = 128
q = (torch.randn(q_len, hq, d, device=dev) * 0.5).to(dtype)
k = (torch.randn(kv_len, hkv, d, device=dev) * 0.5).to(dtype)
v = (torch.randn(kv_len, hkv, d, device=dev) * 0.5).to(dtype)
cu_q = torch.tensor([0, q_len], dtype=torch.int32, device=dev)
cu_k = torch.tensor([0, kv_len], dtype=torch.int32, device=dev)
kw = {}
if dtype == torch.float8_e4m3fn:
    unit = torch.ones(1, hkv, dtype=torch.float32, device=dev)
    kw = dict(q_descale=unit, k_descale=unit, v_descale=unit)
for _ in range(3):
    out = flash_attn_varlen_func(q, k, v, cu_q, cu_k, q_len, kv_len, softmax_scale=d ** -0.5, causal=True,
                                 num_splits=0, pack_gqa=None, **kw)
torch.cuda.synchronize()
o = out[0] if isinstance(out, tuple) else out
print(name, "finite:", bool(torch.isfinite(o.float()).all()))
