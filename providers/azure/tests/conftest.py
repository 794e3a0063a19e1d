"""Keep looptime's hook away from synchronous tests (routectl.testing.looptime_hook)."""

from routectl.testing.looptime_hook import pytest_pyfunc_call

__all__ = ["pytest_pyfunc_call"]
