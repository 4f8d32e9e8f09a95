#!/usr/bin/env bash
# Only kernels/*.cpp may hold AVX/AVX-512 code: everything else runs before dispatch has
# looked at the CPU, so one stray ymm instruction there is a SIGILL on import on older CPUs.
#
# 1. Non-kernel object files: no AVX/AVX-512 instruction (ymm/zmm/opmask registers, VEX/EVEX
#    encoded v* ops, k* mask ops).
# 2. Kernel object files: no global or weak function. An inline function or template from a
#    header, emitted weak in a kernel file with its ISA flags, could be the copy the linker
#    keeps for baseline callers. Kernel code must have internal linkage (kernels/*.hpp's V types
#    live in anonymous namespaces for this); only the kernel tables are exported.
# 3. The shipped _core .so: relinked unstripped from the same objects with the same command
#    (its .text must be byte-identical to the shipped one), every function holding an AVX
#    instruction must be one that only kernel objects define.
#
# Uses the build dir and installed wheel that .ci/wheel.sh leaves in $FASTGEMM_CI_WORK and
# runs that script first if they are missing. x86-64 only: on aarch64 NEON is baseline.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=${FASTGEMM_CI_WORK:-/tmp/fastgemm-ci}
BUILD=$WORK/build-wheel
[ "$(uname -m)" = x86_64 ] || { echo "isa_check.sh: x86-64 only, skipped on $(uname -m)"; exit 0; }
if [ ! -f "$BUILD/build.ninja" ] || ! ls "$WORK"/venv-user/lib/python*/site-packages/fastgemm/_core*.so >/dev/null 2>&1; then
  bash "$SRC/.ci/wheel.sh"
fi
SHIPPED=$(ls "$WORK"/venv-user/lib/python*/site-packages/fastgemm/_core*.so)
SO_NAME=$(basename "$(ls "$BUILD"/_core*.so)")

# The link step exactly as the build ran it, minus the strip that follows it, plus a new name.
LINK=$(cd "$BUILD" && ninja -t commands "$SO_NAME" | tail -1)
LINK=${LINK%%&& cd *}
LINK=${LINK//-o $SO_NAME/-o isa_check_unstripped.so}
(cd "$BUILD" && eval "$LINK")
RELINKED=$BUILD/isa_check_unstripped.so

python3 - "$BUILD" "$RELINKED" "$SHIPPED" <<'PY'
import pathlib, re, subprocess, sys

build, relinked, shipped = map(pathlib.Path, sys.argv[1:])
AVX = re.compile(r"%[yz]mm\d|%k[0-7]\b")
AVX_OP = re.compile(r"^(v|k(mov|and|andn|or|xor|xnor|not|ortest|test|shiftl|shiftr|add|unpck)[bwdq]\b)")

def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout

def avx_functions(path):
    """{function name: first AVX instruction} for every function holding one."""
    found, func = {}, "<no symbol>"
    for line in run("objdump", "-d", "--no-show-raw-insn", "-w", str(path)).splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            func = m.group(1)
            continue
        parts = line.split("\t")
        if len(parts) < 2 or not re.match(r"^\s*[0-9a-f]+:$", parts[0]):
            continue
        insn = parts[1].strip()
        if AVX_OP.match(insn) or AVX.search(insn):
            found.setdefault(func, insn)
    return found

def defined(path):
    """[(type letter, name)] of symbols the object defines."""
    out = []
    for line in run("nm", str(path)).splitlines():
        f = line.split()
        if len(f) == 3:
            out.append((f[1], f[2]))
    return out

# The core's objects and the module's; not the C++ test driver .ci/wheel.sh also builds there.
objs = sorted(o for o in build.glob("CMakeFiles/**/*.o") if "fastgemm_test_core.dir" not in str(o))
kernel = [o for o in objs if "/kernels/" in str(o)]
baseline = [o for o in objs if o not in kernel]
assert kernel and baseline, f"no objects under {build}"
fails = []

for o in baseline:
    for func, insn in avx_functions(o).items():
        fails.append(f"{o.relative_to(build)}: {func}: {insn}")

kernel_names, baseline_names = set(), set()
for o in kernel:
    for t, name in defined(o):
        kernel_names.add(name)
        # T/W/V/i: a global, weak or indirect function another object could bind to.
        if t in "TWVi" and not name.endswith("_kernels"):
            fails.append(f"{o.relative_to(build)}: exports {t} {name}: give it internal linkage")
for o in baseline:
    baseline_names.update(name for _, name in defined(o))

def text(path):
    out = pathlib.Path(str(path) + ".text")
    subprocess.run(["objcopy", "-O", "binary", "--only-section=.text", str(path), str(out)], check=True)
    return out.read_bytes()

if text(relinked) != text(shipped):
    fails.append(f"relinked {relinked.name} differs from the shipped {shipped} in .text")

kernel_funcs = 0
for func, insn in avx_functions(relinked).items():
    sym = func.split("+")[0]
    if sym in kernel_names and sym not in baseline_names:
        kernel_funcs += 1
    else:
        fails.append(f"{shipped.name}: {func}: {insn} (not a kernel-only function)")

print(f"isa_check: {len(baseline)} baseline objects, {len(kernel)} kernel objects, "
      f"{kernel_funcs} kernel functions with AVX code in {shipped.name}")
if fails:
    print("ISA check FAILED:\n  " + "\n  ".join(fails))
    sys.exit(1)
print("isa_check: OK")
PY
