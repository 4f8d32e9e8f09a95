"""Showing and keeping a benchmark: the header and table, the JSON record, --compare and --plot."""

from __future__ import annotations

import json
import math
from typing import Any

RECORD_FORMAT = "fastgemm-bench"
RECORD_VERSION = 1


# --- the record ----------------------------------------------------------------------------


def result_record(res, peaks, threads):
    c = res.case
    libs = {}
    for name, r in res.libs.items():
        g = res.gflops(name)
        libs[name] = {
            "gflops": g,
            "median_s": r.median,
            "calls_per_sample": r.number,
            "times_s": r.times,
            "spread": spread(r),
            "error": r.error or None,
        }
    return {
        "key": c.key,
        "group": c.group,
        "m": c.m,
        "n": c.n,
        "k": c.k,
        "batch": c.batch,
        "dtype": c.dtype,
        "layout": c.layout,
        "flops": c.flops,
        "threads": threads,
        "skipped": res.skipped or None,
        "check": res.check or None,
        "libs": libs,
        "ratio_vs_best_other": ratio(res),
        "pct_of_peak": pct_peak(res, peaks, threads),
    }


def make_record(machine, results, peaks, threads, argv, date, seconds):
    return {
        "format": RECORD_FORMAT,
        "format_version": RECORD_VERSION,
        "date": date,
        "argv": argv,
        "run_seconds": round(seconds, 1),
        "machine": machine,
        "results": [result_record(r, peaks, threads) for r in results],
    }


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _check_result_record(r: Any, i: int) -> str | None:
    """What --compare cannot use in results[i] of a record, or None."""
    if not isinstance(r, dict):
        return "is not an object"
    if not isinstance(r.get("key"), str):
        return "has no 'key' string"
    if not isinstance(r.get("threads"), int) or isinstance(r.get("threads"), bool):
        return "has no 'threads' integer"
    libs = r.get("libs")
    if not isinstance(libs, dict):
        return "has no 'libs' object"
    fg = libs.get("fastgemm")
    if fg is not None and (not isinstance(fg, dict) or not (fg.get("gflops") is None or _is_number(fg["gflops"]))):
        return "has a fastgemm entry without a numeric 'gflops'"
    r0 = r.get("ratio_vs_best_other")
    if not (r0 is None or _is_number(r0)):
        return "has a non-numeric 'ratio_vs_best_other'"
    return None


