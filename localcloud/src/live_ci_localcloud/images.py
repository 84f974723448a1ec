"""Which local program stands in for a container image.

`LIVE_CI_LOCAL_IMAGE_MAP` is either inline JSON (starting with `{`) or the path of a
JSON file, read on every RunTask (so tests and the e2e setup can add entries while
LocalStack runs). It maps an image reference to a program: a path string, or a list
(program and leading arguments). Keys are tried in this order, first match wins:
the full reference (`123.dkr.ecr.us-east-1.amazonaws.com/live-ci:1.2`), the reference
without tag/digest (`123.dkr.ecr.us-east-1.amazonaws.com/live-ci`), and the
repository's last path segment (`live-ci`). Without a match the last path segment is
looked up on PATH.

When the container definition has an `entryPoint`, it replaces the image's program
(as in Docker) and its first element is resolved the same way (map, then PATH).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

IMAGE_MAP_ENV = "LIVE_CI_LOCAL_IMAGE_MAP"


class ImageResolutionError(Exception):
    pass


def load_image_map() -> dict[str, str | list[str]]:
    raw = os.environ.get(IMAGE_MAP_ENV, "").strip()
    if not raw:
        return {}
    if not raw.startswith("{"):
        path = Path(raw)
        if not path.is_file():
            return {}
        raw = path.read_text()
    try:
        mapping = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ImageResolutionError(f"{IMAGE_MAP_ENV}: not valid JSON: {e}") from e
    if not isinstance(mapping, dict):
        raise ImageResolutionError(f"{IMAGE_MAP_ENV}: expected a JSON object")
    return mapping


def image_keys(image: str) -> list[str]:
    """The keys an image reference is looked up by, most specific first."""
    without_digest = image.split("@", 1)[0]
    last = without_digest.rsplit("/", 1)[-1]
    repository = without_digest[: len(without_digest) - len(last)] + last.split(":", 1)[0]
    keys = [image, repository, repository.rsplit("/", 1)[-1]]
    return list(dict.fromkeys(k for k in keys if k))


def resolve_program(name: str, mapping: dict[str, str | list[str]]) -> list[str]:
    for key in image_keys(name):
        if key in mapping:
            target = mapping[key]
            argv = [target] if isinstance(target, str) else list(target)
            if not argv or not all(isinstance(a, str) for a in argv):
                raise ImageResolutionError(f"{IMAGE_MAP_ENV}[{key!r}]: expected a path or a list of strings")
            return argv
    program = image_keys(name)[-1]
    found = shutil.which(program)
    if found is None:
        raise ImageResolutionError(
            f"no local program for image {name!r}: add it to {IMAGE_MAP_ENV} or put {program!r} on PATH"
        )
    return [found]


def resolve_command(image: str, entry_point: Sequence[str] | None, command: Sequence[str]) -> list[str]:
    mapping = load_image_map()
    if entry_point:
        return resolve_program(entry_point[0], mapping) + list(entry_point[1:]) + list(command)
    if not image:
        raise ImageResolutionError("the container definition has no image")
    return resolve_program(image, mapping) + list(command)
