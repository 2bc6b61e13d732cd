"""The one pipeline that every door runs: `maxlower convert`, `lower`, `inspect`,
`--verify`, `--profile`, and the library functions (maxlower.convert, maxlower.lower, ...).

    load_proto(path)         a file read (maxlower.io) and prepared: the checked, typed
                             protobuf; load_model(path), the same in onnx_ir
    prepare(proto, ...)      opset imports normalised, safety rules, onnx.checker (full
                             check) and shape inference, once, on the protobuf
    run(prepared, job, ...)  the conversion and/or lowering; the result checked and typed
                             once, on the protobuf; an Outcome: the model and the report

The model stays protobuf. onnx_ir is built only for what the job can change:

- a conversion of a graph without functions or subgraphs builds onnx_ir for the nodes whose
  schema version differs between the two opsets (`maxlower.sparse`); the rest of the graph,
  Map, Sequence and Optional values, ZipMap and other ops onnx_ir cannot read included, is
  written back as it was;
- otherwise (functions, subgraphs, a profile) the whole graph goes through onnx_ir.

Both run the same passes (`passes.version.to_opset.ConvertToOpsetPass`, then
`passes.legalize.LegalizePass` for a profile), so they give the same model; the sparse
part is tested against the whole-graph part on every fixture (tests/test_io_sparse.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

import onnx
import onnx_ir as ir

from maxlower import training_info
from maxlower.errors import CHECKER_ERRORS, InvalidModelError, check_target_opset
from maxlower.family_nodes import FamilyNode, in_graph_order, place_of
from maxlower.io import (
    CheckedModel,
    DeclaredOutputs,
    check_and_infer,
    check_proto_result,
    check_result,
    declared_outputs,
    model_from_proto,
    read_model_proto,
    use_refined_outputs,
)
from maxlower.profiles import Profile, ProfileSet
from maxlower.safety import check_function_calls, check_model_data, describe_invalid
from maxlower.sparse import convert_sparse, default_opset
from maxlower.ui import QUIET, Progress
from passes.builder import FAMILY, min_ir_version
from passes.errors import ConversionError, concise
from passes.graph_utils import containers, subgraph_places
from passes.legalize import LegalizePass, Lowering, Unlowered
from passes.version.convert import Rewrite
from passes.version.other_ops import DELEGATED, EXPANDED, RELABELLED, OtherOpConversion
from passes.version.registry import schema_versions
from passes.version.to_opset import ConvertToOpsetPass, with_model_opsets

# one entry of a Report: a family rewrite, another op's conversion, or a lowering
Change = Rewrite | OtherOpConversion | Lowering


@dataclasses.dataclass(frozen=True)
class Job:
    """What to do: convert to `opset` (None: keep the model's), then lower for `profile`."""

    opset: int | None = None
    profile: Profile | ProfileSet | None = None
    expand_functions: bool = True  # an op the target lacks becomes its ONNX function body
    # a pre-flight check: nodes without an exact form are listed (Report.unlowered), not
    # refused
    keep_going: bool = False


@dataclasses.dataclass
class Report:
    """What a job changed, node by node, in graph order."""

    source_opset: int | None
    target_opset: int | None
    rewrites: list[Rewrite] = dataclasses.field(default_factory=list)
    conversions: list[OtherOpConversion] = dataclasses.field(default_factory=list)
    lowerings: list[Lowering] = dataclasses.field(default_factory=list)
    profile: str | None = None
    unlowered: list[Unlowered] = dataclasses.field(default_factory=list)  # Job.keep_going
    # the verdict of --prove / prove= (maxlower.prove.sites.SitesReport), when asked for
    proof: Any = None

    def kinds(self) -> dict[str, list[Change]]:
        """The changes grouped by kind: family rewrites, then the other ops relabelled,
        adapted by an own adapter, delegated to onnx.version_converter, expanded; then
        lowerings. Kinds without entries are left out."""
        groups: dict[str, list[Change]] = {
            "rewritten": list(self.rewrites),
            "relabelled": [],
            "adapted": [],
            "delegated": [],
            "expanded": [],
            "lowered": list(self.lowerings),
        }
        named = {RELABELLED: "relabelled", DELEGATED: "delegated", EXPANDED: "expanded"}
        for conversion in self.conversions:
            groups[named.get(conversion.how, "adapted")].append(conversion)
        return {kind: entries for kind, entries in groups.items() if entries}

    def counts(self) -> dict[str, int]:
        return {kind: len(entries) for kind, entries in self.kinds().items()}

    def expanded_ops(self) -> frozenset[str]:
        """The ops this run expanded into their ONNX function bodies (what --verify then
        holds the result to, bit for bit: maxlower.verify.expanded)."""
        return frozenset(c.op_type for c in self.conversions if c.how == EXPANDED)

    def lines(self, *, limit: int = 5) -> list[str]:
        """The report as text: a header per kind with its count, then one line per node
        (family rewrites and lowerings) or per op and version step (the others, with the
        first `limit` node names: a wide graph relabels thousands; --json lists all)."""
        lines = []
        kinds = self.kinds()
        for kind, entries in kinds.items():
            lines.append(f"  {kind}: {_count(len(entries), 'node')}")
            if kind == "rewritten":
                lines += [f"    {rewrite_line(r)}" for r in self.rewrites]
            elif kind == "lowered":
                lines += [f"    {_lowering_line(self.profile, x)}" for x in self.lowerings]
            else:  # the other ops' kinds
                lines += _grouped_lines(cast(list[OtherOpConversion], entries), limit)
        if self.profile is not None and not self.lowerings:
            lines.append(f"  profile {self.profile!r}: every node is accepted as it is")
        elif not kinds:
            lines.append("  no node needed rewriting")
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "source_opset": self.source_opset,
            "target_opset": self.target_opset,
            "profile": self.profile,
            "counts": self.counts(),
            "changes": {
                kind: [dataclasses.asdict(entry) for entry in entries]
                for kind, entries in self.kinds().items()
            },
        }


