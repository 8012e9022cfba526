"""Run by wheel_check.sh inside a fresh venv: the installed package finds its own library and
computes one small batch correctly."""

import math
import os

import torch

import ctxattn

package_dir = os.path.dirname(os.path.abspath(ctxattn.__file__))
assert "site-packages" in package_dir, f"imported ctxattn from {package_dir}, not the installed wheel"
assert ctxattn.library_path() == os.path.join(package_dir, "libctxattn.so"), ctxattn.library_path()

torch.manual_seed(0)
num_pages, page_size, heads, head_dim = 4, 16, 2, 64
q = torch.randn(5, heads, head_dim, dtype=torch.bfloat16)
k = torch.randn(num_pages, heads, page_size, head_dim, dtype=torch.bfloat16)
v = torch.randn(num_pages, heads, page_size, head_dim, dtype=torch.bfloat16)
block_tables = torch.tensor([[2, 0]], dtype=torch.int32)
seq_lens = torch.tensor([20], dtype=torch.int32)
cu_q = torch.tensor([0, 5], dtype=torch.int32)
cu_kv = torch.tensor([0, 20], dtype=torch.int32)
workspace = torch.zeros(1 << 16, dtype=torch.uint8)
scale = 1.0 / math.sqrt(head_dim)
out = ctxattn.trtllm_batch_context_with_kv_cache(
    q, (k, v), workspace, block_tables, seq_lens, 5, 20, scale, 1.0, 1, cu_q, cu_kv)

keys = torch.cat([k[2], k[0]], dim=1)[:, :20].double()  # [H, 20, D]
values = torch.cat([v[2], v[0]], dim=1)[:, :20].double()
scores = scale * torch.einsum("thd,hjd->htj", q.double(), keys)
rows = torch.arange(5)[:, None] + 15  # bottom-right causal: row i sees KV tokens 0 .. 15 + i
scores = scores.masked_fill(torch.arange(20)[None, :] > rows, -math.inf)
expected = torch.einsum("htj,hjd->thd", scores.softmax(-1), values)
torch.testing.assert_close(out.double(), expected, rtol=1e-2, atol=1e-2)
print(f"wheel smoke: ctxattn {ctxattn.version()} from {package_dir}: ok")
