#!/usr/bin/env bash
# Installs the Debian packages Ember builds and tests with; does nothing when they are
# all present. Run as root (or with sudo) on Debian 12.
set -euo pipefail

packages=(
  g++ cmake ninja-build ccache pkg-config
  libopenblas-dev libsleef-dev libfftw3-dev libdnnl-dev nlohmann-json3-dev libzip-dev
  libgtest-dev googletest
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
