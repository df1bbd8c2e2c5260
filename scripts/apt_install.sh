#!/usr/bin/env bash
# Install Debian/Ubuntu packages with apt-get, as root or with passwordless sudo, for the set-up
# scripts (ensure_opencl.sh, apt_stack.sh); without either it prints the command to run.
# Usage: apt_install.sh LABEL PACKAGE...   (LABEL starts each line it prints)
set -uo pipefail
label=${1:?usage: apt_install.sh LABEL PACKAGE...}; shift
packages="$*"
if ! command -v apt-get >/dev/null; then
  echo "$label: no apt-get here; install $packages (or their equivalents) by hand" >&2; exit 1
fi
if [ "$(id -u)" = 0 ]; then sudo=; elif sudo -n true 2>/dev/null; then sudo="sudo -n"; else
  echo "$label: installing needs root; run: sudo apt-get install -y $packages" >&2; exit 1
fi
echo "$label: installing $packages with apt-get"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y -q --no-install-recommends $packages >/dev/null ||
  { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q --no-install-recommends $packages >/dev/null; } ||
  { echo "$label: apt-get could not install $packages" >&2; exit 1; }
