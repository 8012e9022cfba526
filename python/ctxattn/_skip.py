"""Skip-softmax (SPEC 8.2) helpers: the CPU backends' vote geometry and the skip statistics.

A call with `skip_softmax_threshold_scale_factor` f != 0 skips, for a group of packed query rows,
every key tile after its first whose `exp(tile_max - running_max) < f / seq_lens[b]` holds for
all of its rows. Which rows form a group, how wide a tile is and in which order the tiles are
visited is each backend's geometry. The CPU backends default to groups of 64 packed rows and
128-key tiles visited from the last (the diagonal) to the first; `skip_softmax_geometry` sets
another one for the calling thread, so that a test can ask the CPU oracle for a GPU kernel's
geometry. `skip_softmax_stats` reads how many tiles the last such call skipped.
"""

import contextlib
import threading

import torch

from . import _lib

_ORDERS = {"descending": _lib.TILE_ORDER_DESCENDING, "ascending": _lib.TILE_ORDER_ASCENDING}
_local = threading.local()


def _stack():
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


@contextlib.contextmanager
def skip_softmax_geometry(rows=64, keys=128, order="descending"):
    """Inside the block, calls on a CPU backend from this thread vote per `rows` packed rows
    (query row x the G heads of a KV head, counted from each request's first row) and per tile of
    `keys` keys (a multiple of 64, aligned at key 0), visiting the tiles in `order`
    ("descending": from the last tile to the first, or "ascending"). Blocks nest."""
    if isinstance(rows, bool) or not isinstance(rows, int) or not 1 <= rows <= 1024:
        raise ValueError(f"rows: expected an int in [1, 1024], got {rows!r}")
    if isinstance(keys, bool) or not isinstance(keys, int) or keys % 64 != 0 or not 64 <= keys <= 1024:
        raise ValueError(f"keys: expected a multiple of 64 in [64, 1024], got {keys!r}")
    if order not in _ORDERS:
        raise ValueError(f"order: expected 'descending' or 'ascending', got {order!r}")
    stack = _stack()
    stack.append((rows, keys, _ORDERS[order]))
    try:
        yield
    finally:
        stack.pop()


def geometry():
    """(rows, keys, order code) in effect on this thread; zeros mean the library's defaults."""
    stack = _stack()
    return stack[-1] if stack else (0, 0, _lib.TILE_ORDER_DEFAULT)


def skip_softmax_stats(workspace_buffer):
    """(tiles, skipped): after a call with skip-softmax, the (row group, key tile) pairs that had
    an allowed key and how many of them were skipped, at the backend's geometry (both 0 after a
    CPU call without skipping; the sm90 kernels vote per 64 rows x their key tile, cuda_portable
    runs such calls dense and reports (0, 0)). Reads the workspace header the call wrote; for a
    CUDA workspace this copies 16 bytes to the host (a sync)."""
    if not isinstance(workspace_buffer, torch.Tensor):
        raise TypeError(f"workspace_buffer: expected a torch.Tensor, got {type(workspace_buffer).__name__}")
    raw = workspace_buffer.reshape(-1).view(torch.uint8)
    end = _lib.WORKSPACE_SKIP_STATS_OFFSET + 16
    if raw.numel() < end:
        raise ValueError(f"workspace_buffer: expected at least {end} bytes, got {raw.numel()}")
    counters = raw[_lib.WORKSPACE_SKIP_STATS_OFFSET:end].cpu().view(torch.int64)
    return int(counters[0]), int(counters[1])