@dataclasses.dataclass
class Outcome:
    """The job's result, checked and typed, and what it changed."""

    checked: CheckedModel
    report: Report
    # convert then lower: the converted model the lowering started from (its graph; the
    # lowering may have refined its output types), for the --report drawings of each stage
    converted: onnx.ModelProto | None = None

    @property
    def proto(self) -> onnx.ModelProto:
        return self.checked.proto


def load_model(path: str | os.PathLike[str], *, progress: Progress = QUIET) -> ir.Model:
    """Load an ONNX file into onnx_ir, checked and typed (`load_proto`); InvalidModelError
    if it is missing, unreadable or not a valid model. External data stays lazy."""
    path = pathlib.Path(path)
    return model_from_proto(load_proto(path, progress=progress), path.parent, progress)


def load_proto(path: str | os.PathLike[str], *, progress: Progress = QUIET) -> onnx.ModelProto:
    """The file's model, parsed without its external data and made ready for the pipeline
    (`maxlower.pipeline.prepare`: opset imports normalised, the safety rules, the full
    check, and the value types shape inference gives)."""
    path = pathlib.Path(path)
    with progress.stage(f"loading {path}"):
        proto = read_model_proto(path)
    return prepare(proto, path, progress=progress)


def prepare(
    proto: onnx.ModelProto,
    path: str | os.PathLike[str],
    *,
    directory_known: bool = True,
    progress: Progress = QUIET,
) -> onnx.ModelProto:
    """`proto`, read from `path` (its external data lies beside it), made ready for `run`:
    one opset import per domain, the safety rules (maxlower.safety), the full check and the
    types shape inference gives. Changes `proto` (the imports); returns the typed model.
    `directory_known=False`: nobody said where `path` is, so external data is refused."""
    path = pathlib.Path(path)
    try:
        normalise_opset_imports(proto)
    except InvalidModelError as error:
        raise InvalidModelError(f"{path}: {error}") from None
    with progress.stage("checking strings and external data references (maxlower.safety)"):
        # before any external byte is read or even stat'ed
        check_model_data(proto, path, directory_known=directory_known)
        check_function_calls(proto, path)  # before the checker expands them
    with progress.stage("checking the input (onnx.checker, full check)"):
        try:
            return check_and_infer(proto, path.parent)
        except CHECKER_ERRORS as error:
            raise InvalidModelError(
                f"{path}: the model is not valid ONNX ({describe_invalid(proto, error)})"
            ) from error


