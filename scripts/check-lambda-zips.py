#!/usr/bin/env python3
"""Checks the Lambda zips of `make package` for the provided.al2023 runtime.

Each <dir>/<function>/bootstrap.zip must hold one executable `bootstrap` that
is an ELF64 x86-64 (or aarch64 with --arch arm64) executable whose highest
required GLIBC symbol version is at most --max-glibc (2.34, the glibc of
Amazon Linux 2023). Reads the ELF's version-needs section (SHT_GNU_verneed)
itself: no binutils needed.

  check-lambda-zips.py [--dir target/lambda] [--arch x86_64] [--max-glibc 2.34] [FUNCTION...]
  check-lambda-zips.py --self-test BINARY   the checker refuses what it must refuse

Prints one line per zip and "N passed, N failed"; exits 1 on any failure.
"""

import argparse
import io
import os
import stat
import struct
import sys
import tempfile
import zipfile

FUNCTIONS = ["receiver", "trigger-sf", "approval-request", "approval-response", "notifier"]
MACHINES = {"x86_64": 62, "arm64": 183}  # EM_X86_64, EM_AARCH64
SHT_GNU_VERNEED = 0x6FFFFFFE


class Bad(Exception):
    pass


def version(text):
    return tuple(int(p) for p in text.split("."))


def glibc_versions(elf):
    """The GLIBC_x.y[.z] versions an ELF64 little-endian file needs."""
    if elf[:4] != b"\x7fELF":
        raise Bad(f"not an ELF file (magic {elf[:4]!r})")
    if elf[4] != 2 or elf[5] != 1:
        raise Bad(f"not a 64-bit little-endian ELF (class {elf[4]}, data {elf[5]})")
    e_type, e_machine = struct.unpack_from("<HH", elf, 16)
    e_shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    e_shentsize, e_shnum = struct.unpack_from("<HH", elf, 0x3A)
    sections = []
    for i in range(e_shnum):
        off = e_shoff + i * e_shentsize
        _name, sh_type, _flags, _addr, sh_offset, sh_size, sh_link, sh_info = struct.unpack_from("<IIQQQQII", elf, off)
        sections.append((sh_type, sh_offset, sh_size, sh_link, sh_info))
    found = set()
    for sh_type, sh_offset, _size, sh_link, sh_info in sections:
        if sh_type != SHT_GNU_VERNEED:
            continue
        strtab = sections[sh_link][1]
        off = sh_offset
        for _ in range(sh_info):
            _ver, cnt, _file, aux, nxt = struct.unpack_from("<HHIII", elf, off)
            a = off + aux
            for _ in range(cnt):
                _hash, _flags, _other, name, anext = struct.unpack_from("<IHHII", elf, a)
                end = elf.index(b"\0", strtab + name)
                text = elf[strtab + name : end].decode()
                if text.startswith("GLIBC_") and text[6:7].isdigit():
                    found.add(text[6:])
                a += anext
                if anext == 0:
                    break
            off += nxt
            if nxt == 0:
                break
    return e_type, e_machine, sorted(found, key=version)


def check_zip(path, arch, max_glibc):
    """A one-line description of a good zip; Bad with the reason otherwise."""
    if not os.path.isfile(path):
        raise Bad("missing (run make package)")
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        if "bootstrap" not in names:
            raise Bad(f"no bootstrap in the zip (it holds {names})")
        info = z.getinfo("bootstrap")
        mode = info.external_attr >> 16
        if mode and not mode & stat.S_IXUSR:
            raise Bad(f"bootstrap is not executable (mode {mode:o})")
        elf = z.read("bootstrap")
    e_type, machine, versions = glibc_versions(elf)
    if e_type not in (2, 3):  # ET_EXEC, ET_DYN (PIE)
        raise Bad(f"bootstrap is not an executable (ELF type {e_type})")
    if machine != MACHINES[arch]:
        raise Bad(f"bootstrap is for ELF machine {machine}, not {arch} ({MACHINES[arch]})")
    highest = versions[-1] if versions else None
    if highest and version(highest) > version(max_glibc):
        raise Bad(f"bootstrap needs GLIBC_{highest}, newer than {max_glibc} (provided.al2023)")
    return f"ELF {arch}, {len(elf)} bytes, highest GLIBC_{highest or 'none (static)'}"


def zip_of(binary, name="bootstrap", mode=0o755):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        info = zipfile.ZipInfo(name)
        info.external_attr = (stat.S_IFREG | mode) << 16
        with open(binary, "rb") as f:
            z.writestr(info, f.read())
    return buf.getvalue()


def self_test(binary):
    """Each protection refuses what it must: the glibc ceiling, the machine,
    a non-ELF file, a non-executable entry, a zip without bootstrap."""
    results = []
    with tempfile.TemporaryDirectory() as d:

        def case(label, data, arch, max_glibc, expect):
            p = os.path.join(d, label + ".zip")
            with open(p, "wb") as f:
                f.write(data)
            try:
                check_zip(p, arch, max_glibc)
                got = None
            except Bad as e:
                got = str(e)
            ok = (got is None) if expect is None else (got is not None and expect in got)
            results.append((label, ok, got))

        _t, _m, versions = glibc_versions(open(binary, "rb").read())
        if not versions:
            raise SystemExit(f"self-test: {binary} needs no glibc symbol versions; give a dynamic binary")
        arch = "x86_64" if glibc_versions(open(binary, "rb").read())[1] == 62 else "arm64"
        other = "arm64" if arch == "x86_64" else "x86_64"
        good = zip_of(binary)
        case("accepted-at-its-own-ceiling", good, arch, versions[-1], None)
        below = f"{version(versions[-1])[0]}.{version(versions[-1])[1] - 1}"
        case("newer-glibc-refused", good, arch, below, "newer than")
        case("other-machine-refused", good, other, "99.0", "ELF machine")
        with tempfile.NamedTemporaryFile("wb", delete=False, dir=d) as f:
            f.write(b"#!/bin/sh\necho not elf\n")
        case("not-elf-refused", zip_of(f.name), arch, "99.0", "not an ELF")
        case("not-executable-refused", zip_of(binary, mode=0o644), arch, "99.0", "not executable")
        case("no-bootstrap-refused", zip_of(binary, name="main"), arch, "99.0", "no bootstrap")
    failed = 0
    for label, ok, got in results:
        print("{} {}{}".format("ok  " if ok else "FAIL", label, "" if ok else f": {got}"))
        failed += not ok
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "lambda"))
    ap.add_argument("--arch", choices=sorted(MACHINES), default=os.environ.get("LAMBDA_ARCH", "x86_64"))
    ap.add_argument("--max-glibc", default="2.34")
    ap.add_argument("--self-test", metavar="BINARY")
    ap.add_argument("functions", nargs="*", default=FUNCTIONS)
    args = ap.parse_args()
    if args.self_test:
        return self_test(args.self_test)
    failed = 0
    for name in args.functions:
        path = os.path.join(args.dir, name, "bootstrap.zip")
        try:
            print(f"ok   {path}: {check_zip(path, args.arch, args.max_glibc)}")
        except (Bad, zipfile.BadZipFile, struct.error, ValueError, IndexError) as e:
            print(f"FAIL {path}: {e}")
            failed += 1
    print(f"{len(args.functions) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
