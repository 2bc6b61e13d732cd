"""The `maxlower` command line: the group and its shared pieces (main.py), and one module
per command family, each registering its commands on the group when imported."""

from maxlower.cli import check, convert, inspect, prove, verify
from maxlower.cli.main import cli


def main(argv: list[str] | None = None) -> None:
    """The console script `maxlower` and `python -m maxlower`."""
    cli.main(args=argv, prog_name="maxlower")


__all__ = ["check", "cli", "convert", "inspect", "main", "prove", "verify"]
