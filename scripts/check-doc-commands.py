#!/usr/bin/env python3
"""Every command a tracked Markdown file documents must still run as written.

A document rots silently: a make target renamed, a script moved, a CLI flag
dropped, a Terraform output that no longer exists. This check reads every
```sh / ```bash / ```shell block of the tracked *.md files (and `make ...` code
spans in their prose), from the directory the project's documents assume, the
repository root (a `cd` inside a block moves it), and checks what can be
checked here without an AWS account, Docker or GitHub:

- `make T...`: each target is a rule of the Makefile (`make -n T` parses it);
- `bash|sh|python3 FILE`, `scripts/x.sh`: FILE exists (and a direct path is executable);
- `cd DIR`, `terraform -chdir=DIR`: DIR exists, with *.tf for terraform;
- `terraform output [-raw] NAME`: NAME is an output of the module the directory holds
  (the root module of the user, which re-exports infra/'s: infra/outputs.tf);
- `docker build -f FILE ... CONTEXT`: both exist, and each --build-arg is an ARG of FILE;
- `live-ci SUB --flags`, `live-ci-task SUB`: with the built binaries at hand
  ($CARGO_TARGET_DIR or target/debug), `SUB --help` succeeds and names each flag.

Placeholders (`<...>`, `…`, `$VAR`, `N`, `REV`) are not paths and are skipped.
Exit 1 lists every broken command as `file:line: what`.
`--self-test` runs the check on a made-up document whose commands are each
broken in one way, and fails unless every one is reported.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
SHELL_LANGS = {"sh", "bash", "shell"}
MAKE_SPAN = re.compile(r"`(make [^`]+)`")
SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")
PLACEHOLDER = re.compile(r"[<>…$*{}]|^\.\.\.$")


def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


def tracked_markdown(root: Path) -> list[Path]:
    out = subprocess.run(["git", "ls-files", "*.md"], cwd=root, capture_output=True, text=True, check=True).stdout
    return [root / line for line in out.splitlines() if line and not line.startswith("tests/fixtures/")]


def commands(text: str) -> list[tuple[int, str]]:
    """(line number, command) of each shell block line, continuations joined."""
    found: list[tuple[int, str]] = []
    in_block = False
    pending = ""
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if fence:
            if in_block:
                in_block = False
            else:
                in_block = fence.group(2) in SHELL_LANGS
            pending = ""
            continue
        if in_block:
            stripped = line.strip()
            if not pending:
                start = number
            if stripped.endswith("\\"):
                pending += stripped[:-1] + " "
                continue
            full = (pending + stripped).strip()
            pending = ""
            if full and not full.startswith("#"):
                found.append((start, full))
        else:
            for span in MAKE_SPAN.finditer(line):
                found.append((number, span.group(1)))
    return found


def split(command: str) -> list[list[str]]:
    """The simple commands of a line: split at ; && || |, comments dropped."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    parts: list[list[str]] = [[]]
    for token in lexer:
        if token and set(token) <= set(";&|"):
            parts.append([])
        else:
            parts[-1].append(token)
    return [p for p in parts if p]


def is_placeholder(word: str) -> bool:
    return bool(PLACEHOLDER.search(word)) or word.isupper()


