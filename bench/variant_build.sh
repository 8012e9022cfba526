#!/usr/bin/env bash
# A variant of libctxattn from a patch, without a second full build: the objects of BUILD_DIR whose
# dependency files name a file the patch changes are recompiled from a worktree of HEAD with the
# patch applied (each with BUILD_DIR's own compile command), the rest reused, and the library
# relinked. For experiments (experiments/README.md): the result goes to bench/compare_builds.sh
# beside BUILD_DIR, or through bench/profiling/sass_compare.py against BUILD_DIR's objects.
#
#   bench/variant_build.sh BUILD_DIR PATCH OUT_DIR
#
# BUILD_DIR: a configured and built tree of HEAD (e.g. `make build`'s build/). OUT_DIR receives
# libctxattn.so* and, under objects/, the recompiled objects. Sources the patch adds, and changes
# to the build files, need a real build.
#
# Environment: ONLY=REGEX recompiles only the affected objects whose path matches REGEX (a patch
# whose effect is confined to some kernels, e.g. ONLY=_d512; the caller vouches that the others
# compile unchanged); FLAGS="..." appends to each recompiled object's compile command (e.g. a -D
# that picks one of several settings a patch offers).
set -euo pipefail
BUILD=$(cd "${1:?build dir}" && pwd)
PATCH=$(realpath "${2:?patch}")
OUT=${3:?out dir}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
trap 'git -C "$ROOT" worktree remove --force "$WORK/tree" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT

git -C "$ROOT" worktree add --detach "$WORK/tree" HEAD > /dev/null 2>&1
git -C "$WORK/tree" apply "$PATCH"
mapfile -t changed < <(git -C "$WORK/tree" diff --name-only HEAD)
[ "${#changed[@]}" -gt 0 ] || { echo "the patch changes nothing"; exit 1; }

# BUILD_DIR's compile commands (CMake writes them on a re-configure; nothing is rebuilt), with
# nvcc's response files (its include lists) inlined so that their paths can be rewritten.
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON > /dev/null
commands() {
  python3 -c '
import json, re, sys
for entry in json.load(open(sys.argv[1])):
    cmd = entry["command"]
    out = re.search(r" -o (\S+)", cmd)
    if not out:
        continue
    cmd = re.sub(r"--options-file (\S+)",
                 lambda m: open(entry["directory"] + "/" + m.group(1)).read().strip(), cmd)
    out = re.search(r" -o (\S+)", cmd)
    cmd = cmd[:out.start()] + " -o @OUT@" + cmd[out.end():]  # the object: the caller says where
    print(out.group(1) + "\t" + cmd)
' "$BUILD/compile_commands.json"
}
declare -A command_of
while IFS=$'\t' read -r out cmd; do command_of[$out]=$cmd; done < <(commands)

mkdir -p "$WORK/link/CMakeFiles"
cp -r "$BUILD/CMakeFiles/ctxattn.dir" "$WORK/link/CMakeFiles/"
[ -d "$BUILD/CMakeFiles/ctxattn_sm90.dir" ] && cp -r "$BUILD/CMakeFiles/ctxattn_sm90.dir" "$WORK/link/CMakeFiles/"

recompiled=0
while IFS= read -r dep; do
  hit=0
  for f in "${changed[@]}"; do
    if grep -qF "$ROOT/$f" "$dep"; then hit=1; break; fi
  done
  [ "$hit" -eq 1 ] || continue
  rel=${dep#"$BUILD"/}
  rel=${rel%.d}
  [[ -z "${ONLY:-}" || "$rel" =~ ${ONLY} ]] || continue
  cmd=${command_of[$rel]:-}
  [ -n "$cmd" ] || { echo "no compile command for $rel"; exit 1; }
  # The same command on the worktree's sources and headers, into the variant's copy of the object.
  cmd=${cmd//"$ROOT/src"/"$WORK/tree/src"}
  cmd=${cmd//"$ROOT/include"/"$WORK/tree/include"}
  cmd=${cmd//@OUT@/"$WORK/link/$rel"}
  cmd="$cmd ${FLAGS:-}"
  rm -f "$WORK/link/$rel"
  echo "compiling $rel"
  (cd "$BUILD" && eval "$cmd") 2>&1 | grep -E "error|spill" || true
  [ -f "$WORK/link/$rel" ] || { echo "failed: $rel"; exit 1; }
  mkdir -p "$OUT/objects" && cp "$WORK/link/$rel" "$OUT/objects/"
  recompiled=$((recompiled + 1))
done < <(find "$BUILD/CMakeFiles/ctxattn.dir" "$BUILD/CMakeFiles/ctxattn_sm90.dir" -name '*.o.d' 2>/dev/null)
echo "$recompiled objects recompiled"

(cd "$WORK/link" && bash -c "$(cat "$BUILD/CMakeFiles/ctxattn.dir/link.txt")")
cp "$WORK/link/libctxattn.so.0.1.0" "$OUT/"
ln -sf libctxattn.so.0.1.0 "$OUT/libctxattn.so.0"
ln -sf libctxattn.so.0 "$OUT/libctxattn.so"
echo "variant library: $OUT/libctxattn.so"
