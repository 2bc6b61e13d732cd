"""`maxlower prove`: translation validation of rewrites with an SMT solver (z3).

    from maxlower.prove import prove
    report = prove(reference, candidate, dims={"N": 3})   # report.status, report.summary()

`semantics` is the symbolic interpreter (the trusted base, tested against onnx.reference),
`core` proves two models equal at bounded shapes, `rules` proves every registered version
adapter and decomposition, `cli` holds the command. The solver is an optional extra
(`pip install -e ".[prove]"`); `require_solver` says how to install it when it is missing.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from typing import Any

# (their home is maxlower.errors; importable from here as before)
from maxlower.errors import CounterexampleFound, InvalidModelError, ProofFailed, ProofInconclusive

INSTALL_HINT = (
    'the prover needs the z3-solver package: pip install "maxlower[prove]" '
    "(or pip install z3-solver)"
)


DEFAULT_MAX_DIM = 4
DEFAULT_SITE_TIMEOUT = 60.0


@dataclasses.dataclass(frozen=True)
class ProofOptions:
    """How `--prove` / `prove=` proves a run's sites: symbolic dims bound 0..max_dim,
    `timeout` seconds of solver per site, ±0 counted equal unless `signed_zeros`."""

    max_dim: int = DEFAULT_MAX_DIM
    timeout: float = DEFAULT_SITE_TIMEOUT
    signed_zeros: bool = False

    @classmethod
    def of(cls, value: Any) -> ProofOptions | None:
        """The library's `prove=` argument: False/None (no proof), True (the defaults), a
        ProofOptions, or a dict of its fields; numbers checked as the command line checks
        them (InvalidModelError, one line)."""
        from maxlower.options import check_number

        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if isinstance(value, dict):
            unknown = set(value) - {"max_dim", "timeout", "signed_zeros"}
            if unknown:
                raise InvalidModelError(
                    f"prove=: unknown option(s) {sorted(unknown)}; it takes max_dim, "
                    "timeout and signed_zeros"
                )
            value = cls(**value)
        if not isinstance(value, cls):
            raise InvalidModelError(
                f"prove=: expected True, a dict or maxlower.prove.ProofOptions, not {value!r}"
            )
        check_number("--prove-max-dim", value.max_dim)
        check_number("--prove-timeout", value.timeout)
        return value


# What `prove=` takes on the library's functions (see ProofOptions.of).
ProveLike = bool | ProofOptions | dict[str, float] | None


def require_solver() -> None:
    """InvalidModelError (exit 2, one line) naming the install command when z3 is missing."""
    if importlib.util.find_spec("z3") is None:
        raise InvalidModelError(INSTALL_HINT)


def prove(*args: Any, **kwargs: Any) -> Any:
    """maxlower.prove.core.prove, after checking that the solver is installed."""
    require_solver()
    from maxlower.prove.core import prove as core_prove

    return core_prove(*args, **kwargs)


__all__ = [
    "INSTALL_HINT",
    "CounterexampleFound",
    "ProofFailed",
    "ProofInconclusive",
    "ProofOptions",
    "ProveLike",
    "prove",
    "require_solver",
]
