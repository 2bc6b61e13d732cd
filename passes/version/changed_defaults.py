"""Attributes whose default, or whose meaning when absent, differs between two versions of
an op: what a node says at its version is written out, or kept for the adapters to refuse,
at the target version; it is never relabelled into another meaning.

    RoiAlign-10(x, rois, i), to 16               →  RoiAlign-16{coordinate_transformation_mode=
                                                    "output_half_pixel"}   (made explicit)
    RoiAlign-16{..."output_half_pixel"}, to 10   →  RoiAlign-10            (old behaviour: dropped)
    RoiAlign-16 (half_pixel, said or not), to 10 →  ConversionError        (no such form at 10)
    Softmax-11(x), to 13                         →  Softmax-13{axis=1}     (default 1 → -1)
    Selu-1(x), to 6                              →  Selu-6{alpha=1.6732, gamma=1.0507}
    GridSample-16{mode="bicubic"}, to 20         →  GridSample-20{mode="cubic"} (renamed value)
    Clip-1(x){max=1}, to 6                       →  Clip-6{max=1, min=-inf} (no lower bound)
    Split-1(x) without axis, to 2                →  ConversionError        (Split-1 does not say)

What an absent attribute means at a version (`absent_value`) comes from `onnx.defs`: the
schema's `default_value` where the version has the attribute, and where a later version added
it, that version's default (the newer version kept the old behaviour as its default). Where
`onnx.defs` cannot tell, the old behaviour is in `OLD_BEHAVIOUR`, each row from the schema's
own description. tests/test_changed_defaults.py walks every (op, attribute, version pair) of
`onnx.defs` where the two differ and checks that none is relabelled silently, and that every
pair `onnx.defs` leaves open is in the table.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math

import onnx
import onnx_ir as ir

from passes.graph_utils import op_versions

# (op, attribute, since_version) → what the op does at that version when the attribute is
# absent, where onnx.defs does not say it (UNSAID: the schema says nothing, and a node must
# set the attribute to be converted). Values are spelt as the first version having the
# attribute spells them.
UNSAID = "<not said by the schema>"
OLD_BEHAVIOUR: dict[tuple[str, str, int], object] = {
    # RoiAlign-16's description: "Use the value 'output_half_pixel' to omit the pixel shift
    # for the input (use this for a backward-compatible behavior)"; RoiAlign-10 has no shift.
    ("RoiAlign", "coordinate_transformation_mode", 10): b"output_half_pixel",
    # Clip-1: "Minimum value, under which element is replaced by min" (no default): without
    # it nothing is replaced, which Clip-6's float attributes spell as ∓inf (Clip-6's own
    # defaults, ∓FLT_MAX, would turn ∓inf into ∓FLT_MAX).
    ("Clip", "min", 1): -math.inf,
    ("Clip", "max", 1): math.inf,
    # Concat-1: "Which axis to concat on.  Default value is 1." (no default_value);
    # Concat-4 requires the attribute.
    ("Concat", "axis", 1): 1,
    # Split-1: "Which axis to split on", no default; Split-2 reads an absent axis as 0.
    ("Split", "axis", 1): UNSAID,
    # GRU-1's default_value is the misspelling b"foward"; its description: "Must be one of
    # forward (default), reverse, or bidirectional."
    ("GRU", "direction", 1): b"forward",
}

# (op, attribute, since_version) → {value before: the same value from that version on},
# from the descriptions: GridSample-16 "bilinear (default), nearest and bicubic", -20
# "linear (default), nearest and cubic" ("linear ... bilinear for 2 spatial dimensions").
# (GRU-1's b"foward" is not renamed: its description calls the default "forward".)
RENAMED_VALUES: dict[tuple[str, str, int], dict[object, object]] = {
    ("GridSample", "mode", 20): {b"bilinear": b"linear", b"bicubic": b"cubic"},
}

# (op, since_version) whose added attributes an own adapter reads and writes as a whole,
# because the old behaviour is no one value of them: Resize-10's nearest rounding depends
# on the scale (passes/version/resize.py; relabel.MEANING_CHANGES keeps it from relabelling).
ADAPTED_WHOLE = {("Resize", 11)}

NOT_APPLICABLE = "<removed before this version>"  # moved to an input, or legacy: adapters'


@dataclasses.dataclass(frozen=True)
class ChangedDefault:
    """One attribute whose absent meaning differs between two consecutive versions."""

    op_type: str
    attribute: str
    before: int  # since_version
    after: int
    old: object  # absent_value at `before`, spelt as from `after` on
    new: object


@functools.cache  # per (op, attribute, version): every node of the op asks the same
def absent_value(op_type: str, name: str, version: int) -> object:
    """What `op_type` at schema `version` does when `name` is absent, as a value of the
    attribute spelt as at `version`: UNSAID when no schema says, NOT_APPLICABLE when the
    attribute was removed (moved to an input, say) before `version`."""
    key = (op_type, name, version)
    if key in OLD_BEHAVIOUR:
        return OLD_BEHAVIOUR[key]
    having = [v for v in op_versions(op_type) if name in _schema(op_type, v).attributes]
    if version in having:
        return _default(_schema(op_type, version).attributes[name])
    if any(v < version for v in having) or not having:
        return NOT_APPLICABLE
    first = min(having)
    return _spelt(op_type, name, _default(_schema(op_type, first).attributes[name]), first, version)


def changed_defaults(op_type: str) -> list[ChangedDefault]:
    """Every attribute of `op_type` whose absent meaning differs between two consecutive
    schema versions (the class a relabel must not cross without saying the attribute)."""
    versions = op_versions(op_type)
    found = []
    for before, after in itertools.pairwise(versions):
        names = dict.fromkeys(
            [*_schema(op_type, before).attributes, *_schema(op_type, after).attributes]
        )
        for name in names:
            old = _canonical(op_type, name, absent_value(op_type, name, before), before, after)
            new = absent_value(op_type, name, after)
            if NOT_APPLICABLE in (old, new) or _same(old, new):
                continue
            found.append(ChangedDefault(op_type, name, before, after, old, new))
    return found


def attributes_for_target(node: ir.Node, old: int, new: int) -> TargetAttributes:
    """Make `node` (at schema version `old`) say at schema version `new` what it says at
    `old`: an attribute whose absent meaning differs is written out (spelt for `new`); one
    `new` lacks is dropped where its value is `new`'s behaviour, and otherwise kept for the
    adapters and the refusal (see TargetAttributes for what it returns). Raises
    UnsaidDefault where the old version does not say what an absent attribute means."""
    op = node.op_type
    old_schema, new_schema = _schema(op, old), _schema(op, new)
    modified = False
    kept: dict[str, str] = {}
    written: list[str] = []
    for name in dict.fromkeys([*old_schema.attributes, *new_schema.attributes]):
        attr = node.attributes.get(name)
        if attr is not None and attr.ref_attr_name:
            continue  # a function's attribute its calls give: its value is theirs to say
        if _adapted_whole(op, name, old, new):
            # the adapter reads the node's attributes with the source's defaults
            if attr is not None and name not in new_schema.attributes:
                default = old_schema.attributes[name].default_value
                if (
                    default is not None
                    and default.name
                    and _same(_value(attr), _default(old_schema.attributes[name]))
                ):
                    del node.attributes[name]
                    modified = True
            continue
        if (
            name in old_schema.attributes
            and name in new_schema.attributes
            and old_schema.attributes[name].type != new_schema.attributes[name].type
        ):
            continue  # another kind of value (Cast's `to`): its own adapter respells it
        said = _value(attr) if attr is not None else absent_value(op, name, old)
        target = absent_value(op, name, new)
        if said is NOT_APPLICABLE:
            continue
        if target is NOT_APPLICABLE:
            # removed by `new` (an operand that became an input, legacy attributes): at
            # the source's default it goes, as the version after it means that by default
            # (Dropout-7's ratio=0.5 is Dropout-12's absent ratio input); otherwise its
            # adapter reads it, so an absent value onnx.defs does not give is written out
            default = (
                _default(old_schema.attributes[name]) if name in old_schema.attributes else UNSAID
            )
            if attr is not None and default is not UNSAID and _same(_value(attr), default):
                del node.attributes[name]
                modified = True
                continue
            if (
                attr is None
                and name in old_schema.attributes
                and said is not UNSAID
                and not _same(said, _default(old_schema.attributes[name]))
            ):
                node.attributes[name] = _attribute(old_schema, name, said)
                modified = True
            continue
        value = _canonical(op, name, said, old, new)
        if value is UNSAID:  # absent, and the schema does not say what that means
            if target is UNSAID or name not in new_schema.attributes:
                continue
            raise UnsaidDefault(op, name, old, new, target)
        if name in new_schema.attributes:
            if attr is None and _same(value, target):
                continue
            spelt = _attribute(new_schema, name, value)
            if attr is None or not _same(_value(attr), value):
                node.attributes[name] = spelt
                modified = True
                if attr is not None:
                    how = f"spelt {_text(value)} as {op}-{new} does"
                    written.append(f"{name}={_text(_value(attr))} {how}")
                elif target is UNSAID:
                    how = f"{op}-{new} does not say what an absent {name!r} means"
                    written.append(f"{name}={_text(value)} written out ({how})")
                else:
                    how = f"{op}-{new} defaults to {_text(target)}"
                    written.append(f"{name}={_text(value)} written out ({how})")
            continue
        if _same(value, target):  # `new` lacks it and behaves as it says
            if attr is not None:
                del node.attributes[name]
                modified = True
            continue
        if attr is None:  # say what it does, for the adapters (and the refusal) to read
            node.attributes[name] = _attribute(old_schema, name, said)
            modified = True
        if target is UNSAID:  # (no schema says what `new` does: the checker's words stand)
            continue
        kept[name] = (
            f"{op}-{new} has no {name!r} and behaves as {name}={_text(target)}, "
            f"where this node's is {_text(said)}"
        )
    return TargetAttributes(modified, written, kept)


@dataclasses.dataclass
class TargetAttributes:
    """What `attributes_for_target` did: whether the node changed, what it wrote out or
    respelt (for the report: a node so changed is not only relabelled), and {attribute the
    target lacks: why the node cannot keep its meaning there as it is}."""

    modified: bool
    written: list[str]
    kept: dict[str, str]


class UnsaidDefault(Exception):
    """The source version does not say what an absent attribute means."""

    def __init__(self, op: str, name: str, old: int, new: int, target: object) -> None:
        self.name = name
        super().__init__(
            f"{op}-{old} does not say what an absent {name!r} means ({op}-{new} reads it as "
            f"{name}={_text(target)})"
        )


def _adapted_whole(op: str, name: str, old: int, new: int) -> bool:
    low, high = sorted((old, new))
    return any(
        o == op and low < v <= high and name not in _schema(op, low).attributes
        for o, v in ADAPTED_WHOLE
    )


def _canonical(op: str, name: str, value: object, version: int, to: int) -> object:
    """`value`, spelt at schema `version`, as schema `to` spells it."""
    for (o, n, since), renames in sorted(RENAMED_VALUES.items(), key=lambda kv: kv[0][2]):
        if o != op or n != name:
            continue
        if version < since <= to:
            value = renames.get(value, value)
        elif to < since <= version:
            value = {b: a for a, b in renames.items()}.get(value, value)
    return value


def _spelt(op: str, name: str, value: object, version: int, to: int) -> object:
    return _canonical(op, name, value, version, to)


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return repr(value.decode())
    return "absent" if value is UNSAID else repr(value)


def _default(attribute: onnx.defs.OpSchema.Attribute) -> object:
    default = attribute.default_value
    if default is None or not default.name:
        return UNSAID
    return onnx.helper.get_attribute_value(default)


def _value(attr: ir.Attr) -> object:
    return onnx.helper.get_attribute_value(ir.serde.serialize_attribute(attr))


def _attribute(schema: onnx.defs.OpSchema, name: str, value: object) -> ir.Attr:
    kind = int(schema.attributes[name].type)  # OpSchema.AttrType: AttributeProto's numbers
    return ir.serde.deserialize_attribute(onnx.helper.make_attribute(name, value, attr_type=kind))


@functools.cache
def _schema(op_type: str, version: int) -> onnx.defs.OpSchema:
    return onnx.defs.get_schema(op_type, version, "")