def run(
    prepared: onnx.ModelProto,
    job: Job,
    base_dir: str | os.PathLike[str],
    *,
    progress: Progress = QUIET,
) -> Outcome:
    """Do `job` on a model `prepare` returned (changed in place: pass a copy to keep it),
    whose external data lies in `base_dir`. Raises ConversionError when some node has no
    exact form, InvalidModelError when the model cannot be worked on."""
    base_dir = str(base_dir)
    source = default_opset(prepared)
    if job.opset is not None:
        check_target_opset(job.opset)
    job = into_profile_window(job, source)
    if source is None and any(default_opset(f) is not None for f in prepared.functions):
        raise InvalidModelError(
            "the model imports no default-domain ('' / ai.onnx) opset, but some of its "
            "functions do, so it has no opset to convert them from"
        )
    if source is None and job.opset is not None and job.profile is None:
        # No default-domain node anywhere in the main graph (ai.onnx.ml only, say, as
        # onnxmltools writes xgboost): nothing to convert; at the target it imports it.
        return Outcome(
            _import_default_opset(prepared, job.opset, base_dir, progress), _report_of(job, source)
        )
    if job.opset is not None and source is not None:
        training_info.check_unchanged_at(prepared, source, job.opset)
    if job.opset is not None and job.profile is not None:
        # Convert, then lower what conversion wrote, typed and checked as a file of it
        # would be: `convert --profile P` is `convert` then `lower --profile P`.
        converted = run(
            prepared, dataclasses.replace(job, profile=None), base_dir, progress=progress
        )
        lowered = run(
            converted.proto, dataclasses.replace(job, opset=None), base_dir, progress=progress
        )
        lowered.report.rewrites = converted.report.rewrites
        lowered.report.conversions = converted.report.conversions
        lowered.report.source_opset, lowered.report.target_opset = source, job.opset
        lowered.converted = converted.proto
        return lowered
    report = _report_of(job, source)
    sparse = None
    unconfirmed = _outputs_declared_beyond_inference(prepared) if job.opset is not None else {}
    if job.opset is not None:  # (and no profile: that case was split above)
        with (
            progress.stage(f"converting to opset {job.opset}"),
            _remedy_for_the_model(prepared, base_dir, job),
        ):
            sparse = convert_sparse(
                prepared, job.opset, base_dir, expand_functions=job.expand_functions
            )
    if sparse is not None:
        report.rewrites, report.conversions = sparse.rewrites, sparse.conversions
        # No node went through onnx_ir: each resolves at the target to the schema it
        # resolved to at the source, or takes a type-only step whose target schema admits
        # its types (registry.kept_as_is), and only the opset import and IR version
        # changed; so the input's full check and inferred types stand for the result.
        unchanged = sparse.changed_nodes == 0
        with _inference_conflicts_refused(
            source, job.opset, report.conversions, _outputs_of(sparse.proto), unconfirmed
        ):
            checked = check_proto_result(
                sparse.proto, base_dir, progress, checked_already=unchanged
            )
        return Outcome(checked, report)
    training = training_info.set_aside(prepared)
    model, declared = whole_graph(prepared, base_dir, progress)
    if job.opset is not None:
        # (`prepared` is kept until then: a refusal's remedy probes the model as it was)
        with (
            progress.stage(f"converting to opset {job.opset}"),
            _remedy_for_the_model(prepared, base_dir, job),
        ):
            order = _family_node_order(model)
            result = ConvertToOpsetPass(job.opset, expand_functions=job.expand_functions)(model)
            report.rewrites = in_graph_order(result.rewrites, order)
            report.conversions = result.conversions
    if job.profile is not None:
        with progress.stage(f"lowering for profile {job.profile.name!r}"):
            legalized = LegalizePass(job.profile, keep_going=job.keep_going)(model)
            report.lowerings, report.unlowered = legalized.lowerings, legalized.unlowered
    with _inference_conflicts_refused(
        source, job.opset, report.conversions, _outputs_of(model), unconfirmed
    ):
        checked = check_result(model, progress, declared)
    training_info.put_back(checked, training, base_dir)
    return Outcome(checked, report)


