#!/usr/bin/env bash
# Installs the Debian packages modsim needs, only those missing. Safe to run repeatedly.
#   scripts/deps.sh            build + test dependencies (Boost, fmt, OpenBLAS, GoogleTest, Qt 6, ccache)
#   scripts/deps.sh --no-gui   the same without Qt 6
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache git
  libboost1.81-dev libboost-json1.81-dev libboost-program-options1.81-dev
  libfmt-dev libopenblas-dev libgtest-dev
)
if [[ "${1:-}" != "--no-gui" ]]; then
  # libqt6opengl6-dev: Qt6Charts needs Qt6OpenGL, which qt6-base-dev does not pull in.
  packages+=(qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev xvfb)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "deps: all ${#packages[@]} packages present" >&2
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done" >&2
