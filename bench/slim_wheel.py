"""Rewrites the FlashInfer wheel without the kernel sources that its paged-prefill path never compiles.

The full wheel (about 60 MB) does not fit beside the other wheels in what a GPU machine without
network can receive, and most of it is CUDA source for unrelated operators (MoE, sampling, GEMM,
Blackwell-only attention) kept in sub-folders of ``flashinfer/data/csrc``. The paged prefill JIT
(``batch_prefill*.cu``, ``tvm_ffi_utils.h`` and the jinja templates) lives at the top of that folder
and includes only headers from ``data/include``, ``data/cutlass``, ``data/cccl`` and ``data/spdlog``,
which are all kept, as is every Python file. RECORD is rewritten to list exactly what is kept.

Usage: python bench/slim_wheel.py WHEEL  (rewrites WHEEL in place; a second run changes nothing)
"""

import os
import sys
import tempfile
import zipfile

CSRC = "flashinfer/data/csrc/"


def keep(name):
    if not name.startswith(CSRC):
        return True
    return "/" not in name[len(CSRC):]


def slim(path):
    with zipfile.ZipFile(path) as src:
        infos = src.infolist()
        kept = [i for i in infos if keep(i.filename)]
        if len(kept) == len(infos):
            return 0
        kept_names = {i.filename for i in kept}
        fd, tmp = tempfile.mkstemp(suffix=".whl", dir=os.path.dirname(os.path.abspath(path)))
        os.close(fd)
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as dst:
            for info in kept:
                data = src.read(info.filename)
                if info.filename.endswith(".dist-info/RECORD"):
                    lines = data.decode("utf-8").splitlines()
                    lines = [ln for ln in lines if ln.split(",", 1)[0] in kept_names]
                    data = ("\n".join(lines) + "\n").encode("utf-8")
                dst.writestr(info, data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return len(infos) - len(kept)


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    dropped = slim(argv[1])
    size = os.path.getsize(argv[1]) / 2**20
    print(f"{os.path.basename(argv[1])}: dropped {dropped} files, now {size:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
