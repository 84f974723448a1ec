#!/usr/bin/env python3
"""Runs the workspace's test binaries several at a time (make test's last step).

`cargo test` runs its test binaries one after another: on this 2-core machine
the end-to-end binaries alone wait ~5 minutes on the local cloud while both
cores idle. This builds them once (`cargo test --no-run`), then runs whole
binaries in a pool of --jobs, longest first (the durations of the last run,
kept in the target dir), each with the working directory and CARGO_* variables
cargo gives it. Each binary's output is printed whole when it ends (never
interleaved), and the last line is one libtest summary of all of them.

Why not cargo-nextest: it runs every test in a process of its own, and our
binaries share set-up per process (the e2e binaries deploy the module into the
local cloud once and run their scenarios in order against it): per test, that
set-up would run 13 times. --env gives one binary variables of its own: the
e2e pipeline and github_app binaries would apply the same deployment in one
local cloud, so `make test` points github_app at a local cloud of its own and
both run beside each other. --long names binaries known to be long (the e2e
ones): without recorded durations (a fresh clone) they start first.

    scripts/test-binaries.py [--jobs N] [--long PKG::TARGET]... [--test-arg ARG]...
                             [--env PKG::TARGET:NAME=VALUE]... [-- CARGO TEST ARGS]

Arguments after `--` go to `cargo test --no-run` (e.g. `--locked --workspace`).
Exits non-zero when a binary fails, naming each.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

RESULT = re.compile(
    r"^test result: (\w+)\. (\d+) passed; (\d+) failed; (\d+) ignored; "
    r"(\d+) measured; (\d+) filtered out"
)


@dataclass
class Binary:
    """One test executable as cargo built it."""

    package: str
    name: str
    kind: str
    src: str
    executable: str
    manifest_dir: str
    output: str = ""
    returncode: int | None = None
    seconds: float = 0.0
    span: tuple[float, float] = (0.0, 0.0)
    counts: list[int] = field(default_factory=lambda: [0] * 5)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """Stable across builds (the executable's hash suffix is not)."""
        return f"{self.package}::{self.kind}::{self.name}"

    @property
    def ok(self) -> bool:
        # A binary that died without its summary line failed, whatever its code.
        return self.returncode == 0 and re.search(RESULT.pattern, self.output, re.MULTILINE) is not None


def build(cargo: str, cargo_args: list[str]) -> list[Binary]:
    """Builds every test binary, returning them (diagnostics go to stderr)."""
    cmd = [cargo, "test", "--no-run", "--message-format=json-render-diagnostics", *cargo_args]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    binaries = []
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") != "compiler-artifact" or not msg.get("profile", {}).get("test"):
            continue
        if not msg.get("executable"):
            continue
        target = msg["target"]
        binaries.append(
            Binary(
                package=msg["package_id"].split("#")[-1].split("@")[0].split("/")[-1],
                name=target["name"],
                kind=target["kind"][0],
                src=target["src_path"],
                executable=msg["executable"],
                manifest_dir=str(Path(msg["manifest_path"]).parent),
            )
        )
    if proc.returncode != 0:
        sys.exit(f"test-binaries: `{' '.join(cmd)}` failed with exit code {proc.returncode}")
    return binaries


def history_path() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR", "target")) / "test-binaries-durations.json"


def load_history() -> dict[str, float]:
    try:
        return {k: float(v) for k, v in json.loads(history_path().read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def run_one(binary: Binary, cargo: str, test_args: list[str]) -> None:
    env = dict(os.environ)
    # What cargo sets for a test binary it runs (tests read some at run time).
    env.update(
        CARGO=cargo,
        CARGO_MANIFEST_DIR=binary.manifest_dir,
        CARGO_PKG_NAME=binary.package,
        CARGO_CRATE_NAME=binary.name.replace("-", "_"),
    )
    env.update(binary.env)
    started = time.monotonic()
    proc = subprocess.run(
        [binary.executable, *test_args],
        cwd=binary.manifest_dir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        check=False,
    )
    binary.seconds = time.monotonic() - started
    binary.span = (started, time.monotonic())
    binary.output = proc.stdout
    binary.returncode = proc.returncode
    for line in proc.stdout.splitlines():
        m = RESULT.match(line)
        if m:
            binary.counts = [a + int(b) for a, b in zip(binary.counts, m.groups()[1:], strict=True)]


def parse_env(specs: list[str]) -> dict[str, dict[str, str]]:
    """`PKG::TARGET:NAME=VALUE` specs, by target; a malformed one is an error quoting it."""
    by_target: dict[str, dict[str, str]] = {}
    for spec in specs:
        m = re.fullmatch(r"([\w-]+::[\w-]+):([A-Za-z_][A-Za-z0-9_]*)=(.*)", spec, re.DOTALL)
        if not m:
            raise ValueError(f"--env {spec!r}: expected PKG::TARGET:NAME=VALUE")
        by_target.setdefault(m.group(1), {})[m.group(2)] = m.group(3)
    return by_target


def check_named(binaries: list[Binary], option: str, named: set[str]) -> None:
    """An error naming each PKG::TARGET of `option` that no binary has."""
    unknown = sorted(named - {f"{b.package}::{b.name}" for b in binaries})
    if unknown:
        raise ValueError(f"{option} names no test binary: {', '.join(repr(u) for u in unknown)}")


def apply_env(binaries: list[Binary], by_target: dict[str, dict[str, str]]) -> None:
    """Gives each named target its variables; a name no binary has is an error naming it."""
    check_named(binaries, "--env", set(by_target))
    for b in binaries:
        b.env.update(by_target.get(f"{b.package}::{b.name}", {}))


def schedule(binaries: list[Binary], history: dict[str, float], long: set[str]) -> list[Binary]:
    """The binaries in the order to start them: longest first."""

    def guess(b: Binary) -> float:
        # Without history (a fresh clone): the binaries named long, then
        # integration tests, then unit tests.
        if b.key in history:
            return history[b.key]
        if f"{b.package}::{b.name}" in long:
            return 1000.0
        return 10.0 if b.kind == "test" else 1.0

    return sorted(binaries, key=guess, reverse=True)


def run_pool(queue: list[Binary], jobs: int, cargo: str, test_args: list[str], echo: bool = True) -> float:
    """Runs the binaries `jobs` at a time, in order, printing each one's output whole; the wall time."""
    lock = threading.Lock()
    queue = list(queue)
    started = time.monotonic()

    def worker() -> None:
        while True:
            with lock:
                if not queue:
                    return
                binary = queue.pop(0)
            run_one(binary, cargo, test_args)
            if not echo:
                continue
            with lock:
                rel = os.path.relpath(binary.src, binary.manifest_dir)
                print(f"     Running {rel} ({binary.package}, {binary.seconds:.1f} s)")
                print(binary.output, end="" if binary.output.endswith("\n") else "\n", flush=True)

    threads = [threading.Thread(target=worker) for _ in range(min(jobs, len(queue)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - started


def report(binaries: list[Binary], wall: float) -> tuple[list[str], int]:
    """The closing lines (libtest's summary last) and the exit code."""
    lines = []
    slowest = sorted(binaries, key=lambda b: b.seconds, reverse=True)[:5]
    lines.append("test-binaries: slowest: " + ", ".join(f"{b.package} {b.name} {b.seconds:.0f} s" for b in slowest))
    failed = [b for b in binaries if not b.ok]
    for b in failed:
        lines.append(f"test-binaries: FAILED: {b.package} {b.src} (exit code {b.returncode})")
    totals = [sum(b.counts[i] for b in binaries) for i in range(5)]
    verdict = "FAILED" if failed or totals[1] else "ok"
    lines.append(
        f"test-binaries: {len(binaries)} binaries, {wall:.0f} s wall, "
        f"{sum(b.seconds for b in binaries):.0f} s in binaries"
    )
    lines.append(
        f"test result: {verdict}. {totals[0]} passed; {totals[1]} failed; "
        f"{totals[2]} ignored; {totals[3]} measured; {totals[4]} filtered out; "
        f"finished in {wall:.2f}s"
    )
    return lines, 1 if verdict != "ok" else 0


def self_test() -> int:
    """Fake binaries (shell scripts): a pass, a failing test, a crash before the
    summary, a long one and one with variables of its own; checks the verdict,
    the totals, the order and the variables."""
    import tempfile

    tail = "0 measured; 0 filtered out; finished in 0.00s"
    passing = f"echo 'test result: ok. 3 passed; 0 failed; 1 ignored; {tail}'"
    cases = {
        "pass": passing,
        "failing": f"echo 'test result: FAILED. 1 passed; 2 failed; 0 ignored; {tail}'; exit 101",
        "crash": "echo 'thread main panicked'; exit 0",
        "e2e-a": f"sleep 0.3; {passing}",
        # Passes only with its own variable, and only without the other's.
        "env-own": f'[ "$MARK" = own ] && [ -z "$OTHER" ] || exit 3; {passing}',
    }
    problems = []
    with tempfile.TemporaryDirectory() as tmp:

        def fake(name: str) -> Binary:
            path = Path(tmp) / name
            path.write_text(f"#!/bin/sh\n{cases[name]}\n")
            path.chmod(0o755)
            return Binary(
                package="e2e" if name.startswith("e2e") else name,
                name=name,
                kind="test",
                src=str(path),
                executable=str(path),
                manifest_dir=tmp,
            )

        def run(names: list[str], jobs: int = 3) -> tuple[list[str], int, list[Binary]]:
            binaries = [fake(n) for n in names]
            wall = run_pool(schedule(binaries, {}, {"e2e::e2e-a"}), jobs, "cargo", [], echo=False)
            lines, rc = report(binaries, wall)
            return lines, rc, binaries

        lines, rc, binaries = run(["pass", "e2e-a"])
        if rc != 0 or not lines[-1].startswith("test result: ok. 6 passed; 0 failed; 2 ignored"):
            problems.append(f"all passing: rc {rc}, {lines[-1]!r}")
        # One at a time, without durations: the binary named long starts first.
        _, rc, binaries = run(["pass", "e2e-a"], jobs=1)
        spans = {x.name: x.span for x in binaries}
        if rc != 0 or spans["e2e-a"][0] > spans["pass"][0]:
            problems.append(f"the long binary did not start first: {spans}")
        # --env reaches the binary it names, and no other.
        binaries = [fake("env-own"), fake("pass")]
        apply_env(binaries, parse_env(["env-own::env-own:MARK=own", "pass::pass:OTHER=x"]))
        wall = run_pool(schedule(binaries, {}, set()), 2, "cargo", [], echo=False)
        lines, rc = report(binaries, wall)
        if rc != 0:
            problems.append(f"--env: a binary did not get its own variables alone: {lines!r}")
        for spec, want in (("env-own:MARK=own", "expected PKG::TARGET"), ("nope::nope:X=1", "names no test binary")):
            try:
                apply_env([fake("env-own")], parse_env([spec]))
                problems.append(f"--env {spec!r} was taken")
            except ValueError as e:
                if want not in str(e) or repr(spec.split(":X")[0] if "nope" in spec else spec) not in str(e):
                    problems.append(f"--env {spec!r}: {e}")
        for bad, want in (("failing", "2 failed"), ("crash", "0 failed")):
            lines, rc, _ = run(["pass", bad])
            if (
                rc != 1
                or not lines[-1].startswith("test result: FAILED.")
                or want not in lines[-1]
                or not any(f"FAILED: {bad}" in line for line in lines)
            ):
                problems.append(f"{bad}: rc {rc}, {lines!r}")
    for p in problems:
        print(f"test-binaries self-test: {p}", file=sys.stderr)
    print(f"test-binaries self-test: {'FAILED' if problems else 'ok'}")
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("LIVE_CI_TEST_JOBS", "3")))
    parser.add_argument(
        "--long",
        action="append",
        default=[],
        metavar="PKG::TARGET",
        help="a binary known to be long: started first when no duration is recorded (repeatable)",
    )
    parser.add_argument(
        "--test-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="passed to every test binary (e.g. a name filter)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="PKG::TARGET:NAME=VALUE",
        help="a variable for one test binary only (repeatable)",
    )
    parser.add_argument("--self-test", action="store_true", help="check the verdicts on fake binaries, build nothing")
    parser.add_argument("cargo_args", nargs="*")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: must be at least 1")
    cargo = os.environ.get("CARGO", "cargo")
    try:
        by_target = parse_env(args.env)
    except ValueError as e:
        parser.error(str(e))

    binaries = build(cargo, args.cargo_args)
    if not binaries:
        sys.exit("test-binaries: cargo built no test binary")
    try:
        apply_env(binaries, by_target)
        check_named(binaries, "--long", set(args.long))
    except ValueError as e:
        sys.exit(f"test-binaries: {e}")
    history = load_history()
    queue = schedule(binaries, history, set(args.long))
    print(f"test-binaries: {len(binaries)} binaries, {args.jobs} at a time", flush=True)
    wall = run_pool(queue, args.jobs, cargo, args.test_arg)

    history.update({b.key: round(b.seconds, 2) for b in binaries})
    try:
        history_path().write_text(json.dumps(history, indent=1, sort_keys=True))
    except OSError as e:
        print(f"test-binaries: durations not kept: {e}", file=sys.stderr)
    lines, rc = report(binaries, wall)
    print("\n".join(lines))
    return rc


if __name__ == "__main__":
    sys.exit(main())
