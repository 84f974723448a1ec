"""Process supervision shared by the Lambda init and the ECS agent (standard library only).

The problem it solves: LocalStack starts our processes from short-lived worker
threads and can itself be SIGKILLed. `PR_SET_PDEATHSIG` fires when the *thread*
that forked exits, so it cannot tie a child to LocalStack; instead a small
supervisor process polls its parent pid and, when the parent is gone or asks it to
stop (SIGTERM), kills the whole process group of the program it runs. The program
itself is started from the supervisor's main thread (which lives as long as the
supervisor), so there PDEATHSIG is safe and covers a SIGKILLed supervisor too.

Run as `python -m live_ci_localcloud.supervise --parent-pid PID -- CMD ARGS...`:
the exit code is the program's (128+N when it died of signal N, like Docker).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence

PR_SET_PDEATHSIG = 1
PARENT_POLL_SECONDS = 0.2
# Docker's default grace period is 10 s; ours is shorter because nothing local
# needs long to flush, and teardown should stay quick.
STOP_GRACE_SECONDS = 3.0


def _die_with_parent() -> None:
    """preexec_fn: SIGKILL this child when the thread that forked it exits."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except OSError:
        pass


def spawn_group(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    stdout: int | None = None,
    stderr: int | None = None,
) -> subprocess.Popen[bytes]:
    """Start argv as the leader of a new session/process group that dies with us.

    Must be called from a thread that outlives the child (the main thread).
    """
    return subprocess.Popen(
        list(argv),
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )


def kill_group(proc: subprocess.Popen[bytes], grace: float = STOP_GRACE_SECONDS) -> None:
    """SIGTERM the process group of proc, SIGKILL it after `grace` seconds."""
    if proc.poll() is not None:
        # The leader is gone, but children in its group may remain.
        _signal_group(proc.pid, signal.SIGKILL)
        return
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    _signal_group(proc.pid, signal.SIGKILL)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def watch_parent(parent_pid: int, on_gone: Callable[[], None]) -> threading.Thread:
    """Call on_gone (once) as soon as parent_pid is no longer our parent."""

    def loop() -> None:
        while True:
            if os.getppid() != parent_pid:
                on_gone()
                return
            time.sleep(PARENT_POLL_SECONDS)

    thread = threading.Thread(target=loop, name="parent-watch", daemon=True)
    thread.start()
    return thread


def exit_status(returncode: int) -> int:
    """Popen's negative 'killed by signal N' as the shell/Docker convention 128+N."""
    return 128 - returncode if returncode < 0 else returncode


def parse_command_line(args: Sequence[str]) -> tuple[int, list[str]]:
    """`--parent-pid PID [--] CMD ARGS...`, parsed by hand: argparse is about 9 ms of
    every ECS task's launch, which this process is on the path of."""
    rest = list(args)
    if len(rest) < 2 or rest[0] != "--parent-pid":
        raise SystemExit("supervise: usage: --parent-pid PID [--] CMD ARGS...")
    if not rest[1].isdigit():
        raise SystemExit(f"supervise: --parent-pid {rest[1]!r} is not a process id")
    parent_pid, command = int(rest[1]), rest[2:]
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise SystemExit("supervise: no command given")
    return parent_pid, command


def main(args: Sequence[str] | None = None) -> int:
    parent_pid, command = parse_command_line(sys.argv[1:] if args is None else args)
    if os.getppid() != parent_pid:
        return 137  # the parent died before we got going
    try:
        child = spawn_group(command)
    except OSError as e:
        print(f"live-ci local cloud: cannot start {command[0]!r}: {e}", file=sys.stderr, flush=True)
        return 127 if isinstance(e, FileNotFoundError) else 126

    stopping = threading.Event()

    def stop(*_: object) -> None:
        if not stopping.is_set():
            stopping.set()
            threading.Thread(target=kill_group, args=(child,), daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    watch_parent(parent_pid, stop)
    returncode = child.wait()
    # Leftover grandchildren (e.g. a background job of a shell script) go too.
    _signal_group(child.pid, signal.SIGKILL)
    return exit_status(returncode)


if __name__ == "__main__":
    sys.exit(main())
