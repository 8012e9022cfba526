"""Which backend runs a call: the library's own choice ("auto") or one forced by name.

Three places can name a backend; the first that does decides, for each call:

1. `use_backend(name)`: a context manager, thread-local (nested blocks stack; the innermost wins).
2. `set_backend(name)`: process-wide; `set_backend(None)` hands the choice back to the environment.
3. The environment variable CTXATTN_BACKEND, read at every call that reaches it.

Otherwise "auto". The choice is read when the call runs (in the custom op's eager implementation),
not when it is traced, so torch.compile'd code follows the setting in effect when it is called; a
CUDA graph replays the kernels of the backend that was in effect when it was captured.

A forced backend that cannot serve a call makes the call raise NotImplementedError with the
library's reason; nothing ever falls back from a forced backend to another one.
"""

import contextlib
import os
import threading

from . import _lib

ENV = "CTXATTN_BACKEND"

# Python names (the C enum ctxattn_backend_t in lower case, without the prefix).
CODES = {
    "auto": _lib.BACKEND_AUTO,
    "cpu": _lib.BACKEND_CPU,
    "cpu_reference": _lib.BACKEND_CPU_REFERENCE,
    "cuda_portable": _lib.BACKEND_CUDA_PORTABLE,
    "cuda_sm90": _lib.BACKEND_CUDA_SM90,
}
NAMES = {code: name for name, code in CODES.items()}
# The tensors' device type each forced backend runs on.
DEVICE_TYPES = {"cpu": "cpu", "cpu_reference": "cpu", "cuda_portable": "cuda", "cuda_sm90": "cuda"}

_EXPECTED = ", ".join(CODES)

_process_choice = None
_local = threading.local()


def normalize(name, source):
    """The canonical name of `name` (case and '-' / '_' ignored); `source` names the setting in errors."""
    if not isinstance(name, str):
        raise TypeError(f"{source}: expected a backend name ({_EXPECTED}), got {type(name).__name__}")
    key = name.strip().lower().replace("-", "_")
    if key not in CODES:
        raise ValueError(f"{source}: expected one of {_EXPECTED}, got {name!r}")
    return key


def _stack():
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def current():
    """(name, where it was set) for a call made now on this thread; where is None for the default."""
    stack = _stack()
    if stack:
        return stack[-1], f"ctxattn.use_backend({stack[-1]!r})"
    if _process_choice is not None:
        return _process_choice, f"ctxattn.set_backend({_process_choice!r})"
    value = os.environ.get(ENV)
    if value is None or not value.strip():
        return "auto", None
    name = normalize(value, f"{ENV} (environment variable)")
    return name, f"{ENV}={value}"


def set_backend(name):
    """Forces `name` for every later call in the process (threads included), unless a
    `use_backend` block of the calling thread says otherwise; None returns the choice to
    CTXATTN_BACKEND (and, without it, to "auto"). Returns the previous process-wide setting."""
    global _process_choice
    previous = _process_choice
    _process_choice = None if name is None else normalize(name, "set_backend")
    return previous


def get_backend():
    """The backend name a call made now on this thread would request ("auto" unless forced)."""
    return current()[0]


@contextlib.contextmanager
def use_backend(name):
    """Forces `name` for the calls this thread makes inside the block (other threads unaffected)."""
    stack = _stack()
    stack.append(normalize(name, "use_backend"))
    try:
        yield
    finally:
        stack.pop()


def requested(device_type):
    """The ctxattn_backend_t code for a call on `device_type` tensors, and where it was forced.

    A forced backend of the other device kind raises NotImplementedError here, before the call."""
    name, source = current()
    if name != "auto" and DEVICE_TYPES[name] != device_type:
        raise NotImplementedError(
            f"backend: {name} (forced by {source}) runs {DEVICE_TYPES[name].upper()} tensors only, got "
            f"{device_type.upper()} tensors; force a {device_type.upper()} backend or 'auto'"
        )
    return CODES[name], source