def load_record(path):
    """The record saved by --json at `path`; ValueError with a readable reason otherwise
    (checked down to every field --compare reads, so a damaged record fails before a run)."""
    try:
        with open(path) as f:
            rec = json.load(f)
    except FileNotFoundError:
        raise ValueError(f"--compare: no such file: {path}") from None
    except OSError as e:
        raise ValueError(f"--compare: cannot read {path}: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"--compare: {path} is not JSON ({e})") from None
    if not isinstance(rec, dict) or rec.get("format") != RECORD_FORMAT or not isinstance(rec.get("results"), list):
        raise ValueError(f"--compare: {path} is not a record saved by `python -m fastgemm bench --json`")
    for i, r in enumerate(rec["results"]):
        why = _check_result_record(r, i)
        if why:
            raise ValueError(f"--compare: {path} is damaged: results[{i}] {why}")
    m = rec.get("machine", {})
    if not isinstance(m, dict) or not isinstance(m.get("fastgemm", {}), dict):
        raise ValueError(f"--compare: {path} is damaged: 'machine' is not an object")
    return rec


def write_record(path, record):
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


# --- figures per case ----------------------------------------------------------------------


def ratio(res):
    mine = res.gflops("fastgemm")
    others = [res.gflops(n) for n in res.libs if n != "fastgemm"]
    others = [g for g in others if g]
    if not mine or not others:
        return None
    return mine / max(others)


def pct_peak(res, peaks, threads):
    mine = res.gflops("fastgemm")
    peak = peaks.get(res.case.dtype)
    if not mine or not peak:
        return None
    return 100.0 * mine / (peak * threads)


# --- text ----------------------------------------------------------------------------------


def _size(n):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def header(machine, date):
    i = machine["fastgemm"]
    v = machine["versions"]
    caches = ", ".join(f"{lvl} {_size(c['size'])}" for lvl, c in i["caches"].items())
    f64 = i["float64"]
    lines = [
        f"fastgemm {v['fastgemm']} benchmark, {date}",
        f"CPU:      {machine['cpu']} ({machine['usable_cpus']} usable CPUs; {machine['system']})",
        f"caches:   {caches}",
        f"kernel:   {i['kernel']} ({i['isa']}); float32 tile {i['mr']}x{i['nr']} "
        f"(MC {i['mc']}, KC {i['kc']}, NC {i['nc']}); float64 tile {f64['mr']}x{f64['nr']} "
        f"(MC {f64['mc']}, KC {f64['kc']}, NC {f64['nc']})",
        f"threads:  {machine['threads']} for every library (NumPy's BLAS pinned by {machine['pinning']})",
    ]
    peaks = machine["peak_gflops_per_core"]
    t = machine["threads"]
    lines.append(
        "FMA peak: "
        + "; ".join(f"{dt} {p:.1f} GFLOP/s per core, x{t} = {p * t:.1f}" for dt, p in peaks.items())
        + f" ({i['kernel']} kernel's FMA loop)"
    )
    others = [f"numpy {v['numpy']}"]
    for p in machine["blas"]:
        if p.get("api") in ("openblas", "mkl", "blis") or p.get("source"):
            arch = f" {p['architecture']}" if p.get("architecture") else ""
            thr = f", {p['threads']} threads" if p.get("threads") is not None else ""
            others.append(f"{p.get('api')} {p.get('version')}{arch}{thr}")
    if "torch" in v:
        others.append(f"torch {v['torch']} ({v.get('torch_blas')})")
    if "blis" in v:
        others.append(f"blis {v['blis']}")
    lines.append("versions: " + "; ".join(others) + f"; python {v['python']}")
    if machine["missing"]:
        extras = sorted({INSTALL_EXTRA.get(name, "bench") for name in machine["missing"]})
        lines.append(
            "not installed (not compared): "
            + ", ".join(machine["missing"])
            + "  -- "
            + " or ".join(f'pip install "fastgemm[{e}]"' for e in extras)
            + " adds "
            + ("it" if len(machine["missing"]) == 1 else "them")
        )
    load = machine.get("load_average")
    if load is not None and load > IDLE_LOAD:
        lines.append(
            f"warning:  load average {load:.1f} before the run: other programs are using the CPU; "
            "GFLOP/s and ratios will be low and noisy (ratios marked ? below)"
        )
    env = machine["env"]
    if env:
        lines.append("env:      " + " ".join(f"{k}={val}" for k, val in env.items()))
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if var in env:
            lines.append(f"warning:  {var} is set; it overrides OpenBLAS's own CPU detection and may slow NumPy")
    return "\n".join(lines)


def _fmt(x, spec):
    return "-" if x is None else format(x, spec)


NOISY = 0.25
# The 1-minute load average of an idle machine stays below this.
IDLE_LOAD = 0.5
# Which extra of the fastgemm package installs a missing competitor (pyproject.toml).
INSTALL_EXTRA = {"blis": "bench", "torch": "bench-torch"}


def spread(lib_result):
    """(max - min) / median of a library's samples: how steady the machine was."""
    if lib_result is None or len(lib_result.times) < 2:
        return 0.0
    t = lib_result.times
    return (max(t) - min(t)) / lib_result.median


def _gflops(g):
    if g is None:
        return "-"
    return format(g, ".0f" if g >= 1000 else ".1f" if g >= 1 else ".3f")


def best_other(res):
    """Name of the fastest library other than fastgemm on this case, or None."""
    others = [(res.gflops(n), n) for n in res.libs if n != "fastgemm" and res.gflops(n)]
    return max(others)[1] if others else None


def table(results, lib_names, peaks, threads, load_before=None, load_after=None):
    """The results as a fixed-width text table, then the notes it needs.

    A ratio is marked ``?`` when the samples of fastgemm or of the library it is compared
    with spread by more than NOISY of their median, or when the machine was not idle
    (``load_before`` above IDLE_LOAD, or ``load_after`` above what the run's own
    ``threads`` explain): such a ratio (403x was seen) says more about the machine than
    about the libraries.
    """
    busy_before = load_before is not None and load_before > IDLE_LOAD
    busy_after = load_after is not None and load_after > threads + 1.0
    doubtful = []
    # A library measured on no case at all gets no column, only its note.
    lib_names = [n for n in lib_names if n == "fastgemm" or any(r.gflops(n) for r in results)]
    cols = ["case", "dtype", "thr"] + lib_names + ["fg/best", "%peak", "check"]
    rows: list[list[str]] = []
    notes: dict[tuple[str, str], list[str]] = {}
    wrong: list[str] = []
    noisy_rows: list[str] = []
    measured = sum(1 for r in results if not r.skipped)
    for res in results:
        c = res.case
        row = [c.label(), c.dtype, str(threads)]
        if res.skipped:
            row += ["skip"] + [""] * (len(lib_names) - 1) + ["", "", ""]
            notes.setdefault(("fastgemm", res.skipped), []).append(c.label())
            rows.append(row)
            continue
        for name, r in res.libs.items():
            if r.error:
                notes.setdefault((name, r.error), []).append(c.label())
        row += [_gflops(res.gflops(name)) for name in lib_names]
        rt = ratio(res)
        unsteady = any(spread(res.libs.get(n)) > NOISY for n in ("fastgemm", best_other(res)) if n)
        mark = "?" if rt is not None and (unsteady or busy_before or busy_after) else ""
        if mark:
            doubtful.append(c.label())
        row.append("-" if rt is None else f"{rt:.2f}x{mark}")
        row.append(_fmt(pct_peak(res, peaks, threads), ".0f"))
        ok = res.check.get("ok")
        noisy = [n for n in lib_names if spread(res.libs.get(n)) > NOISY]
        if noisy:
            noisy_rows.append(c.label())
        row.append(("ok" if ok else "WRONG") + ("  ~" if noisy else ""))
        if not ok:
            wrong.append(f"{c.label()} {c.dtype}")
        rows.append(row)
    widths = [max(len(cols[i]), *(len(r[i]) for r in rows)) if rows else len(cols[i]) for i in range(len(cols))]
    left = {0, 1}

    def line(cells):
        return "  ".join(
            cell.ljust(w) if i in left else cell.rjust(w) for i, (cell, w) in enumerate(zip(cells, widths))
        )

    out = [
        "GFLOP/s (median of repeats; higher is better). fg/best: fastgemm / fastest other. "
        "%peak: fastgemm / (FMA peak x threads). int8 rows (u8s8, s8s8): GOP/s, 2 per multiply-add.",
        line(cols),
        line(["-" * w for w in widths]),
    ]
    out += [line(r) for r in rows]
    if noisy_rows:
        out.append(
            f"  ~ samples of one library differed by more than {NOISY:.0%} of their median: "
            "something else was using the CPU; rerun on a quiet machine"
        )
    if doubtful:
        why = []
        if busy_before:
            why.append(f"the load average was {load_before:.1f} before the run")
        if busy_after:
            why.append(f"the load average was {load_after:.1f} after the run on {threads} thread(s)")
        why.append("or fastgemm's or the compared library's samples were unsteady")
        out.append("  ? ratio not to be trusted: " + "; ".join(why) + "; rerun on a quiet machine")
    for (name, reason), cases in notes.items():
        shown = "every case" if len(cases) == measured and name != "fastgemm" else ", ".join(dict.fromkeys(cases))
        out.append(f"  {name} not measured on {shown}: {reason}")
    if wrong:
        out.append("")
        out.append("!" * 78)
        out.append("!! fastgemm gave a WRONG result (outside the K-scaled error bound) on: " + "; ".join(wrong))
        out.append("!! its speed on those rows means nothing; please report this with `python -m fastgemm info`.")
        out.append("!" * 78)
    return "\n".join(out)


def compare(old, new_results, peaks, threads, machine):
    """Per-case change of fastgemm's GFLOP/s and of its ratio against the other libraries."""

    def key(r):
        return (r["key"], r["threads"])

    before = {key(r): r for r in old["results"]}
    m_old = old.get("machine", {})
    lines = [
        f"Against {old.get('date', '?')} ({m_old.get('cpu', '?')}, "
        f"kernel {m_old.get('fastgemm', {}).get('kernel', '?')}):"
    ]
    head = f"{'case':<26} {'dtype':<8} {'fastgemm GFLOP/s':>22} {'change':>8} {'fg/best':>15}"
    lines += [head, "-" * len(head)]
    matched = 0
    for res in new_results:
        rec = result_record(res, peaks, threads)
        o = before.get(key(rec))
        if o is None or res.skipped:
            continue
        g0 = (o["libs"].get("fastgemm") or {}).get("gflops")
        g1 = rec["libs"]["fastgemm"]["gflops"]
        if not g0 or not g1:
            continue
        matched += 1
        r0, r1 = o.get("ratio_vs_best_other"), rec["ratio_vs_best_other"]
        rr = f"{_fmt(r0, '.2f')} -> {_fmt(r1, '.2f')}"
        lines.append(
            f"{res.case.label():<26} {res.case.dtype:<8} {g0:>9.1f} -> {g1:>9.1f} "
            f"{100.0 * (g1 / g0 - 1.0):>+7.1f}% {rr:>15}"
        )
    if not matched:
        lines.append("(no case of this run is in the old record with the same thread count)")
    if m_old.get("cpu") != machine["cpu"]:
        lines.append(
            f"note: the old record is from another CPU ({m_old.get('cpu', '?')}); only the fg/best ratios compare"
        )
    return "\n".join(lines)


# --- plot ----------------------------------------------------------------------------------


def require_matplotlib():
    """Imported before any measuring so a missing extra fails at once, not after minutes."""
    try:
        import matplotlib  # type: ignore[import-not-found, import-untyped, unused-ignore]

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found, import-untyped, unused-ignore]  # noqa: F401
    except ImportError:
        raise ValueError('--plot needs matplotlib: pip install "fastgemm[plot]"') from None


