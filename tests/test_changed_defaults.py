"""Attributes whose default changed between two versions of an op, or that a later version
added with a default: every such (op, attribute, version pair) in onnx.defs, walked through
the converter both ways, is written out, dropped only where the target behaves so, or
refused; never relabelled into another meaning (passes/version/changed_defaults.py).
The golden cases are in tests/golden/version_changed_defaults.onnxtxt."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numpy as np
import onnx
import onnx.helper
import onnx.version_converter
import onnx_ir as ir
import pytest

import maxlower
from maxlower.runtime import bit_equal, run_model
from passes import ConversionError
from passes.version.changed_defaults import (
    ADAPTED_WHOLE,
    OLD_BEHAVIOUR,
    RENAMED_VALUES,
    UNSAID,
    changed_defaults,
)
from passes.version.to_opset import ConvertToOpsetPass


def _default(attribute):
    default = attribute.default_value
    if default is None or not default.name:
        return UNSAID
    return onnx.helper.get_attribute_value(default)


def _schemas():
    by_op = defaultdict(dict)
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain == "":
            by_op[schema.name][schema.since_version] = schema
    return by_op


SCHEMAS = _schemas()


def _pairs():
    """(op, attribute, before, after): consecutive versions where `after` has the attribute
    with a default that `before` does not have (a new attribute, or another default)."""
    for op, schemas in sorted(SCHEMAS.items()):
        for before, after in itertools.pairwise(sorted(schemas)):
            old, new = schemas[before].attributes, schemas[after].attributes
            for name, attribute in new.items():
                default = _default(attribute)
                if default is UNSAID or (name in old and _same(_default(old[name]), default)):
                    continue
                yield op, name, before, after


def _same(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float) and a == b)


PAIRS = list(_pairs())


def _old_behaviour(op, name, before, after):
    """What the op at `before` does without the attribute, spelt as `after` spells it: the
    documented table where onnx.defs cannot tell, else `before`'s default, else (a new
    attribute) `after`'s, which kept the old behaviour as its default."""
    schema_before, schema_after = SCHEMAS[op][before], SCHEMAS[op][after]
    if (op, name, before) in OLD_BEHAVIOUR:
        value = OLD_BEHAVIOUR[(op, name, before)]
    elif name in schema_before.attributes:
        value = _default(schema_before.attributes[name])
    else:
        value = _default(schema_after.attributes[name])
    return RENAMED_VALUES.get((op, name, after), {}).get(value, value)


def _differs(pair) -> bool:
    op, name, _, after = pair
    new = _default(SCHEMAS[op][after].attributes[name])
    return not _same(_old_behaviour(*pair), new) or (op, after) in ADAPTED_WHOLE


# the pairs where a relabel changes meaning: every one of them must be in this list, which
# says where it is held end to end (the golden file, or a case below)
MEANING_PAIRS = {
    ("Clip", "max", 1, 6): "golden clip_1_to_6",
    ("Clip", "min", 1, 6): "golden clip_1_to_6",
    ("Hardmax", "axis", 11, 13): "test_walk",
    ("LogSoftmax", "axis", 11, 13): "test_walk",
    ("Softmax", "axis", 11, 13): "golden softmax_11_to_13",
    ("Selu", "alpha", 1, 6): "golden selu_1_to_6",
    ("Selu", "gamma", 1, 6): "golden selu_1_to_6",
    ("Split", "axis", 1, 2): "golden split_1_without_axis_to_2",
    ("RoiAlign", "coordinate_transformation_mode", 10, 16): "golden roi_align_*",
    **{
        ("Resize", name, 10, 11): "passes/version/resize.py, tests/golden/version_axes_ops"
        for name in (
            "coordinate_transformation_mode",
            "cubic_coeff_a",
            "exclude_outside",
            "extrapolation_value",
            "nearest_mode",
        )
    },
}


def test_every_pair_that_changes_meaning_is_known():
    """A new onnx release that adds such a pair fails here until it is handled and held."""
    found = {pair for pair in PAIRS if _differs(pair)}
    assert found == set(MEANING_PAIRS)
    # the module's own derivation finds the same class (Resize-11's aside, which resize.py
    # spells as a whole)
    derived = {
        (c.op_type, c.attribute, c.before, c.after)
        for op in SCHEMAS
        for c in changed_defaults(op)
        if _default(SCHEMAS[op][c.after].attributes.get(c.attribute)) is not UNSAID
        if c.attribute in SCHEMAS[op][c.after].attributes
    }
    expected = {p for p in found if (p[0], p[3]) not in ADAPTED_WHOLE}
    assert derived == expected


