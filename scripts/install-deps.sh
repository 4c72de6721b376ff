#!/usr/bin/env bash
# Installs the Debian packages clustersim needs to build and test, when any is missing.
# Run as root it uses apt-get; otherwise it names what to install and fails.
set -euo pipefail
packages=(cmake ninja-build g++ make libboost-graph-dev libeigen3-dev nlohmann-json3-dev libgtest-dev
          libcli11-dev)
if [[ "${1:-}" == "--fuzz" ]]; then packages+=(clang libclang-rt-dev); fi
# Optional: OpenMPI for `mpirun clustersim sweep` (and its test), and Chromium for the test that opens
# `clustersim report`'s pages in a headless browser (ctest -L browser). Installed when this runs as
# root; otherwise their absence only leaves that feature out of the build, or skips that test.
optional=(libopenmpi-dev openmpi-bin chromium)
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done
if [[ $(id -u) -eq 0 ]]; then
  for p in "${optional[@]}"; do installed "$p" || missing+=("$p"); done
fi
[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ $(id -u) -ne 0 ]]; then
  echo "clustersim: missing Debian packages: ${missing[*]}" >&2
  echo "install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "clustersim: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
