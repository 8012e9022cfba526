#!/bin/bash
# Sliding windows on both CUDA backends (AUTO sends windows under 256 keys to the portable kernel,
# a rule measured before the D = 64 kernels had three consumer warpgroups). NEW's library
# (stripped, .gpu/libNEW.xz) and its ctxattn_gpu_bench with the swa* workloads; two rounds, the
# backends' order swapped in the second.
cd "$(dirname "$0")/../../.."
rm -rf /tmp/o; mkdir -p /tmp/o
mkdir -p .gpu/libNEW && xz -dc .gpu/libNEW.xz > .gpu/libNEW/libctxattn.so.0.1.0
ln -sf libctxattn.so.0.1.0 .gpu/libNEW/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/libNEW/libctxattn.so
W=d64_sinks_swa
for n in long_8k batch_1k d64 d256 fp8.long_8k fp8.d64 kv8.d64 kv8.long_8k; do for w in 127 255 511; do W=$W,swa$w.$n; done; done
for b in cuda_sm90,cuda_portable cuda_portable,cuda_sm90; do
  LD_LIBRARY_PATH=.gpu/libNEW timeout 250 .gpu/ctxattn_gpu_bench $W --backends $b --pages 64,16 --runs 5 2>&1 | tee -a /tmp/o/bench.txt
done
tar cf $OUT/logs.tar -C /tmp/o .
true