@contextlib.contextmanager
def _remedy_for_the_model(prepared: onnx.ModelProto, base_dir: str, job: Job) -> Iterator[None]:
    """A node's refusal names the opsets in which every node of the model converts, not
    only that node (or that there are none but the model's own, and which nodes bound it):
    probed on `prepared`, which the conversion has not changed, only when it refuses."""
    try:
        yield
    except ConversionError as error:
        if getattr(error, "refusal_remedy", None) is None:
            raise
        try:
            model = model_from_proto(prepared, base_dir)
            wider = with_model_opsets(error, model, expand_functions=job.expand_functions)
        except Exception:  # the probe failed: the node's own range is still true
            raise error from error.__cause__
        raise wider from error.__cause__


def into_profile_window(job: Job, source: int | None) -> Job:
    """`job`, converting into its profile's opset window ([first, last]) when the model's
    opset is outside it: to the window's nearest end. A target opset outside the window is
    refused (InvalidModelError): no model at that opset satisfies the profile."""
    window = job.profile.opsets if job.profile is not None else None
    if window is None or job.profile is None:
        return job
    first, last = window
    if job.opset is not None:
        if not first <= job.opset <= last:
            raise InvalidModelError(
                f"target opset {job.opset} is outside profile {job.profile.name!r}'s opsets "
                f"{first}-{last}; choose one in that range, or leave the opset out and the "
                "model is converted into it"
            )
        return job
    if source is None or first <= source <= last:
        return job
    return dataclasses.replace(job, opset=min(max(source, first), last))


# onnx's inference of If before opset 11 merges the two branches' output shapes and fails
# where two dims differ: `(op_type:If, node name: n): ... Can't merge shape info`.
_IF_MERGE = re.compile(r"\(op_type:If(?:, node name: ([^)]*))?\):[^(]*Can't merge shape info")
# Any node whose output shape, inferred at the target, conflicts with the model's:
# `(op_type:AveragePool, node name: n): [ShapeInferenceError] Inferred shape and existing
# shape differ in dimension 2: (2) vs (1)`.
_SHAPE_CONFLICT = re.compile(
    r"\(op_type:(\w+)(?:, node name: ([^)]*))?\): \[ShapeInferenceError\] "
    r"Inferred shape and existing shape differ"
)