class Checker:
    def __init__(self, root: Path, binaries: Path | None):
        self.root = root
        self.binaries = binaries
        self.make_targets = self._make_targets()
        self.problems: list[str] = []
        self._help: dict[tuple[str, str], str | None] = {}

    def _make_targets(self) -> set[str]:
        makefile = self.root / "Makefile"
        if not makefile.exists():
            return set()
        return set(re.findall(r"^([A-Za-z0-9_.-]+):", makefile.read_text(), re.M))

    def fail(self, where: str, what: str) -> None:
        self.problems.append(f"{where}: {what}")

    def check_file(self, path: Path) -> None:
        rel = path.relative_to(self.root)
        cwd = self.root
        for number, command in commands(path.read_text()):
            where = f"{rel}:{number}"
            # shlex knows no $(...): the substitutions are checked on their own,
            # and stand as one placeholder word in the command around them.
            inner = SUBSTITUTION.findall(command)
            try:
                simple = split(SUBSTITUTION.sub("$SUBSTITUTION", command))
                inner_simple = [words for part in inner for words in split(part)]
            except ValueError as e:
                self.fail(where, f"cannot be parsed as shell ({e}): {command!r}")
                continue
            for words in inner_simple:
                self.check_simple(where, cwd, words)
            for words in simple:
                cwd = self.check_simple(where, cwd, words)

    def check_simple(self, where: str, cwd: Path, words: list[str]) -> Path:
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            words = words[1:]  # VAR=value command
        if words[:1] == ["export"] or not words:
            return cwd
        program, args = words[0], words[1:]
        if program == "cd" and args:
            target = cwd / args[0]
            if not is_placeholder(args[0]):
                if not target.is_dir():
                    self.fail(where, f"cd {args[0]!r}: no such directory")
                else:
                    return target.resolve()
        elif program == "make":
            self.check_make(where, args)
        elif program in ("bash", "sh", "python3", "python") and args and not args[0].startswith("-"):
            self.check_path(where, cwd, args[0], executable=False)
        elif "/" in program and not is_placeholder(program):
            self.check_path(where, cwd, program, executable=True)
        elif program == "terraform":
            self.check_terraform(where, cwd, args)
        elif program == "docker" and args[:1] == ["build"]:
            self.check_docker_build(where, cwd, args[1:])
        elif program in ("live-ci", "live-ci-task"):
            self.check_cli(where, program, args)
        return cwd

    def check_make(self, where: str, args: list[str]) -> None:
        targets = [a for a in args if not a.startswith("-") and "=" not in a]
        for target in targets:
            if target not in self.make_targets:
                self.fail(where, f"make {target}: no such target in the Makefile")
        if targets:
            dry = subprocess.run(
                ["make", "-n", "-C", str(self.root), *targets], capture_output=True, text=True, check=False
            )
            if dry.returncode != 0 and all(t in self.make_targets for t in targets):
                self.fail(where, f"make -n {' '.join(targets)} failed: {dry.stderr.strip()[:200]}")

    def check_path(self, where: str, cwd: Path, path: str, executable: bool) -> None:
        if is_placeholder(path) or path.startswith(("target/", ".work/", "/")):
            return
        target = cwd / path
        if not target.exists():
            self.fail(where, f"{path!r}: no such file")
        elif executable and not os.access(target, os.X_OK):
            self.fail(where, f"{path!r} is run directly but is not executable")

    def module_dir(self, cwd: Path, args: list[str]) -> Path:
        for arg in args:
            if arg.startswith("-chdir="):
                return cwd / arg.split("=", 1)[1]
        # Without -chdir the documents mean the user's root module, which
        # re-exports infra/'s outputs.
        return cwd / "infra" if cwd == self.root else cwd

    def check_terraform(self, where: str, cwd: Path, args: list[str]) -> None:
        chdir = next((a.split("=", 1)[1] for a in args if a.startswith("-chdir=")), None)
        directory = self.module_dir(cwd, args)
        if chdir is not None and not is_placeholder(chdir):
            if not directory.is_dir() or not any(directory.glob("*.tf")):
                self.fail(where, f"terraform -chdir={chdir}: no Terraform module there")
                return
        rest = [a for a in args if not a.startswith("-")]
        if rest[:1] == ["output"] and len(rest) > 1 and not is_placeholder(rest[1]):
            name = rest[1]
            defined = any(
                re.search(rf'^output "{re.escape(name)}"', tf.read_text(), re.M) for tf in directory.glob("*.tf")
            )
            if not defined:
                self.fail(where, f"terraform output {name}: no such output in {directory.relative_to(self.root)}")

    def check_docker_build(self, where: str, cwd: Path, args: list[str]) -> None:
        dockerfile = None
        build_args = []
        positional = []
        i = 0
        while i < len(args):
            arg = args[i]
            if arg in ("-f", "--file") and i + 1 < len(args):
                dockerfile = args[i + 1]
                i += 2
                continue
            if arg == "--build-arg" and i + 1 < len(args):
                build_args.append(args[i + 1].split("=", 1)[0])
                i += 2
                continue
            if arg in ("-t", "--tag", "--platform"):
                i += 2
                continue
            if not arg.startswith("-"):
                positional.append(arg)
            i += 1
        if positional and not (cwd / positional[-1]).is_dir():
            self.fail(where, f"docker build context {positional[-1]!r}: no such directory")
        if dockerfile:
            path = cwd / dockerfile
            if not path.is_file():
                self.fail(where, f"docker build -f {dockerfile!r}: no such file")
                return
            declared = set(re.findall(r"^ARG ([A-Za-z_][A-Za-z0-9_]*)", path.read_text(), re.M))
            for name in build_args:
                if name not in declared:
                    self.fail(where, f"docker build --build-arg {name}: {dockerfile} declares no such ARG")

    def check_cli(self, where: str, program: str, args: list[str]) -> None:
        if self.binaries is None or not args or args[0].startswith("-"):
            return
        binary = self.binaries / program
        if not binary.exists():
            return
        sub = args[0]
        key = (program, sub)
        if key not in self._help:
            run = subprocess.run([str(binary), sub, "--help"], capture_output=True, text=True, check=False)
            self._help[key] = run.stdout + run.stderr if run.returncode == 0 else None
        help_text = self._help[key]
        if help_text is None:
            self.fail(where, f"{program} {sub}: not a subcommand ({program} {sub} --help fails)")
            return
        for arg in args[1:]:
            flag = arg.strip("[]").split("=", 1)[0]
            if flag.startswith("--") and not re.search(rf"(^|[\s,]){re.escape(flag)}\b", help_text):
                self.fail(where, f"{program} {sub} {flag}: not an option of the subcommand")


