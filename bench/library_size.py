#!/usr/bin/env python3
"""What a built libctxattn.so carries for the GPU: the file's size, its .nv_fatbin section, and the
kernel images in it by kind and architecture (SASS ELF for an sm_XY, PTX for a compute_XY), with
the bytes each kind takes in the file (as stored, fatbinary compresses PTX) and unpacked. No GPU
and no CUDA toolkit needed; `cuobjdump --list-elf / --list-ptx LIB` lists the same images by name.

    python3 bench/library_size.py [build/libctxattn.so] [--images] [--max-bytes N]

--images adds one line an image (its source file, kind, architecture, stored and unpacked bytes).
--max-bytes: exit with status 1 when the file is larger than N bytes (the build's size goal, a
ctest of CUDA builds).
"""
import argparse
import collections
import os
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
KINDS = {1: "PTX", 2: "ELF"}
FLAG_COMPRESSED = 0x8000  # the payload is compressed; its unpacked size follows the flags
FLAG_ARCH_SPECIFIC = 0x100000  # an sm_XYa / compute_XYa image


def section(data, wanted):
    """(offset, size) of the ELF64 section called `wanted`."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        sys.exit("not an ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx][4]
    for name, _, _, _, offset, size in headers:
        end = data.index(b"\0", names + name)
        if data[names + name:end].decode() == wanted:
            return offset, size
    return None


def images(data, offset, size):
    """Each image of the fatbinary containers in data[offset:offset + size]: (source name, kind,
    arch, stored bytes with its header, unpacked payload bytes). The layout is the one nvcc's
    fatbinary writes: a container header (magic, version, header size, body size), then images,
    each a header (kind, header size, payload size, ..., arch at byte 28, the source name's offset
    and size, flags, unpacked size at byte 56) and its payload."""
    pos, end = offset, offset + size
    while pos + 16 <= end:
        magic, _, header, body = struct.unpack_from("<IHHQ", data, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # containers are 8-byte aligned; skip padding
            continue
        entry, stop = pos + header, pos + header + body
        while entry < stop:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, entry)
            arch, name_offset, name_size, flags = struct.unpack_from("<IIIQ", data, entry + 28)
            unpacked, = struct.unpack_from("<Q", data, entry + 56)
            name = data[entry + name_offset:entry + name_offset + name_size].split(b"\0")[0].decode(errors="replace")
            arch = f"{arch // 10}{arch % 10}{'a' if flags & FLAG_ARCH_SPECIFIC else ''}"
            yield (name, KINDS.get(kind, str(kind)), arch, entry_header + payload,
                   unpacked if flags & FLAG_COMPRESSED else payload)
            entry += entry_header + payload
        pos = stop


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("library", nargs="?", default="build/libctxattn.so")
    ap.add_argument("--images", action="store_true")
    ap.add_argument("--max-bytes", type=int, default=None)
    args = ap.parse_args()
    path = os.path.realpath(args.library)
    data = open(path, "rb").read()
    if args.max_bytes is not None and len(data) > args.max_bytes:
        print(f"{path}: {len(data):,} bytes, over the goal of {args.max_bytes:,}")
        return 1
    fatbin = section(data, ".nv_fatbin")
    print(f"{path}: {len(data):,} bytes")
    if fatbin is None:
        print("no .nv_fatbin section (a build without CUDA)")
        return 0
    print(f".nv_fatbin: {fatbin[1]:,} bytes")
    totals = collections.OrderedDict()
    listing = sorted(images(data, *fatbin), key=lambda i: (i[1], i[2], i[0]))
    for name, kind, arch, stored, unpacked in listing:
        label = f"{kind} {'sm' if kind == 'ELF' else 'compute'}_{arch}"
        count, s, u = totals.get(label, (0, 0, 0))
        totals[label] = (count + 1, s + stored, u + unpacked)
        if args.images:
            # Builds without -lineinfo record no source name.
            source = name.split("/src/", 1)[-1] if "/src/" in name else os.path.basename(name) or "(unnamed)"
            print(f"  {source:40} {label:16} {stored:>12,} {unpacked:>12,}")
    print(f"{'images':20} {'count':>5} {'stored bytes':>14} {'unpacked bytes':>15}")
    for label, (count, stored, unpacked) in totals.items():
        print(f"{label:20} {count:5} {stored:14,} {unpacked:15,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
