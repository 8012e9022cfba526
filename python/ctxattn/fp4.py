"""FP4Tensor: an nvfp4 tensor as packed e2m1 bytes plus swizzled float8_e4m3fn block scales."""

import torch

_SCALE_DTYPES = (torch.uint8, torch.float8_e4m3fn)


class FP4Tensor:
    """nvfp4 data as returned (or accepted as `out`) by trtllm_batch_context_with_kv_cache.

    data:              uint8 [num_tokens, num_heads, head_dim // 2], two e2m1 codes per byte, the
                       even element in the low nibble.
    scale:             float8_e4m3fn (or uint8 holding the same bytes) [rows, cols], one scale per 16
                       values along the flattened (head, dim) axis of a token, in the 128x4 swizzled
                       layout; rows is a multiple of 128 covering scale_start_index + num_tokens,
                       cols = round_up(num_heads * head_dim / 16, 4).
    scale_start_index: the scale row of data's token 0 (several calls can share one scale tensor).
    original_shape:    the unpacked shape, (num_tokens, num_heads, head_dim).
    """

    def __init__(self, data, scale, scale_start_index=0, original_shape=None):
        if not isinstance(data, torch.Tensor) or data.dtype != torch.uint8:
            got = data.dtype if isinstance(data, torch.Tensor) else type(data).__name__
            raise TypeError(f"FP4Tensor.data: expected a uint8 tensor, got {got}")
        if not isinstance(scale, torch.Tensor) or scale.dtype not in _SCALE_DTYPES:
            got = scale.dtype if isinstance(scale, torch.Tensor) else type(scale).__name__
            raise TypeError(f"FP4Tensor.scale: expected a float8_e4m3fn or uint8 tensor, got {got}")
        if isinstance(scale_start_index, bool) or not isinstance(scale_start_index, int):
            raise TypeError(
                f"FP4Tensor.scale_start_index: expected an int, got {type(scale_start_index).__name__}"
            )
        if scale_start_index < 0:
            raise ValueError(f"FP4Tensor.scale_start_index: expected >= 0, got {scale_start_index}")
        self.data = data
        self.scale = scale
        self.scale_start_index = scale_start_index
        if original_shape is None:
            original_shape = (*data.shape[:-1], data.shape[-1] * 2)
        self.original_shape = tuple(original_shape)

    def __repr__(self):
        return (
            f"FP4Tensor(data={tuple(self.data.shape)} uint8, scale={tuple(self.scale.shape)} "
            f"{self.scale.dtype}, scale_start_index={self.scale_start_index}, "
            f"original_shape={self.original_shape}, device={self.data.device})"
        )