def test_renamed_values_are_the_pairs_whose_defaults_differ_only_in_spelling():
    """GridSample-20 spells bilinear/bicubic as linear/cubic: its default changed in name
    only, and the walk holds the renaming both ways (grid_sample_* in the golden file)."""
    spelled = {
        (op, name, after)
        for op, name, before, after in PAIRS
        if name in SCHEMAS[op][before].attributes and not _differs((op, name, before, after))
        if (op, name, before) not in OLD_BEHAVIOUR
    }
    assert spelled == set(RENAMED_VALUES)


def test_the_table_holds_only_what_onnx_defs_cannot_tell():
    for (op, name, version), value in OLD_BEHAVIOUR.items():
        schema = SCHEMAS[op][version]
        if name not in schema.attributes:  # a later version added it: its text says it
            later = [s for v, s in sorted(SCHEMAS[op].items()) if name in s.attributes]
            text = later[0].attributes[name].description
            assert isinstance(value, bytes) and f"'{value.decode()}'" in text
            assert "backward-compatible" in text
        elif isinstance(value, bytes):  # a default onnx.defs misspells: the text says which
            assert _default(schema.attributes[name]) != value
            assert f"{value.decode()} (default)" in schema.attributes[name].description
        else:  # no default in onnx.defs (Concat-1's description says its own)
            assert _default(schema.attributes[name]) is UNSAID
            description = schema.attributes[name].description
            assert (
                value is UNSAID or math.isinf(value) or f"Default value is {value}." in description
            )


def _first_type(schema, formal) -> ir.DataType:
    allowed = {c.type_param_str: c.allowed_type_strs for c in schema.type_constraints}
    strs = allowed.get(formal.type_str, [formal.type_str])
    pick = "tensor(float)" if "tensor(float)" in strs else strs[0]
    name = pick.removeprefix("tensor(").removesuffix(")").upper()
    return ir.DataType[name]


_FILL = {
    onnx.defs.OpSchema.AttrType.INT: 1,
    onnx.defs.OpSchema.AttrType.FLOAT: 1.0,
    onnx.defs.OpSchema.AttrType.INTS: [1],
}


def _one_node_model(op: str, version: int, attributes: dict) -> ir.Model | None:
    """`op` at schema `version` alone in a model at that opset, its inputs typed by the
    first type each constraint allows (float where it may), shapes unknown; None where a
    required attribute has no simple filler."""
    schema = SCHEMAS[op][version]
    attrs = dict(attributes)
    for name, attribute in schema.attributes.items():
        if attribute.required and name not in attrs:
            if attribute.type not in _FILL:
                return None
            attrs[name] = _FILL[attribute.type]
    try:
        inputs = [
            ir.Value(name=f"in{i}", type=ir.TensorType(_first_type(schema, formal)))
            for i, formal in enumerate(schema.inputs[: schema.min_input])
        ]
    except KeyError:
        return None
    node = ir.Node(
        "",
        op,
        inputs,
        attributes=[
            ir.serde.deserialize_attribute(onnx.helper.make_attribute(k, v))
            for k, v in attrs.items()
        ],
        num_outputs=max(schema.min_output, 1),
    )
    for i, value in enumerate(node.outputs):
        value.name = f"out{i}"
    graph = ir.Graph(inputs, node.outputs, nodes=[node], opset_imports={"": version})
    return ir.Model(graph, ir_version=10)


def _attribute_after(model: ir.Model, op: str, name: str):
    nodes = [n for n in model.graph if n.op_type == op]
    if len(nodes) != 1:
        return "adapted", None
    attr = nodes[0].attributes.get(name)
    return "kept", (None if attr is None else _value(attr))


def _value(attr: ir.Attr):
    return onnx.helper.get_attribute_value(ir.serde.serialize_attribute(attr))


def _convert(op, name, version, attributes, target):
    model = _one_node_model(op, version, attributes)
    if model is None:
        return "unbuilt", None
    try:
        ConvertToOpsetPass(target)(model)
    except ConversionError:
        return "refused", None
    return _attribute_after(model, op, name)


WALKED: dict[str, list] = defaultdict(list)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}.{p[1]}.{p[2]}-{p[3]}")
def test_walk(pair):
    """Up, the attribute absent: the node at `after` says the old behaviour, or the
    conversion is refused. Down, the attribute absent or set to `after`'s default: where
    `before` lacks the attribute the node converts only if that is `before`'s behaviour;
    where `before` has it, the node says `after`'s default there."""
    op, name, before, after = pair
    old = _old_behaviour(*pair)
    new = _default(SCHEMAS[op][after].attributes[name])
    how, said = _convert(op, name, before, {}, after)
    WALKED["up", how].append(pair)
    if how == "kept":
        meant = said if said is not None else new
        assert _same(meant, old), f"{op}-{before} → {after}: {name}={meant!r}, was {old!r}"
    if how == "refused" and (op, after) not in ADAPTED_WHOLE and _differs(pair):
        assert old is UNSAID, "refused where the old behaviour can be said"
    renamed = {b: a for a, b in RENAMED_VALUES.get((op, name, after), {}).items()}
    for attributes in ({}, {name: new}):
        how, said = _convert(op, name, after, attributes, before)
        WALKED["down", how].append(pair)
        if how != "kept":
            continue
        if name not in SCHEMAS[op][before].attributes:
            assert said is None and _same(old, new), f"{op}-{after} → {before}: meaning lost"
        else:
            fallback = OLD_BEHAVIOUR.get((op, name, before), _old_default(op, name, before))
            meant = said if said is not None else fallback
            assert _same(meant, renamed.get(new, new)), f"{op}-{after} → {before}: {meant!r}"


