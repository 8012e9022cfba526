# Sourced by pack7.sh and pack8.sh: `patches VARIANT` prints the patches (absolute paths) that make
# the variant from main, in the order they apply.
#   MAIN   none
#   P40    sm90-producer-40-d128.patch: the 16-bit D = 128 kernels on 40 / 232 registers
#   PR     P40, then sm90-producer-32-d64.patch: the three-consumer D = 64 kernels' producer on 32
#   GI40   v30's sm90-gather-ids-smem.patch (the tile's page ids in shared memory), then P40
#   G2S40  v31's sm90-gather-two-warps-static.patch (GI included), then P40
patches() {
  local r v32
  r=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  v32=$r/2026-12-05-h200-v32
  case $1 in
    MAIN) echo "" ;;
    P40) echo "$v32/sm90-producer-40-d128.patch" ;;
    PR) echo "$v32/sm90-producer-40-d128.patch $v32/sm90-producer-32-d64.patch" ;;
    GI40) echo "$r/2026-12-05-h200-v30/sm90-gather-ids-smem.patch $v32/sm90-producer-40-d128.patch" ;;
    G2S40) echo "$r/2026-12-05-h200-v31/sm90-gather-two-warps-static.patch $v32/sm90-producer-40-d128.patch" ;;
    *) echo "unknown variant $1" >&2; return 1 ;;
  esac
}
