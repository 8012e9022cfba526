"""Unpacks the CUTLASS / CuTe headers of the pinned PyPI wheel `nvidia-cutlass` into a folder.

    python3 cmake/fetch_cutlass.py VERSION DEST

DEST/include then holds cute/ and cutlass/. The wheel is fetched with pip (or taken from
$CTXATTN_CUTLASS_WHEEL, a path to an already downloaded wheel, for machines without network).
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

PREFIX = "cutlass_library/source/include/"


def main() -> int:
    version, dest = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        wheel = os.environ.get("CTXATTN_CUTLASS_WHEEL")
        if not wheel:
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                            "-d", tmp, f"nvidia-cutlass=={version}"], check=True)
            wheel = glob.glob(os.path.join(tmp, "nvidia_cutlass-*.whl"))[0]
        staging = os.path.join(tmp, "include")
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if name.startswith(PREFIX) and not name.endswith("/"):
                    target = os.path.join(staging, name[len(PREFIX):])
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    with zf.open(name) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out)
        if not os.path.exists(os.path.join(staging, "cute", "config.hpp")):
            print(f"fetch_cutlass: {wheel} holds no CuTe headers", file=sys.stderr)
            return 1
        os.makedirs(dest, exist_ok=True)
        shutil.rmtree(os.path.join(dest, "include"), ignore_errors=True)
        shutil.move(staging, os.path.join(dest, "include"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
