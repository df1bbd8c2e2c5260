#!/usr/bin/env bash
# Make sure this machine has an OpenCL device that can build kernels, for `make demo/test`.
#
# Why: the PoCL inside the pyopencl wheel (PoCL 3.0-rc2, LLVM 14) cannot compile anything on
# CPUs its LLVM does not know (AMD family 26: "unknown target CPU 'generic'"), and a GPU driver
# may be missing. Debian/Ubuntu's own PoCL (`pocl-opencl-icd`) compiles on those CPUs; installed
# through apt it registers itself in /etc/OpenCL/vendors, where pyopencl's ICD loader looks.
# Usage: scripts/ensure_opencl.sh PYTHON (the venv's python, with cl_vision_nodes installed).
set -uo pipefail
py=${1:?usage: ensure_opencl.sh PYTHON}
probe() { "$py" -c 'from cl_vision_nodes.opencl.devices import select_device as s; print(s("auto").describe())'; }

if device=$(probe 2>/tmp/cl_vision_probe.$$); then
  echo "OpenCL: $device builds kernels"
  rm -f /tmp/cl_vision_probe.$$; exit 0
fi
echo "OpenCL: no device can build kernels here ($(tail -n 1 /tmp/cl_vision_probe.$$))"
rm -f /tmp/cl_vision_probe.$$
# Debian/Ubuntu's PoCL; elsewhere install a CPU OpenCL driver (PoCL) or the GPU's OpenCL driver
bash "$(dirname "$0")/apt_install.sh" OpenCL pocl-opencl-icd ocl-icd-libopencl1 || exit 1
if device=$(probe); then
  echo "OpenCL: $device builds kernels"; exit 0
fi
echo "OpenCL: still no device can build kernels; run '$py -m cl_vision_nodes.tools.cli doctor'" >&2
exit 1
