"""`routectl playground`: one command, a cluster kubectl and `routectl run` can talk to.

The playground runs as a subprocess on free ports, as a user would start it; the test
reads its output line by line (bounded by a deadline per wait, never asserting how long
anything took), points kubectl at it where kubectl is installed, then runs the very
`routectl run` line it printed and watches it print the life of the routes: created,
Node ready, deleted with its Node. SIGTERM ends both, the playground with status 0.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from routectl.cli.main import main

pytestmark = pytest.mark.integration

PATIENCE = 60.0
"""The longest any one wait may take before the test gives up (a bound, not a measure)."""
KUBECTL = shutil.which("kubectl")


class Output:
    """The lines a process printed so far, read without blocking past a deadline."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        self._process, self._fd = process, process.stdout.fileno()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._fd, selectors.EVENT_READ)
        self._partial = b""
        self.lines: list[str] = []

    def wait_for(self, needle: str) -> str:
        """The first line (printed so far or from now on) containing ``needle``."""
        deadline = time.monotonic() + PATIENCE
        seen = 0
        while True:
            for line in self.lines[seen:]:
                if needle in line:
                    return line
            seen = len(self.lines)
            left = deadline - time.monotonic()
            if left <= 0 or (self._process.poll() is not None and not self._ready(0)):
                pytest.fail(f"no line with {needle!r} in:\n" + "\n".join(self.lines))
            if self._ready(min(left, 1.0)):
                *complete, self._partial = (self._partial + os.read(self._fd, 65536)).split(b"\n")
                self.lines += [line.decode() for line in complete]

    def _ready(self, timeout: float) -> bool:
        return bool(self._selector.select(timeout))


def _python_m(command: list[str]) -> list[str]:
    """``routectl ...`` as this interpreter runs it (the venv's script may not be on PATH)."""
    assert command[0] == "routectl"
    return [sys.executable, "-m", "routectl", *command[1:]]


@contextlib.contextmanager
def started(command: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``command``; on the way out, SIGTERM it (and kill it if it will not stop)."""
    process = subprocess.Popen(  # noqa: S603 -- our own command line
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=PATIENCE)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        assert process.stdout is not None
        process.stdout.close()


def kubectl(kubeconfig: Path, *args: str) -> str:
    done = subprocess.run(  # noqa: S603 -- kubectl with our arguments
        [KUBECTL or "kubectl", f"--kubeconfig={kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_playground_serves_kubectl_and_routectl_run(tmp_path) -> None:
    command = ["routectl", "playground", "--dir", str(tmp_path), "--nodes", "2"]
    with started(_python_m(command)) as playground:
        out = Output(playground)
        out.wait_for("Ctrl-C stops the playground")
        kubeconfig = tmp_path / "kubeconfig"
        assert f"  export KUBECONFIG={kubeconfig}" in out.lines
        run_line = next(line for line in out.lines if line.strip().startswith("routectl run"))
        if KUBECTL is not None:
            listed = kubectl(kubeconfig, "get", "nodes")
            assert listed.split()[:5] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
            assert "playground-1   Ready" in listed
            applied = kubectl(kubeconfig, "apply", "-f", str(tmp_path / "node.yaml"))
            assert applied.strip() == "node/playground-2 created"
            described = kubectl(kubeconfig, "describe", "node", "playground-2")
            assert "PodCIDR:" in described
            assert "10.244.2.0/24" in described
        with started(_python_m(shlex.split(run_line))) as controller:
            out.wait_for("cloud: created route 10.244.0.0/24 -> playground-0")
            out.wait_for("node playground-0: NetworkUnavailable=False (RouteCreated)")
            if KUBECTL is not None:
                out.wait_for("node playground-2: NetworkUnavailable=False (RouteCreated)")
                kubectl(kubeconfig, "delete", "node", "playground-2")
                out.wait_for("cloud: deleted route 10.244.2.0/24 -> playground-2")
            controller.send_signal(signal.SIGTERM)
            assert controller.wait(timeout=PATIENCE) == 0
        playground.send_signal(signal.SIGTERM)
        out.wait_for("playground stopped")
        assert playground.wait(timeout=PATIENCE) == 0


def test_bad_playground_flags_exit_2(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["playground", "--nodes", "300"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--nodes" in err


@pytest.mark.parametrize("flag", ["--api-port", "--cloud-port"])
def test_a_port_in_use_is_one_line_naming_its_flag(flag, capsys) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as info:
            main(["playground", flag, str(port)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{flag}: cannot listen on it" in err
