#!/usr/bin/env bash
# The core and its C++ test driver cross-compiled for aarch64 (Debian's g++-aarch64-linux-gnu)
# and run under qemu-aarch64: the NEON kernel must be the one chosen by default, and it and
# the generic kernel must pass every case of the driver. Standalone: bash .ci/cross_aarch64.sh
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=${FASTGEMM_CI_WORK:-/tmp/fastgemm-ci}
BUILD=$WORK/build-aarch64
SYSROOT=/usr/aarch64-linux-gnu

if ! command -v aarch64-linux-gnu-g++ >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends g++-aarch64-linux-gnu qemu-user
fi
aarch64-linux-gnu-g++ --version | head -1
qemu-aarch64 --version | head -1

rm -rf "$BUILD"
cmake -S "$SRC" -B "$BUILD" -DCMAKE_TOOLCHAIN_FILE="$SRC/cmake/aarch64-linux-gnu.cmake" \
  -DFASTGEMM_PYTHON=OFF -DFASTGEMM_TESTS=ON -DCMAKE_BUILD_TYPE=Release
nice -n 19 cmake --build "$BUILD" -j "$(nproc)"
file "$BUILD/fastgemm_test_core" | grep -q 'ARM aarch64' || { echo "driver is not an aarch64 binary"; exit 1; }

OUT=$(qemu-aarch64 -L "$SYSROOT" "$BUILD/fastgemm_test_core") || { echo "$OUT"; echo "driver failed under qemu-aarch64"; exit 1; }
echo "$OUT"
# The driver walks runnable_kernels() best first; the first is what dispatch picks by default.
KERNELS=$(grep '^kernel ' <<<"$OUT" | awk '{print $2 "=" $3}' | paste -sd' ')
[ "$KERNELS" = "neon=ok generic=ok" ] || { echo "expected 'neon=ok generic=ok', got '$KERNELS'"; exit 1; }
echo "cross_aarch64.sh: OK (neon chosen by default; neon and generic pass under qemu-aarch64)"