def binaries_dir(root: Path) -> Path | None:
    target = Path(os.environ.get("CARGO_TARGET_DIR", root / "target"))
    debug = target / "debug"
    return debug if (debug / "live-ci").exists() else None


def run(root: Path, files: list[Path], binaries: Path | None) -> list[str]:
    checker = Checker(root, binaries)
    for path in files:
        checker.check_file(path)
    return checker.problems


SELF_TEST_DOC = """# A made-up document

```sh
make test
make no-such-target
bash scripts/missing.sh
scripts/not-executable.sh
cd no/such/dir
terraform -chdir=nowhere init
terraform output -raw no_such_output
docker build -f Dockerfile --build-arg NOT_DECLARED=1 -t x .
export X=$(terraform output -raw other_missing_output)
echo 'unbalanced
```

Run `make another-missing-target` too.
"""

SELF_TEST_BROKEN = [
    "make no-such-target",
    "scripts/missing.sh",
    "not-executable.sh",
    "no/such/dir",
    "-chdir=nowhere",
    "no_such_output",
    "other_missing_output",
    "NOT_DECLARED",
    "cannot be parsed",
    "make another-missing-target",
]


def self_test() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "Makefile").write_text("test:\n\t@true\n")
        (root / "scripts").mkdir()
        (root / "scripts" / "not-executable.sh").write_text("#!/bin/sh\n")
        (root / "infra").mkdir()
        (root / "infra" / "outputs.tf").write_text('output "webhook_url" {\n  value = 1\n}\n')
        (root / "Dockerfile").write_text("FROM scratch\nARG DECLARED\n")
        doc = root / "README.md"
        doc.write_text(SELF_TEST_DOC)
        problems = run(root, [doc], None)
    missing = [b for b in SELF_TEST_BROKEN if not any(b in p for p in problems)]
    if missing or any("make test:" in p for p in problems):
        print("check-doc-commands self-test FAILED", file=sys.stderr)
        for b in missing:
            print(f"  not reported: {b}", file=sys.stderr)
        for p in problems:
            print(f"  reported: {p}", file=sys.stderr)
        return 1
    print(f"check-doc-commands self-test: ok ({len(problems)} broken commands reported)")
    return 0


def main() -> int:
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = repo_root()
    files = tracked_markdown(root)
    binaries = binaries_dir(root)
    problems = run(root, files, binaries)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check-doc-commands: {len(problems)} documented command(s) do not run as written", file=sys.stderr)
        return 1
    cli = "with" if binaries else "without (not built)"
    print(f"doc commands: ok ({len(files)} documents, {cli} the CLI's --help checks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
