"""The process supervisor's command line (live_ci_localcloud.supervise): parsed without
argparse, which every ECS task's launch paid for; bad ones name what is wrong."""

from __future__ import annotations

import subprocess
import sys

import pytest

from live_ci_localcloud import supervise


def test_the_command_line_gives_the_parent_and_the_command() -> None:
    assert supervise.parse_command_line(["--parent-pid", "42", "--", "task", "--flag"]) == (42, ["task", "--flag"])
    assert supervise.parse_command_line(["--parent-pid", "42", "task"]) == (42, ["task"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["task"], "usage"),
        (["--parent-pid", "x1", "task"], "'x1' is not a process id"),
        (["--parent-pid", "42", "--"], "no command given"),
    ],
)
def test_a_bad_command_line_says_what_is_wrong(args: list[str], message: str) -> None:
    with pytest.raises(SystemExit, match=message):
        supervise.parse_command_line(args)


def test_a_supervised_program_runs_with_its_exit_code_and_no_argparse() -> None:
    probe = (
        "import sys, os;"
        "sys.argv = ['supervise', '--parent-pid', str(os.getppid()), '--', 'sh', '-c', 'exit 3'];"
        "from live_ci_localcloud import supervise;"
        "code = supervise.main();"
        "print(code, 'argparse' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["3", "False"]
