"""Hypothesis profiles and the per-kernel fixture every gemm test runs under."""

import os

import pytest
from hypothesis import HealthCheck, settings

import fastgemm

# "ci": few examples, reproducible, no per-example deadline (a shared 2-core runner stalls);
# "dev": more examples for local runs. HYPOTHESIS_PROFILE picks one explicitly.
settings.register_profile(
    "ci",
    max_examples=25,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))

KERNELS = fastgemm.available_kernels()


@pytest.fixture(params=KERNELS)
def kernel(request):
    """Runs the test with each kernel this machine can run, restoring the one in use after."""
    before = fastgemm.get_kernel()
    fastgemm.set_kernel(request.param)
    try:
        yield request.param
    finally:
        fastgemm.set_kernel(before)