def plot_formats():
    """File extensions matplotlib can write (matplotlib must be importable)."""
    from matplotlib.backend_bases import FigureCanvasBase  # type: ignore[import-not-found, import-untyped, unused-ignore]

    return set(FigureCanvasBase.get_supported_filetypes())


def plot(path, results, lib_names, peaks, threads, machine, date):
    import matplotlib  # type: ignore[import-not-found, import-untyped, unused-ignore]

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # type: ignore[import-not-found, import-untyped, unused-ignore]

    dtypes = [dt for dt in peaks if any(r.case.square and r.case.dtype == dt for r in results)]
    fig, axes = plt.subplots(1, len(dtypes), figsize=(6.4 * len(dtypes), 4.8), squeeze=False)
    for ax, dt in zip(axes[0], dtypes):
        rows = sorted(
            (r for r in results if r.case.square and r.case.dtype == dt and not r.skipped), key=lambda r: r.case.m
        )
        for name in lib_names:
            pts = [(r.case.m, r.gflops(name)) for r in rows if r.gflops(name)]
            if pts:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, marker="o", label=name, linewidth=2.2 if name == "fastgemm" else 1.4)
        peak = peaks[dt] * threads
        ax.axhline(
            peak,
            color="k",
            linestyle="--",
            linewidth=1,
            label=f"FMA peak {peak:.0f} ({machine['fastgemm']['kernel']}, {threads} thr)",
        )
        ax.set_xscale("log", base=2)
        ax.set_xlabel("m = n = k")
        ax.set_ylabel("GFLOP/s")
        ax.set_ylim(0, peak * 1.08)
        ax.set_title(f"{dt}, {threads} thread{'s' if threads > 1 else ''}")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, fontsize="small", frameon=False)
    fig.suptitle(f"{machine['cpu']} - fastgemm {machine['versions']['fastgemm']} - {date}", fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def has_squares(cases):
    return any(c.square for c in cases)
