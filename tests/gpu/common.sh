# Helpers of the GPU scripts (sourced): step selection and a pass / fail tally.
#   STEPS (comma list), OUT (folder of summary.txt) and failed (the count) belong to the caller.
step() { case ",$STEPS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
record() {  # name status
  echo "== $1: $([ "$2" -eq 0 ] && echo PASS || echo "FAIL ($2)")" | tee -a "$OUT/summary.txt"
  [ "$2" -eq 0 ] || failed=$((failed + 1))
}
