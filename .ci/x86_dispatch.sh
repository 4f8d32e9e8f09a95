#!/usr/bin/env bash
# Dispatch on x86-64 CPUs older than this one, emulated by qemu-x86_64 (user mode):
#   - the C++ test driver, linked from the wheel's own objects: first in full on this CPU (the
#     shipped -O3 code; the sanitizer build is another compilation), then with --quick (each
#     product family once per kernel set) under Haswell (AVX2, no AVX-512: avx2 + generic),
#     Nehalem and the bare qemu64 model (no AVX at all: generic only, no SIGILL);
#   - the installed wheel's module in Python: Haswell picks avx2, Nehalem picks generic, and
#     both compute correct products. (Python is not run on qemu64: NumPy 2 itself needs
#     x86-64-v2, i.e. SSE4.2/POPCNT, and dies with SIGILL there before fastgemm loads.)
# Uses the build dir and venv with the installed wheel that .ci/wheel.sh leaves in
# $FASTGEMM_CI_WORK and runs that script first if they are missing. x86-64 only.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=${FASTGEMM_CI_WORK:-/tmp/fastgemm-ci}
[ "$(uname -m)" = x86_64 ] || { echo "x86_dispatch.sh: x86-64 only, skipped on $(uname -m)"; exit 0; }

if ! command -v qemu-x86_64 >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends qemu-user
fi
qemu-x86_64 --version | head -1
# qemu warns about CPU-model flags TCG cannot emulate (TSX, x2apic, ...): none that we use.
emu() { local cpu=$1; shift; qemu-x86_64 -cpu "$cpu" "$@" 2> >(grep -v "TCG doesn't support requested feature" >&2); }

echo "== C++ test driver"
DRIVER=$WORK/build-wheel/fastgemm_test_core
[ -x "$DRIVER" ] || bash "$SRC/.ci/wheel.sh"
OUT=$("$DRIVER") || { echo "$OUT"; echo "driver failed on this CPU"; exit 1; }
echo "this CPU: $(grep '^kernel ' <<<"$OUT" | awk '{print $2 "=" $3}' | paste -sd' '); $(tail -1 <<<"$OUT")"
for spec in "Haswell:avx2=ok generic=ok" "Nehalem:generic=ok" "qemu64:generic=ok"; do
  cpu=${spec%%:*}; want=${spec#*:}
  OUT=$(emu "$cpu" "$DRIVER" --quick) || { echo "$OUT"; echo "driver failed under -cpu $cpu"; exit 1; }
  got=$(grep '^kernel ' <<<"$OUT" | awk '{print $2 "=" $3}' | paste -sd' ')
  echo "-cpu $cpu --quick: $got; $(tail -1 <<<"$OUT")"
  [ "$got" = "$want" ] || { echo "$OUT"; echo "-cpu $cpu: expected '$want'"; exit 1; }
done

echo "== installed wheel, in Python"
ls "$WORK"/venv-user/lib/python*/site-packages/fastgemm/_core*.so >/dev/null 2>&1 || bash "$SRC/.ci/wheel.sh"
PY=$WORK/venv-user/bin/python
cat > "$WORK/dispatch_check.py" <<'PY'
import sys

import numpy as np

import fastgemm as fg

want = sys.argv[1]
print(f"  kernel {fg.get_kernel()}, available {fg.available_kernels()}, python {sys.prefix}")
assert fg.get_kernel() == want, f"picked {fg.get_kernel()}, expected {want}"
assert "avx512" not in fg.available_kernels(), "qemu has no AVX-512: dispatch must not offer it"
rng = np.random.default_rng(0)
for dtype in (np.float32, np.float64):
    u = np.finfo(dtype).eps / 2
    for m, n, k, ta in ((1, 1, 1, False), (7, 17, 5, False), (13, 9, 33, True)):
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        c0 = rng.standard_normal((m, n)).astype(dtype)
        c = c0.copy()
        fg.gemm(a, b, c, alpha=0.5, beta=-1.0, trans_a=ta)
        op_a = (a.T if ta else a).astype(np.longdouble)
        exact = 0.5 * (op_a @ b.astype(np.longdouble)) - c0.astype(np.longdouble)
        bound = 2 * (k + 1) * u * (0.5 * (np.abs(op_a) @ np.abs(b)) + np.abs(c0))
        assert np.all(np.abs(c - exact) <= bound), f"{np.dtype(dtype).name} {m}x{n}x{k}: wrong product"
print("  ok")
PY
for spec in Haswell:avx2 Nehalem:generic; do
  cpu=${spec%%:*}; want=${spec#*:}
  echo "-cpu $cpu:"
  # The venv's bin/python is a symlink to the base interpreter; qemu follows it while Python
  # still sees the venv path as argv[0], finds pyvenv.cfg and so the installed wheel.
  (cd "$WORK" && emu "$cpu" "$PY" "$WORK/dispatch_check.py" "$want")
done
echo "x86_dispatch.sh: OK"
