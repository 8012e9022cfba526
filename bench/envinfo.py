"""The header of a run: machine, clocks, driver, library versions and the commit measured."""

import datetime
import importlib.metadata
import os
import platform
import subprocess
import sys

import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMI_FIELDS = ("name", "driver_version", "pstate", "clocks.sm", "clocks.max.sm", "clocks.mem",
              "clocks.max.mem", "power.draw", "power.limit", "temperature.gpu")


def _run(cmd):
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=15, cwd=REPO)
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"{type(e).__name__}: {e}"
    if done.returncode != 0:
        return None, (done.stderr or done.stdout).strip()[:200]
    return done.stdout.strip(), None


def git_commit():
    """$CTXATTN_GIT_COMMIT when set (a tree copied to another machine may carry a stale or no
    .git folder: the sender names the commit), else the working tree's commit, with -dirty when
    tracked files differ."""
    if os.environ.get("CTXATTN_GIT_COMMIT"):
        return os.environ["CTXATTN_GIT_COMMIT"]
    sha, err = _run(["git", "rev-parse", "--short=12", "HEAD"])
    if sha is None:
        return f"unknown ({err}; set CTXATTN_GIT_COMMIT)"
    status, _ = _run(["git", "status", "--porcelain", "--untracked-files=no"])
    return sha + ("-dirty" if status else "")


def gpu_state():
    """nvidia-smi's view of GPU 0 (clocks, power, temperature); read at start and at end."""
    out, err = _run(["nvidia-smi", "--query-gpu=" + ",".join(SMI_FIELDS), "--format=csv,noheader"])
    if out is None:
        return {"nvidia_smi": f"unavailable: {err}"}
    values = [v.strip() for v in out.splitlines()[0].split(",")]
    return dict(zip(SMI_FIELDS, values))


def _version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _ctxattn_version():
    try:
        import ctxattn
    except Exception as e:
        return f"not importable: {type(e).__name__}: {e}"
    for attr in ("__version__", "version"):
        value = getattr(ctxattn, attr, None)
        if value is not None:
            return value() if callable(value) else str(value)
    return "unknown"


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def collect(device, argv):
    device = torch.device(device)
    info = {
        "time_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
        "command": " ".join([os.path.basename(sys.executable), "-m", "bench"] + list(argv)),
        "commit": git_commit(),
        "ctxattn": _ctxattn_version(),
        "ctxattn_library": os.environ.get("CTXATTN_LIBRARY", "(package directory)"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu": _cpu_model(),
        "cpu_cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update({
            "gpu": props.name,
            "capability": f"{props.major}.{props.minor}",
            "sms": props.multi_processor_count,
            "gpu_memory_gib": round(props.total_memory / 2**30, 1),
            "l2_mib": round(getattr(props, "L2_cache_size", 0) / 2**20, 1),
            "cuda_runtime": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(),
            "triton": _version("triton"),
            "flashinfer": _version("flashinfer-python"),
            "cudnn_frontend": _version("nvidia-cudnn-frontend"),
            "flashinfer_workspace_base": os.environ.get("FLASHINFER_WORKSPACE_BASE", "(default)"),
        })
        info["gpu_at_start"] = gpu_state()
    else:
        info["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    return info
