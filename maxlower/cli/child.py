"""`python -m maxlower.cli.child ARGUMENTS.pickle`: one model of a batch in a fresh
interpreter, where the batch cannot fork (Windows) or runs on a cluster's worker. The
arguments are the pickled (command, parameters, directory, timeout) of `model_run.child_main`."""

from __future__ import annotations

import os
import pathlib
import pickle
import sys

import maxlower.cli  # noqa: F401  (registers every command on the group)
from maxlower.cli.model_run import child_main


def main() -> None:
    command, params, directory, timeout = pickle.loads(pathlib.Path(sys.argv[1]).read_bytes())
    os._exit(child_main(command, params, directory, timeout))


if __name__ == "__main__":
    main()
