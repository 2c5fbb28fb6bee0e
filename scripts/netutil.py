"""Loopback helpers shared by the benchmarks: a free port, and a bounded wait for a server."""

from __future__ import annotations

import socket
import subprocess
import threading
import time


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """Bounded poll until the server accepts connections."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited early with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            threading.Event().wait(0.05)
    raise SystemExit(f"nothing listens on port {port}")


def stop_server(process: subprocess.Popen[bytes], log: object | None = None) -> None:
    """Terminate a server process (kill it after 10 s) and close its log file."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
    if log is not None:
        log.close()  # type: ignore[attr-defined]
