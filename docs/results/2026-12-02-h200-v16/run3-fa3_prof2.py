"""FA3 (fa3-fwd) on one shape (bf16, causal, contiguous KV), for ncu: q_len kv_len hq hkv [d]."""
import sys
import torch
from fa3_fwd_interface import flash_attn_varlen_func

q_len, kv_len, hq, hkv = (int(x) for x in sys.argv[1:5])
d = int(sys.argv[5]) if len(sys.argv) > 5 else 128
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
print("finite:", bool(torch.isfinite(o.float()).all()))
