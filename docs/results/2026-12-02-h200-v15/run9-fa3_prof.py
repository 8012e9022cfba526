"""FA3 (fa3-fwd) on long_8k (bf16, causal, 32 / 8 heads, D = 128, contiguous KV), for ncu."""
import torch
from fa3_fwd_interface import flash_attn_varlen_func

q_len, kv_len, hq, hkv, d = 8192, 8192, 32, 8, 128
q = (torch.randn(q_len, hq, d, device="cuda") * 0.5).to(torch.bfloat16)
k = (torch.randn(kv_len, hkv, d, device="cuda") * 0.5).to(torch.bfloat16)
v = (torch.randn(kv_len, hkv, d, device="cuda") * 0.5).to(torch.bfloat16)
cu_q = torch.tensor([0, q_len], dtype=torch.int32, device="cuda")
cu_k = torch.tensor([0, kv_len], dtype=torch.int32, device="cuda")
for _ in range(3):
    out = flash_attn_varlen_func(q, k, v, cu_q, cu_k, q_len, kv_len, softmax_scale=d ** -0.5, causal=True,
                                 num_splits=0, pack_gqa=None)
torch.cuda.synchronize()
o = out[0] if isinstance(out, tuple) else out
print("long_8k finite:", bool(torch.isfinite(o.float()).all()))
