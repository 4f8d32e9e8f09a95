"""The benchmark's shapes: what people multiply, how operands are laid out, and how to build them.

Shapes are written m x n x k: C is m x n and the inner dimension is k, so an LLM decode step
(one token times a 4096 x 4096 weight) is 1x4096x4096.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

DTYPES = ("float32", "float64")
# 2-byte inputs (float32 accumulation), only when asked for: --dtype bfloat16,float16.
# bfloat16 is ml_dtypes' dtype (imported only when a bfloat16 case is built).
LOWP_DTYPES = ("bfloat16", "float16")
# int8 products (exact int32 C), only when asked for: --dtype u8s8,s8s8. The name gives A's and
# B's types (u8s8: uint8 A, int8 B); rates are GOP/s, 2 operations per multiply-add.
INT8_DTYPES = ("u8s8", "s8s8")
INT8_SIZES = (512, 2048)
# A decode step, x @ W with one row (the int8 matrix-vector path), beside float32 (m, n, k).
INT8_DECODE = (1, 4096, 4096)


def np_dtype(name):
    """The NumPy dtype of a suite dtype name (bfloat16 through ml_dtypes; an int8 product: A's)."""
    if name in INT8_DTYPES:
        return np.dtype(np.uint8 if name == "u8s8" else np.int8)
    if name == "bfloat16":
        try:
            import ml_dtypes  # type: ignore[import-not-found, import-untyped, unused-ignore]
        except ImportError:
            raise RuntimeError("bfloat16 cases need ml_dtypes: pip install 'fastgemm[bf16]'") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


# How op(A) and op(B) sit in memory. The contiguous layout is what most users pass; the
# others are views fastgemm must read in place (transposes are swapped strides, a step is a
# larger column stride), so their cost against "contiguous" shows what a copy would save.
LAYOUTS = {
    "contiguous": "A, B C-ordered",
    "A.T": "A is a transposed view",
    "B.T": "B is a transposed view",
    "A.T,B.T": "both transposed views",
    "B[:,::2]": "B is a column-stepped view",
}


@dataclass(frozen=True)
class Case:
    group: str
    m: int
    n: int
    k: int
    dtype: str
    batch: int = 0  # 0: plain 2-D product; b > 0: b stacked products through matmul
    layout: str = "contiguous"
    # "": the product alone; an activation name: a linear layer act(x @ W + bias), fastgemm's
    # epilogue fused against each library's composed form (see linear_numpy).
    activation: str = ""

    @property
    def flops(self):
        return 2 * self.m * self.n * self.k * max(self.batch, 1)

    @property
    def shape(self):
        return f"{self.m}x{self.n}x{self.k}"

    @property
    def square(self):
        return (
            self.group != SWITCH_DOT and self.batch == 0 and self.layout == "contiguous" and self.m == self.n == self.k
        )

    @property
    def key(self):
        """Identifies the same measurement across runs (for --compare)."""
        key = f"{self.shape}/b{self.batch}/{self.dtype}/{self.layout}"
        if self.group == SWITCH_DOT:
            return f"{key}/np.dot"
        return f"{key}/{self.activation}" if self.activation else key

    def label(self):
        s = self.shape if not self.batch else f"{self.batch}*{self.shape}"
        if self.group == SWITCH_DOT:
            return f"np.dot {s}"
        if self.activation:
            s = f"{s} +b,{self.activation}"
        return s if self.layout == "contiguous" else f"{s} {self.layout}"


SQUARES = (64, 128, 256, 512, 1024, 2048, 4096)
# One small product per call, where Python's per-call cost and NumPy's own loop decide.
SMALL = (4, 8, 16, 32, 48, 96)
ODD = ((127, 129, 131), (1000, 1000, 1000))
# Neither square nor a model layer (m, n, k, layout): points through a 3 x 3 transform, an
# outer-product-like k = 3, a 10-class linear model, a small layer x @ W.T (W stored out x in),
# a narrow product whose A is a transposed view, and a Gram matrix X.T @ X of 20 features over
# 20000 samples.
RECT = (
    (3000, 3, 3, "contiguous"),
    (3000, 3000, 3, "contiguous"),
    (2000, 10, 1000, "contiguous"),
    (8, 256, 256, "B.T"),
    (130, 20, 1000, "A.T"),
    (20, 20, 20000, "A.T"),
)
LLM = (
    ("llm", 2048, 11008, 4096),  # prefill: 2048 tokens through an MLP up-projection
    ("llm", 1, 4096, 4096),  # decode, batch 1
    ("llm", 4, 4096, 4096),  # decode, batch 4
    ("llm", 16, 4096, 4096),  # decode, batch 16
    ("llm", 4096, 4096, 16),  # small K (low-rank update)
    ("llm", 8192, 64, 8192),  # one attention head's projection
)
# Pre-packed weights: gemm(x, pack(W)) against gemm(x, W) (the same shape, unpacked, in the row
# beside it) and the others' x @ W, K = N = 4096: decode steps and small batches of tokens.
PACKED_M = (1, 4, 16, 64, 256)
PACKED_KN = 4096
# The layout of the packed rows: fastgemm gets fastgemm.pack(b), packed before timing; the
# other libraries get b itself.
PACKED_LAYOUT = "packed"
STACKED = ((100000, 3), (10000, 8), (4096, 16), (1000, 32), (1000, 64))
# Stacks of x.T @ W.T items (both operands transposed views): each item's B or C moves once.
STACKED_TRANSPOSED = ((10000, 8), (4096, 16), (1000, 32))
# np.dot itself, switch on ("fastgemm": fastgemm's np.dot) against NumPy's own np.dot: the
# per-call cost of the replaced function at small sizes, the fast path at 512.
SWITCH_DOT = "switch dot"
SWITCH_DOT_SIZES = (8, 16, 32, 64, 512)
# A linear layer y = gelu_tanh(x @ W + b), W 4096 x 4096 (packed once for fastgemm), at batch
# sizes M (issue 12's targets).
LINEAR = (1, 16, 128, 512)
LINEAR_SIZE = 4096
STRIDED_SIZE = 2048  # the size issue 2's "strided costs <= 5%" target is stated at


def _both(dtype_choice, default):
    if dtype_choice is None:
        return default
    if dtype_choice == "all":
        return DTYPES
    return tuple(dtype_choice.split(","))


def full_suite(dtype_choice=None):
    """The default run. LLM shapes are float32 by default (model weights are never float64);
    --dtype float64 or all runs them in float64 as well."""
    cases = []
    # The int8 group: each int8 product beside fastgemm's float32 at the same sizes.
    int8 = [dt for dt in _both(dtype_choice, ()) if dt in INT8_DTYPES]
    if int8:
        cases += [Case("int8", s, s, s, dt) for s in INT8_SIZES for dt in (*int8, "float32")]
        cases += [Case("int8", *INT8_DECODE, dt) for dt in (*int8, "float32")]
        # Pre-packed int8 weights beside the same product unpacked.
        cases += packed_suite(int8)
    both = tuple(dt for dt in _both(dtype_choice, DTYPES) if dt not in INT8_DTYPES)
    single = tuple(dt for dt in _both(dtype_choice, ("float32",)) if dt not in INT8_DTYPES)
    for dt in both:
        cases += [Case("small", s, s, s, dt) for s in SMALL]
        cases += [Case("square", s, s, s, dt) for s in SQUARES]
        cases += [Case("odd", m, n, k, dt) for m, n, k in ODD]
        cases += [Case("rect", m, n, k, dt, layout=lay) for m, n, k, lay in RECT]
    for dt in single:
        cases += [Case(g, m, n, k, dt) for g, m, n, k in LLM]
        cases += linear_suite(dt)
        # An unpacked row the llm group already has (1 and 16 rows) is not repeated; fastgemm.pack
        # takes float32 and float64 (and int8, above), not the 2-byte dtypes.
        if dt in DTYPES:
            seen = {c.key for c in cases}
            cases += [c for c in packed_suite((dt,)) if c.key not in seen]
    for dt in both:
        cases += [Case("stacked", s, s, s, dt, batch=b) for b, s in STACKED]
        cases += [Case("stacked", s, s, s, dt, batch=b, layout="A.T,B.T") for b, s in STACKED_TRANSPOSED]
        s = STRIDED_SIZE
        cases += [Case("strided", s, s, s, dt, layout=lay) for lay in LAYOUTS if lay != "contiguous"]
    return cases + switch_dot_suite(dtype_choice)


def switch_dot_suite(dtype_choice=None):
    """np.dot on single squares with the switch on against NumPy's own np.dot (float32 and float64:
    the dtypes the switch computes)."""
    dts = [dt for dt in _both(dtype_choice, DTYPES) if dt in DTYPES]
    return [Case(SWITCH_DOT, s, s, s, dt) for dt in dts for s in SWITCH_DOT_SIZES]


def packed_suite(dtypes):
    """The "packed" group: each M in PACKED_M, x @ W unpacked then pre-packed, K = N = PACKED_KN."""
    lays = ("contiguous", PACKED_LAYOUT)
    return [Case("packed", m, PACKED_KN, PACKED_KN, dt, layout=lay) for m in PACKED_M for dt in dtypes for lay in lays]


def linear_suite(dtype="float32"):
    """The "linear" group: gelu_tanh(x @ W + b), K = N = 4096, M in LINEAR, as an inference layer
    runs it: fastgemm's fused epilogue on W packed once (issue 12's form), the others composed."""
    return [
        Case("linear", m, LINEAR_SIZE, LINEAR_SIZE, dtype, layout=PACKED_LAYOUT, activation="gelu_tanh") for m in LINEAR
    ]


def linear_bias(case):
    """The bias of a linear case: n values of the case's dtype, the same on every run."""
    return np.linspace(-1.0, 1.0, case.n).astype(np_dtype(case.dtype))


def linear_numpy(x, w, bias):
    """gelu_tanh(x @ w + bias) composed in NumPy with in-place operations, as a careful user
    writes it: the product, then one temporary for tanh's argument, no other allocation."""
    y = x @ w
    y += bias
    t = y * y
    t *= 0.044715
    t += 1.0
    t *= y
    t *= np.sqrt(2.0 / np.pi)  # sqrt(2/pi) (y + 0.044715 y^3)
    np.tanh(t, out=t)
    t += 1.0
    t *= 0.5
    y *= t
    return y


def quick_suite(dtype_choice=None):
    """A few shapes that finish in seconds: a square per cache regime and one LLM decode step."""
    return [
        Case(g, m, n, k, dt)
        for dt in _both(dtype_choice, ("float32",))
        for g, m, n, k in (
            ("square", 256, 256, 256),
            ("square", 1024, 1024, 1024),
            ("square", 2048, 2048, 2048),
            ("llm", 16, 4096, 4096),
        )
    ]


_SHAPE = re.compile(r"^(?:(\d+)\*)?(\d+)(?:x(\d+)x(\d+))?$")


def parse_shapes(text, dtype_choice=None):
    """'512,1024x2048x256,1000*64' -> cases. N is N x N x N; M x N x K; B*... is B stacked."""
    cases = []
    items = [t.strip() for t in text.split(",")]
    if not any(items):
        raise ValueError("--shapes: empty shape list")
    for item in items:
        mt = _SHAPE.match(item.lower().replace(" ", ""))
        if not mt:
            raise ValueError(
                f"--shapes: cannot read {item!r}; expected N, MxNxK or B*MxNxK (e.g. 512,1024x2048x256,1000*64)"
            )
        b, m, n, k = mt.groups()
        m = int(m)
        n, k = (int(n), int(k)) if n else (m, m)
        batch = int(b) if b else 0
        if min(m, n, k) < 1 or (b and batch < 1):
            raise ValueError(f"--shapes: {item!r} has a zero dimension; every size must be >= 1")
        group = "stacked" if batch else ("square" if m == n == k else "custom")
        for dt in _both(dtype_choice, DTYPES):
            cases.append(Case(group, m, n, k, dt, batch=batch))
    return cases


def operands(case, rng):
    """(a, b) for one case, laid out as case.layout says; op(a) @ op(b) is m x n."""
    dt = np_dtype(case.dtype)
    m, n, k = case.m, case.n, case.k

    if case.dtype in INT8_DTYPES:  # full-range A (uint8 or int8) and int8 B, C-ordered

        def full_range(t, *shape):
            return rng.integers(t.min, t.max + 1, size=shape).astype(t.dtype)

        return full_range(np.iinfo(dt), m, k), full_range(np.iinfo(np.int8), k, n)

    def rand(*shape):
        x = rng.uniform(-1.0, 1.0, size=shape)
        return (x if dt.itemsize > 2 else x.astype(np.float32)).astype(dt, copy=False)

    pre = (case.batch,) if case.batch else ()
    lay = case.layout
    a = np.swapaxes(rand(*pre, k, m), -1, -2) if "A.T" in lay else rand(*pre, m, k)
    if lay == "B[:,::2]":
        b = rand(*pre, k, 2 * n)[..., ::2]
    elif "B.T" in lay:
        b = np.swapaxes(rand(*pre, n, k), -1, -2)
    else:
        b = rand(*pre, k, n)
    return a, b
