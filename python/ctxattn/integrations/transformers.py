"""ctxattn as the paged attention of Hugging Face transformers' continuous batching.

    import ctxattn.integrations.transformers          # registers "paged|ctxattn"
    model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="paged|ctxattn", dtype=torch.bfloat16)
    outputs = model.generate_batch(prompts, generation_config)

transformers (5.17) keeps one cache tensor per layer, `[(num_blocks + 2) * block_size, num_kv_heads,
head_dim]`, and hands every attention call the packed queries of the batch, `cu_seq_lens_q`,
`cu_seq_lens_k`, the host bounds `max_seqlen_q` / `max_seqlen_k`, and per layer group a
`write_index` (where each new token goes) and a `read_index` (where each token the attention needs
sits). Its own paged paths gather the needed tokens into a fresh tensor and run SDPA, eager or a
varlen kernel on that copy. This adapter instead:

1. writes the new keys and values into the cache (the same `index_copy_` into the pages that every
   path makes),
2. turns the indices into a block table over the cache tensor seen as `[pages, page_size, heads,
   head_dim]` ("NHD"), on the device, with no host synchronisation,
3. runs `ctxattn.trtllm_batch_context_with_kv_cache` on the cache's own pages, with the layer's
   scale, sliding window and sinks.

Full-attention layers always run in place. A sliding-window layer keeps a rolling buffer of
exactly `sliding_window` tokens per request; it runs in place unless a request of the batch
prefills a chunk that wraps the buffer (its later tokens would overwrite keys that its earlier
rows still need). Such a batch takes transformers' own gather (`PagedAttentionCache.update`) for
that layer and ctxattn runs on the gathered tokens as pages of one token. docs/transformers.md
says when that happens and what transformers would need to avoid it.
"""

import threading

import torch

import ctxattn

__all__ = ["ATTN_IMPLEMENTATION", "NAME", "paged_attention_forward", "register", "workspace_for"]

NAME = "ctxattn"
ATTN_IMPLEMENTATION = "paged|" + NAME

# ctxattn's page sizes (SPEC section 2: powers of two up to 1024), largest first.
_PAGE_SIZES = tuple(1 << i for i in range(10, -1, -1))
# docs/api.md "Workspace": one 128 MiB buffer covers every GPU call over KV shorter than 8192
# tokens and up to 14 requests over longer KV (split-KV partials); a call that needs more grows it.
# The CPU backend needs its 4 KiB header only, 1 MiB leaves room.
_WORKSPACE_BYTES = {"cuda": 128 << 20, "cpu": 1 << 20}
_cuda_workspaces = {}  # device index -> workspace
_retired = []  # workspaces replaced by larger ones: never freed (captured CUDA graphs point into them)
_cuda_workspaces_lock = threading.Lock()
_local = threading.local()  # per thread: a CPU workspace; the block tables of the forward pass in progress


def workspace_for(device, at_least=0):
    """The zeroed workspace reused by every call on `device`: one per GPU, one per thread on the
    CPU, at least `at_least` bytes (a larger one replaces it for good). Continuous batching runs
    one generation loop per model, its calls ordered on one stream; two generation loops running
    at the same time on one GPU would share the GPU's workspace, which the library does not allow
    (docs/transformers.md)."""
    device = torch.device(device)
    if device.type != "cuda":
        buffer = getattr(_local, "cpu_workspace", None)
        if buffer is None or buffer.device != device or buffer.numel() < at_least:
            size = max(_WORKSPACE_BYTES["cpu"], at_least)
            buffer = _local.cpu_workspace = torch.zeros(size, dtype=torch.uint8, device=device)
        return buffer
    index = device.index if device.index is not None else torch.cuda.current_device()
    buffer = _cuda_workspaces.get(index)
    if buffer is None or buffer.numel() < at_least:
        with _cuda_workspaces_lock:
            buffer = _cuda_workspaces.get(index)
            if buffer is None or buffer.numel() < at_least:
                if buffer is not None:
                    _retired.append(buffer)
                size = max(_WORKSPACE_BYTES["cuda"], at_least)
                buffer = torch.zeros(size, dtype=torch.uint8, device=torch.device("cuda", index))
                _cuda_workspaces[index] = buffer
    return buffer


def _page_size(block_size, window):
    """The largest power of two that divides the block size (and the window of a sliding layer,
    whose rolling buffer wraps every `window` tokens), so that every page lies inside one block.
    (Divisibility tests rather than bit tricks: under torch.compile the sizes may be symbolic,
    and a test specialises them into a constant page size.)"""
    for size in _PAGE_SIZES:
        if block_size % size == 0 and (window <= 1 or window % size == 0):
            return size
    return 1


def _per_layer_type(value, layer_type):
    return value[layer_type] if isinstance(value, dict) else value


def _sinks(module, kwargs):
    sinks = kwargs.get("s_aux")
    if sinks is None:
        sinks = getattr(module, "sinks", None)
    if sinks is None:
        return None
    if hasattr(sinks, "to_local"):  # a DTensor under tensor parallelism: this rank's heads
        sinks = sinks.to_local()
    return sinks.detach().to(torch.float32).contiguous()


