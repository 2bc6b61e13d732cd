"""`maxlower prove`: translation validation of rewrites with an SMT solver (z3).

    from maxlower.prove import prove
    report = prove(reference, candidate, dims={"N": 3})   # report.status, report.summary()

`semantics` is the symbolic interpreter (the trusted base, tested against onnx.reference),
`core` proves two models equal at bounded shapes, `rules` proves every registered version
adapter and decomposition, `cli` holds the command. The solver is an optional extra
(`pip install -e ".[prove]"`); `require_solver` says how to install it when it is missing.
"""

from __future__ import annotations

import importlib.util
from typing import Any

INSTALL_HINT = (
    'the prover needs the z3-solver package: pip install "maxlower[prove]" '
    "(or pip install z3-solver)"
)


def require_solver() -> None:
    """InvalidModelError (exit 2, one line) naming the install command when z3 is missing."""
    if importlib.util.find_spec("z3") is None:
        from maxlower.api import InvalidModelError

        raise InvalidModelError(INSTALL_HINT)


def prove(*args: Any, **kwargs: Any) -> Any:
    """maxlower.prove.core.prove, after checking that the solver is installed."""
    require_solver()
    from maxlower.prove.core import prove as core_prove

    return core_prove(*args, **kwargs)


__all__ = ["INSTALL_HINT", "prove", "require_solver"]