def _old_default(op, name, before):
    return _default(SCHEMAS[op][before].attributes[name])


def test_walk_reaches_the_converter():
    """The walk has teeth: most pairs convert through the pass (not refused, not unbuilt),
    among them every meaning-changing pair whose old behaviour can be said."""
    for pair in PAIRS:
        test_walk(pair)
    up_kept = set(WALKED["up", "kept"])
    assert len(up_kept) >= len(PAIRS) * 2 // 3, dict(WALKED)
    for pair in [
        ("RoiAlign", "coordinate_transformation_mode", 10, 16),
        ("Softmax", "axis", 11, 13),
        ("Hardmax", "axis", 11, 13),
        ("LogSoftmax", "axis", 11, 13),
        ("GridSample", "mode", 16, 20),
    ]:
        assert pair in up_kept


ROI = """<ir_version: 8, opset_import: ["" : {opset}]>
g (float[2,3,10,12] x, float[5,4] rois, int64[5] idx) => (float[5,3,3,4] y) {{
  y = RoiAlign <output_height = 3, output_width = 4, sampling_ratio = 2{attrs}> (x, rois, idx)
}}"""


def _roi_feeds(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x1, y1 = rng.uniform(0, 6, 5), rng.uniform(0, 5, 5)
    rois = np.stack([x1, y1, x1 + rng.uniform(0.5, 6, 5), y1 + rng.uniform(0.5, 5, 5)], 1)
    return {
        "x": rng.standard_normal((2, 3, 10, 12)).astype(np.float32),
        "rois": rois.astype(np.float32),
        "idx": rng.integers(0, 2, 5).astype(np.int64),
    }


@pytest.mark.parametrize("target", [16, 22])
def test_roi_align_10_up_is_bit_exact_in_onnxruntime(target):
    """RoiAlign-10 → 16 (and across 22 too) gives onnxruntime's outputs bit for bit, as
    onnx.version_converter's result does; and back to 10 with output_half_pixel dropped."""
    source = onnx.parser.parse_model(ROI.format(opset=10, attrs=""))
    ours = maxlower.convert(source, target)
    theirs = onnx.version_converter.convert_version(source, target)
    (node,) = ours.graph.node
    assert {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}[
        "coordinate_transformation_mode"
    ] == b"output_half_pixel"
    back = maxlower.convert(ours, 10)
    assert [a.name for a in back.graph.node[0].attribute] == [
        "output_height",
        "output_width",
        "sampling_ratio",
    ]
    half = onnx.parser.parse_model(ROI.format(opset=16, attrs=""))
    for seed in range(5):
        feeds = _roi_feeds(seed)
        expected, _ = run_model(source, feeds)
        for model in (ours, theirs, back):
            assert bit_equal(expected[0], run_model(model, feeds)[0][0])
        # and the half-pixel shift the relabel made is a real difference here
        assert not bit_equal(expected[0], run_model(half, feeds)[0][0])


@pytest.mark.parametrize("attrs", ["", ', coordinate_transformation_mode = "half_pixel"'])
def test_roi_align_16_half_pixel_to_10_is_refused(attrs):
    source = onnx.parser.parse_model(ROI.format(opset=16, attrs=attrs))
    with pytest.raises(ConversionError) as info:
        maxlower.convert(source, 10)
    message = str(info.value)
    assert "\n" not in message and "(RoiAlign)" in message
    assert "behaves as coordinate_transformation_mode='output_half_pixel'" in message
    assert info.value.remedy.startswith("a target opset in 16..")


def test_roi_align_10_to_16_is_reported_as_written_out_not_relabelled():
    source = onnx.parser.parse_model(ROI.format(opset=10, attrs=""))
    _, report = maxlower.convert_with_report(source, 16)
    (conversion,) = report.conversions
    assert conversion.how == (
        "coordinate_transformation_mode='output_half_pixel' written out "
        "(RoiAlign-16 defaults to 'half_pixel')"
    )