def _in_place_tables(read_index, write_index, cu_q, cu_k, page_size, pages_per_seq, sliding):
    """(block_tables, seq_lens) over the cache pages, computed on the device.

    Request b reads `old_b = k_len_b - q_len_b` cached tokens, listed in order at
    read_index[cu_k[b]:], followed by its q_len_b new tokens, listed at write_index[cu_q[b]:]. A
    full-attention request starts at position 0 (a block start). A sliding request starts
    mid-buffer; it is shifted by `shift_b`, the in-page offset of its first token, so that each
    page of ctxattn's view is one page of the buffer. The shifted positions lie outside every
    row's window and are never used.
    """
    q_lens = cu_q[1:] - cu_q[:-1]
    k_lens = cu_k[1:] - cu_k[:-1]
    old = (k_lens - q_lens).unsqueeze(1)
    num_read = read_index.numel()
    indices = torch.cat([read_index, write_index])
    last = max(indices.numel() - 1, 0)
    if indices.numel() == 0:
        indices = torch.zeros(1, dtype=torch.int64, device=cu_q.device)
    start_k = cu_k[:-1].unsqueeze(1)
    start_q = cu_q[:-1].unsqueeze(1) + num_read

    def physical(known):
        """Cache index of the `known`-th token of each request (cached tokens first)."""
        source = torch.where(known < old, start_k + known, start_q + known - old)
        return indices[source.clamp(0, last)]

    if sliding:
        first = physical(torch.zeros_like(old))
        shift = first % page_size
    else:
        shift = torch.zeros_like(old)
    seq_lens = k_lens.unsqueeze(1) + shift
    position = torch.arange(pages_per_seq, device=cu_q.device, dtype=torch.int64).unsqueeze(0) * page_size
    position = torch.minimum(torch.maximum(position, shift), seq_lens - 1)
    block_tables = torch.div(physical(position - shift), page_size, rounding_mode="floor")
    return block_tables.to(torch.int32), seq_lens.squeeze(1).to(torch.int32)


def _gathered_tables(cu_k, max_kv_len, num_tokens):
    """(block_tables, seq_lens) over gathered tokens laid out request after request, page size 1."""
    start = cu_k[:-1].unsqueeze(1)
    token = start + torch.arange(max(max_kv_len, 1), device=cu_k.device, dtype=cu_k.dtype).unsqueeze(0)
    block_tables = token.clamp(0, max(num_tokens - 1, 0)).to(torch.int32)
    return block_tables, (cu_k[1:] - cu_k[:-1]).to(torch.int32)


def _tables_of_group(group, index_in_group, batch, shape, compute):
    """The block tables of one layer group in the forward pass in progress.

    Every layer of a group sees the same indices and lengths, so the group's first layer (index
    0, run first) computes the tables and the others reuse them. `batch` is the list that carries
    the batch's write indices: transformers builds a new one for every batch, so a reuse never
    crosses batches; recomputing at the first layer keeps every forward pass (a CUDA-graph
    capture included) self-contained. Under torch.compile every layer computes its own.
    """
    if torch.compiler.is_compiling():
        return compute()
    memo = getattr(_local, "tables", None)
    if memo is None:
        memo = _local.tables = {}
    entry = memo.get(group)
    if index_in_group > 0 and entry is not None and entry[0] is batch and entry[1] == shape:
        return entry[2]
    tables = compute()
    memo[group] = (batch, shape, tables)
    return tables


