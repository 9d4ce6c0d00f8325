"""Command-line entry point of {{ projectName }}."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__


class {{ className | remove: "-" }}Error(Exception):
    """A mistake the user can fix: printed without a traceback."""


def greet(name: str) -> str:
    if not name.strip():
        raise {{ className | remove: "-" }}Error("the name must not be empty")
    return f"Hello, {name.strip()}!"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="{{ packageName }}", description={{ description | json }})
    parser.add_argument("name", nargs="?", default="world", help="who to greet (default: world)")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        print(greet(args.name))
    except {{ className | remove: "-" }}Error as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0