@contextlib.contextmanager
def _inference_conflicts_refused(
    source: int | None,
    target: int | None,
    conversions: Iterable[OtherOpConversion],
    outputs_of: Callable[[str, str], list[str]] = lambda node, op_type: [],
    unconfirmed: dict[str, tuple[str, str]] | None = None,
) -> Iterator[None]:
    """A converted node whose output shape, as ONNX infers it at the target, is not the one
    the model has, is refused like any node without an exact form (exit 3), not reported as
    an internal error: the op computes another shape there, so its meaning differs.

    - An If below opset 11 whose branches give shapes that only conversion showed to differ
      (a run-time ReduceMax in one branch becomes a form of static shape, say):
      relabel.control_flow_problem checks the shapes the source declares, and only
      inference of the whole converted model sees these.
    - An op whose shape formula changed between versions: AveragePool-22 with `ceil_mode`
      drops a last window that starts in the padding, which versions 10..19 count.

    - A main-graph output declared of a shape that its node's own inference at the source
      does not give (`unconfirmed`, from `_outputs_declared_beyond_inference`): a ReduceMax
      over axes computed at run time, declared of rank 2 where keepdims=1 gives rank 3.
      The input's full check cannot see that; the exact form at the target has a shape
      inference knows, which contradicts the declaration (`outputs_of` names what the
      conflicting node makes). A declaration the source's inference confirms is not
      blamed: a conflict there is a bug of ours.

    Only for ops that `conversions` took as they are (relabelled) or handed to
    onnx.version_converter, and for such declarations: a shape that conflicts elsewhere on
    a node our own adapters wrote is a bug of ours, and stays an internal error (exit 4)."""
    taken_as_is = {
        c.op_type
        for c in conversions
        if c.how in (RELABELLED, DELEGATED) and c.op_type not in FAMILY  # (ours, as rewrites)
    }
    try:
        yield
    except onnx.shape_inference.InferenceError as error:
        if target is None or source is None:
            raise
        if_merge, conflict = _IF_MERGE.search(str(error)), _SHAPE_CONFLICT.search(str(error))
        if if_merge is not None and target < 11 and "If" in taken_as_is:
            raise ConversionError(
                if_merge.group(1) or "<unnamed If>",
                "If",
                f"If before opset 11 needs both branches to give outputs of one shape, and "
                f"converted to opset {target} they do not ({concise(error)})",
                "target opset 11 or later (If-11 allows branches of different shapes)",
            ) from None
        # a declaration only the file vouches for is blamed first: the node that conflicts
        # may be one of our adapters' of an op relabelled elsewhere (red team of 7de8564)
        made = outputs_of(conflict.group(2) or "", conflict.group(1)) if conflict else []
        blamed = [o for o in made if o in (unconfirmed or {})]
        if blamed and unconfirmed is not None:
            output, (node, op_type) = blamed[0], unconfirmed[blamed[0]]
            raise ConversionError(
                node,
                op_type,
                f"the model declares its output {output!r} of a shape that the node's own "
                f"inference at opset {source} does not give, and the exact form at opset "
                f"{target} gives another ({concise(error)})",
                f"declare {output!r} of the shape the node computes (symbolic dims of the right "
                "rank will do)",
            ) from None
        if conflict is not None and _taken_as_is(conflict, conversions, taken_as_is):
            op_type = conflict.group(1)
            raise ConversionError(
                conflict.group(2) or f"<unnamed {op_type}>",
                op_type,
                f"at opset {target} ONNX gives its output another shape than at opset "
                f"{source} ({concise(error)}), so the op means something else there",
                _same_schema_remedy(op_type, source),
            ) from None
        raise


def _taken_as_is(
    conflict: re.Match[str], conversions: Iterable[OtherOpConversion], taken_as_is: set[str]
) -> bool:
    """Whether the conflicting node is one the run relabelled or delegated: by its name
    where it has one (an adapter's node of an op relabelled elsewhere is ours, and stays
    an internal error), by its op where onnx names none."""
    op_type, name = conflict.group(1), conflict.group(2)
    if not name:
        return op_type in taken_as_is
    return any(
        c.node == name and c.op_type == op_type and c.how in (RELABELLED, DELEGATED)
        for c in conversions
    )


def _outputs_declared_beyond_inference(proto: onnx.ModelProto) -> dict[str, tuple[str, str]]:
    """The main-graph outputs declared with a shape that the node making them does not
    give by its own inference at the source, each with that node's label and op: the
    declarations that only the file vouches for. One node inference per declared output
    (onnx.shape_inference.infer_node_outputs), on the types the input's check inferred;
    only those nodes' inputs are looked up (every conversion pays for this)."""
    graph = proto.graph
    declared = {o.name for o in graph.output if o.type.tensor_type.HasField("shape")}
    makers = [n for n in graph.node if declared.intersection(n.output)]
    if not makers:
        return {}
    wanted = {name for node in makers for name in node.input if name}
    infos = (*graph.input, *graph.value_info, *graph.output)
    types = {v.name: v.type for v in infos if v.name in wanted}
    data = {t.name: t for t in graph.initializer if t.name in wanted}
    for t in data.values():
        types.setdefault(t.name, onnx.helper.make_tensor_type_proto(t.data_type, t.dims))
    for node in graph.node:  # a Constant's value, as inference reads it
        constant = node.op_type == "Constant" and node.domain in ("", "ai.onnx")
        if constant and node.output[0] in wanted and node.attribute[0].name == "value":
            data[node.output[0]] = node.attribute[0].t
    imports = {e.domain: e.version for e in proto.opset_import}
    unconfirmed = {}
    for node in makers:
        for output in declared.intersection(node.output):
            if not _inference_gives_a_shape(node, output, types, data, imports):
                unconfirmed[output] = (node.name or f"<unnamed {node.op_type}>", node.op_type)
    return unconfirmed