def paged_attention_forward(
    module,
    query,
    key,
    value,
    attention_mask,
    scaling=None,
    dropout=0.0,
    **kwargs,
):
    """The `paged|ctxattn` attention function (transformers' AttentionInterface signature).

    query: [1, num_qo_heads, T, head_dim]; key, value: [1, num_kv_heads, T, head_dim], the new
    tokens of every request of the batch, packed. Returns ([1, T, num_qo_heads, head_dim], None).
    `attention_mask` is not used: masks come from the lengths (causal, bottom-right aligned) and
    the layer's window.
    """
    cache = kwargs.get("cache")
    if cache is None:
        raise ValueError(
            f"{ATTN_IMPLEMENTATION}: called without transformers' paged cache; this implementation serves "
            "continuous batching (generate_batch). Use 'sdpa' for a plain forward."
        )
    if kwargs.get("block_table") is not None:
        raise NotImplementedError(
            f"{ATTN_IMPLEMENTATION}: transformers' decode block table is for flash_attn_with_kvcache; continuous "
            "batching gives it to flash implementations only (max_blocks_per_request=0 for this one)"
        )
    if dropout and module.training:
        raise NotImplementedError(f"{ATTN_IMPLEMENTATION}: dropout is not supported (inference only)")
    if kwargs.get("softcap"):
        raise NotImplementedError(f"{ATTN_IMPLEMENTATION}: logit soft-capping (softcap) is not supported")
    if not getattr(module, "is_causal", True):
        raise NotImplementedError(f"{ATTN_IMPLEMENTATION}: non-causal attention is not supported")
    if not query.shape[-1] == key.shape[-1] == value.shape[-1]:
        raise NotImplementedError(
            f"{ATTN_IMPLEMENTATION}: query, key and value need one head dim, got {query.shape[-1]}, "
            f"{key.shape[-1]} and {value.shape[-1]}"
        )
    if query.dtype not in (torch.float16, torch.bfloat16):
        raise TypeError(
            f"{ATTN_IMPLEMENTATION}: expected a float16 or bfloat16 model (dtype=...), got queries of {query.dtype}"
        )

    layer_idx = module.layer_idx
    group, index_in_group = cache.layer_index_to_group_indices[layer_idx]
    window = cache.sliding_windows[layer_idx]  # 1 for full attention, else the window size
    sliding = window > 1
    layer_type = "sliding_attention" if sliding else "full_attention"
    cu_q = kwargs["cu_seq_lens_q"]
    cu_k = _per_layer_type(kwargs["cu_seq_lens_k"], layer_type)
    max_q_len = kwargs["max_seqlen_q"]
    max_k_len = _per_layer_type(kwargs["max_seqlen_k"], layer_type)
    read_index = kwargs["read_index"][group]
    write_index = kwargs["write_index"][group]
    batch_size = cu_q.numel() - 1

    q = query[0].transpose(0, 1)  # [T, num_qo_heads, head_dim], a view
    num_tokens, num_qo_heads, head_dim = q.shape
    num_kv_heads = cache.num_key_value_heads
    k_cache = cache.key_cache[index_in_group]
    v_cache = cache.value_cache[index_in_group]
    if scaling is None:
        scaling = head_dim**-0.5

    # Sliding layers: a chunk longer than one token, over a prefix that makes it wrap the rolling
    # buffer, needs keys that its own later tokens overwrite. Exactly then some request has more
    # than `window` keys (cached + new) in this layer, which the host bound shows.
    wraps = sliding and max_q_len > 1 and max_k_len > window
    if wraps:
        k_all, v_all = cache.update(
            key_states=key, value_states=value, layer_idx=layer_idx,
            read_index=kwargs["read_index"], write_index=kwargs["write_index"],
        )
        kv_cache = (k_all.unsqueeze(1), v_all.unsqueeze(1))  # [tokens, 1, heads, head_dim]
        max_kv_len = max_k_len
        block_tables, seq_lens = _tables_of_group(
            group, index_in_group, kwargs["write_index"], (True, max_kv_len, k_all.shape[0]),
            lambda: _gathered_tables(cu_k, max_kv_len, k_all.shape[0]),
        )
    else:
        k_cache.index_copy_(0, write_index, key[0].transpose(0, 1))
        v_cache.index_copy_(0, write_index, value[0].transpose(0, 1))
        page_size = _page_size(cache.block_size, window)
        max_kv_len = max_k_len + (page_size - 1 if sliding else 0)
        pages_per_seq = max(-(-max_kv_len // page_size), 1)
        shape = (-1, page_size, num_kv_heads, head_dim)
        kv_cache = (k_cache.view(shape), v_cache.view(shape))
        block_tables, seq_lens = _tables_of_group(
            group, index_in_group, kwargs["write_index"], (False, page_size, pages_per_seq),
            lambda: _in_place_tables(read_index, write_index, cu_q, cu_k, page_size, pages_per_seq, sliding),
        )

    # Rows of padding tokens (CUDA-graph batches) belong to no request and are never written.
    out = torch.zeros((num_tokens, num_qo_heads, head_dim), dtype=q.dtype, device=q.device)
    call_args = (q, kv_cache, workspace_for(q.device), block_tables, seq_lens, max_q_len, max_kv_len,
                 float(scaling), 1.0, batch_size, cu_q, cu_k)
    call_kwargs = dict(window_left=window - 1 if sliding else -1, out=out, kv_layout="NHD",
                       sinks=_sinks(module, kwargs))
    try:
        ctxattn.trtllm_batch_context_with_kv_cache(*call_args, **call_kwargs)
    except ValueError as error:
        # A batch of many requests over long KV needs more than the default workspace (split-KV
        # partials): grow it once to what the library asks for, and run the call again. The
        # refused call launched nothing.
        if "workspace_buffer" not in str(error):
            raise
        need = ctxattn.workspace_size(*call_args, **call_kwargs)
        call_args = call_args[:2] + (workspace_for(q.device, at_least=need),) + call_args[3:]
        ctxattn.trtllm_batch_context_with_kv_cache(*call_args, **call_kwargs)
    return out.unsqueeze(0), None


def register():
    """Makes `attn_implementation="paged|ctxattn"` available to transformers (idempotent).
    Returns the name to pass."""
    from transformers import AttentionInterface

    AttentionInterface.register(ATTN_IMPLEMENTATION, paged_attention_forward)
    return ATTN_IMPLEMENTATION


register()
