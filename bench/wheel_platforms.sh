# Sourced by bench/fetch_wheels.sh and bench/build_fmha_v2.sh: the pip --platform arguments of a
# manylinux x86_64 GPU machine. pip matches each manylinux tag exactly, so every glibc level the
# wheels are published for is listed.
platforms=()
for tag in manylinux_2_39_x86_64 manylinux_2_35_x86_64 manylinux_2_34_x86_64 manylinux_2_31_x86_64 \
           manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
           manylinux2014_x86_64 manylinux1_x86_64; do
  platforms+=(--platform "$tag")
done