def _inference_gives_a_shape(
    node: onnx.NodeProto,
    output: str,
    types: dict[str, onnx.TypeProto],
    data: dict[str, onnx.TensorProto],
    imports: dict[str, int],
) -> bool:
    version = imports.get("" if node.domain == "ai.onnx" else node.domain)
    try:
        schema = onnx.defs.get_schema(node.op_type, version or 1, node.domain)
        inferred = onnx.shape_inference.infer_node_outputs(
            schema,
            node,
            {name: types[name] for name in node.input if name in types},
            {name: data[name] for name in node.input if name in data},
        )
    except Exception:  # no schema, or inference fails on its own: nothing confirmed
        return False
    found = inferred.get(output)
    return found is not None and found.tensor_type.HasField("shape")


def _outputs_of(model: ir.Model | onnx.ModelProto) -> Callable[[str, str], list[str]]:
    """What the main-graph nodes named `name` of op `op_type` make (onnx names no node
    in its message when it has no name: every unnamed node of that op then)."""

    def outputs(name: str, op_type: str) -> list[str]:
        if isinstance(model, ir.Model):
            nodes = [n for n in model.graph if (n.name or "", n.op_type) == (name, op_type)]
            return [v.name or "" for n in nodes for v in n.outputs]
        protos = [n for n in model.graph.node if (n.name, n.op_type) == (name, op_type)]
        return [o for n in protos for o in n.output]

    return outputs


def _same_schema_remedy(op_type: str, source: int) -> str:
    """'a target opset in a..b': the opsets at which `op_type` has its schema at `source`."""
    versions = schema_versions(op_type)
    at_source = max((v for v in versions if v <= source), default=None)
    if at_source is None:
        return f"keeping opset {source}"
    later = [v for v in versions if v > at_source]
    last = later[0] - 1 if later else onnx.defs.onnx_opset_version()
    return f"a target opset in {at_source}..{last} ({op_type}-{at_source} there)"


def _report_of(job: Job, source: int | None) -> Report:
    return Report(source, job.opset, profile=job.profile.name if job.profile else None)


def _import_default_opset(
    prepared: onnx.ModelProto, opset: int, base_dir: str, progress: Progress
) -> CheckedModel:
    """`prepared`, which imports no default-domain opset, importing `opset` (and at an IR
    version that allows it), checked."""
    prepared.opset_import.append(onnx.helper.make_opsetid("", opset))
    prepared.ir_version = max(prepared.ir_version, min_ir_version(opset))
    return check_proto_result(prepared, base_dir, progress)


def whole_graph(
    prepared: onnx.ModelProto, base_dir: str | os.PathLike[str], progress: Progress = QUIET
) -> tuple[ir.Model, DeclaredOutputs]:
    """The whole of `prepared` (changed) in onnx_ir, its outputs typed as inference refines
    them, and the outputs as the model declares them, for `check_result` to write back."""
    declared = {key: _copy(info) for key, info in declared_outputs(prepared).items()}
    use_refined_outputs(prepared)
    return model_from_proto(prepared, base_dir, progress), declared


