#!/usr/bin/env bash
# STACK=apt: the distribution's own Python stack, as a robot with ROS from apt has it.
#
# Why: ROS's compiled Python packages on Ubuntu/Debian are built against the distribution's numpy
# 1.x, so a robot cannot pip-install numpy 2 beside them; the package must work on python3-numpy,
# python3-opencv, python3-pyopencl, python3-scipy and pocl-opencl-icd as apt installs them.
# Usage: apt_stack.sh                     install them with apt (as root or with passwordless sudo)
#        apt_stack.sh --constraints PY    print pip constraints that pin what PY sees of them
set -uo pipefail
packages="python3-numpy python3-opencv python3-pyopencl python3-scipy python3-yaml python3-venv
          pocl-opencl-icd ocl-icd-libopencl1"

if [ "${1:-}" = --constraints ]; then
  py=${2:?usage: apt_stack.sh --constraints PYTHON}
  exec "$py" - <<'PY'
from importlib.metadata import version
for name in ('numpy', 'scipy', 'pyopencl', 'pytools'):
    print(f'{name}=={version(name)}')
PY
fi

missing=$(for p in $packages; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || echo "$p"; done)
if [ -z "$missing" ]; then
  echo "apt stack: $(/usr/bin/python3 -c 'import numpy, cv2, pyopencl, scipy; print(f"numpy {numpy.__version__}, OpenCV {cv2.__version__}, pyopencl {pyopencl.VERSION_TEXT}, scipy {scipy.__version__}")')"
  exit 0
fi
bash "$(dirname "$0")/apt_install.sh" "apt stack" $missing || exit 1
exec bash "$0"
