"""`lower(model, profile)`: make a model fit a backend profile, exactly.

    lower(model, "primitives")            no Max, ReduceMax or ArgMax left anywhere
    lower(model, "onnxruntime")           every node runs on onnxruntime's CPU kernels
    lower(model, "path/to/profile.toml")  your own profile

The opset stays as it is (`convert_and_lower` converts first). These run maxlower.pipeline,
as `maxlower lower` does: the input is checked with the full checker and shape-inferred once,
every node the profile rejects is rewritten by `passes.legalize.LegalizePass`, and the result
is checked again with the full checker.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from maxlower.api import ModelLike, check_target_opset, run_job
from maxlower.pipeline import Job, Report
from maxlower.profiles import (
    Profile,
    ProfileError,
    ProfileSet,
    ProfilesLike,
    load_profile,
    load_profiles,
)
from passes.legalize import Lowering

if TYPE_CHECKING:
    from maxlower.prove import ProveLike

ProfileLike = str | Path | Profile  # (several at once: ProfilesLike, a list of these)


def lower(
    model: ModelLike,
    profile: ProfilesLike,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    report: str | os.PathLike[str] | None = None,
    prove: ProveLike = False,
) -> ModelLike:
    """`model` with every node `profile` rejects rewritten exactly; the same kind of object
    back, and the input untouched. `profile` may be a list: what all of them accept. A
    profile with an opset window (`opsets = [first, last]`) converts into it first.
    Raises ConversionError when some node has no exact form the profile accepts,
    ProfileError for an unknown or malformed profile, and InvalidModelError for unusable
    input. `report`: also write the HTML report `maxlower lower --report` writes.
    `prove`: what `--prove` does (maxlower.api.run_job)."""
    lowered, _ = lower_with_report(model, profile, base_dir=base_dir, report=report, prove=prove)
    return lowered


def lower_with_report(
    model: ModelLike,
    profile: ProfilesLike,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    report: str | os.PathLike[str] | None = None,
    prove: ProveLike = False,
) -> tuple[ModelLike, Report]:
    """`lower`, plus the report of what it rewrote (`report.lowerings`; what the CLI
    prints)."""
    return run_job(model, Job(profile=load_profiles(profile)), base_dir, report, prove=prove)


def convert_and_lower(
    model: ModelLike,
    opset: int,
    profile: ProfilesLike,
    *,
    expand_functions: bool = False,
    base_dir: str | os.PathLike[str] | None = None,
    report: str | os.PathLike[str] | None = None,
    prove: ProveLike = False,
) -> tuple[ModelLike, Report]:
    """Convert to `opset` (maxlower.convert), then lower for `profile`, in one job (what
    `maxlower convert --opset N --profile P` does); `report.rewrites`,
    `report.conversions` and `report.lowerings` say what changed. `report`: also write
    the HTML report (`--report`)."""
    loaded = load_profiles(profile)  # a bad profile fails before any work
    check_target_opset(opset)
    return run_job(model, Job(opset, loaded, expand_functions), base_dir, report, prove=prove)


__all__ = [
    "Lowering",
    "Profile",
    "ProfileError",
    "ProfileSet",
    "convert_and_lower",
    "load_profile",
    "lower",
    "lower_with_report",
]
