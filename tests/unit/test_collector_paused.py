"""The garbage collector is held back only inside, and left as it was found."""

from __future__ import annotations

import gc

import pytest

from routectl.kube.decode import collector_paused


def test_the_collector_is_off_inside_and_back_on_after_even_on_error() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError
    assert gc.isenabled()


def test_a_collector_turned_off_by_someone_else_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