def normalise_opset_imports(proto: onnx.ModelProto) -> None:
    """One opset import per domain, in the model and in every function; '' and 'ai.onnx'
    are one domain, written ''. The version kept is the one onnx's checker reads: the
    last entry of a domain. '' and 'ai.onnx' at different versions is refused
    (InvalidModelError): onnx's checker reads the one, a runtime may read the other, and
    the model's meaning depends on which."""
    scopes = [("the model", proto.opset_import)]
    scopes += [(f"function {f.domain}::{f.name}", f.opset_import) for f in proto.functions]
    for where, imports in scopes:
        _refuse_two_default_versions(where, imports)
        has_default = any(e.domain == "" for e in imports)
        versions: dict[str, int] = {}
        for entry in imports:
            if not (entry.domain == "ai.onnx" and has_default):
                versions[entry.domain] = entry.version
        if "ai.onnx" in versions:
            versions[""] = versions.pop("ai.onnx")
        if len(versions) == len(imports) and all(e.domain != "ai.onnx" for e in imports):
            continue
        order = list(dict.fromkeys("" if e.domain == "ai.onnx" else e.domain for e in imports))
        del imports[:]
        imports.extend(onnx.helper.make_opsetid(domain, versions[domain]) for domain in order)


def _refuse_two_default_versions(where: str, imports: Iterable[onnx.OperatorSetIdProto]) -> None:
    plain = [e.version for e in imports if e.domain == ""]
    alias = [e.version for e in imports if e.domain == "ai.onnx"]
    if plain and alias and plain[-1] != alias[-1]:
        raise InvalidModelError(
            f"{where} imports the default domain twice, as '' (opset {plain[-1]}) and as "
            f"'ai.onnx' (opset {alias[-1]}), two names of one domain; tools differ on which "
            "counts, so keep one import (or give both the same version)"
        )


def _copy(message: onnx.ValueInfoProto) -> onnx.ValueInfoProto:
    copy = onnx.ValueInfoProto()
    copy.CopyFrom(message)
    return copy


def _family_node_order(model: ir.Model) -> list[FamilyNode]:
    """The family nodes as `in_graph_order` needs them: where and which, in graph order."""
    found = []
    for name, container, _ in containers(model):
        places = subgraph_places(name, container)
        found += [
            place_of(places.get(id(node.graph), name), node)
            for node in ir.traversal.RecursiveGraphIterator(container)
            if node.domain == "" and node.op_type in FAMILY
        ]
    return found


def rewrite_line(rewrite: Rewrite) -> str:
    return (
        f"{rewrite.where}: node {rewrite.node!r} {rewrite.op_type} "
        f"{rewrite.from_version}→{rewrite.to_version}: {rewrite.what}"
    )


def _lowering_line(profile: str | None, lowering: Lowering) -> str:
    return (
        f"profile {profile!r}: {lowering.where}: node {lowering.node!r} {lowering.op_type} "
        f"({lowering.rejection}): {' → '.join(lowering.steps)}, {lowering.nodes_after} nodes"
    )


def _grouped_lines(conversions: list[OtherOpConversion], limit: int) -> list[str]:
    """One line per (place, op, version step, how), with its count and node names."""
    groups: dict[tuple[str, str, int, int | None, str], list[str]] = {}
    for c in conversions:
        key = (c.where, c.op_type, c.from_version, c.to_version, c.how)
        groups.setdefault(key, []).append(c.node)
    lines = []
    for (where, op_type, old, new, how), nodes in groups.items():
        step = f"{op_type} {old}→{new if new is not None else '-'}"
        shown = ", ".join(repr(n) for n in nodes[:limit])
        more = f" and {len(nodes) - limit} more" if len(nodes) > limit else ""
        how_text = "" if how in (RELABELLED, DELEGATED, EXPANDED) else f": {how}"
        lines.append(f"    {where}: {step} ×{len(nodes)}{how_text}: {shown}{more}")
    return lines


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


__all__ = [
    "Job",
    "Outcome",
    "Report",
    "into_profile_window",
    "normalise_opset_imports",
    "prepare",
    "run",
]
