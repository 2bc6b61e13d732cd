"""Emit helper nodes that are valid at one target opset.

Adapters describe a rewrite once ("cast x to float", "squeeze axis 2") and this module
spells it the way the target opset wants: `Cast.to` as a string before opset 6, `axes`
as an attribute or an input for Squeeze/Unsqueeze/ReduceSum/Slice, legacy `broadcast=1`
before opset 7. Every op is looked up in `onnx.defs` first, so a helper that does not
exist at the target fails with a ConversionError instead of producing an invalid model.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence

import numpy as np
import onnx
import onnx_ir as ir

from passes.errors import ConversionError
from passes.extremum import FAMILY_OF, Extremum
from passes.graph_utils import op_versions
from passes.names import Namer

# Every op of both extremum families (passes.extremum): Max, ReduceMax, ArgMax, Min, ...
FAMILY = tuple(FAMILY_OF)


@functools.cache  # onnx.defs does not change while we run, and every node asks
def schema_version(op_type: str, opset: int) -> int | None:
    """The since_version of `op_type` in the default domain at `opset`, or None if absent."""
    try:
        return onnx.defs.get_schema(op_type, opset, "").since_version
    except onnx.defs.SchemaError:
        return None


@functools.cache
def schema_accepts(op_type: str, opset: int, dtype: ir.DataType, input_index: int = 0) -> bool:
    """Whether `op_type` at `opset` accepts `dtype` for its formal input `input_index`
    (the last formal for the later inputs of a variadic one)."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except onnx.defs.SchemaError:
        return False
    formal = schema.inputs[min(input_index, len(schema.inputs) - 1)]
    allowed = {c.type_param_str: c.allowed_type_strs for c in schema.type_constraints}
    names = allowed.get(formal.type_str)
    if names is None:  # a fixed type such as tensor(int64)
        names = [formal.type_str]
    return f"tensor({_onnx_type_name(dtype)})" in names


def _onnx_type_name(dtype: ir.DataType) -> str:
    return {ir.DataType.FLOAT: "float", ir.DataType.DOUBLE: "double"}.get(dtype, dtype.name.lower())


def min_ir_version(opset: int) -> int:
    """The lowest IR version a model importing default-domain `opset` may declare."""
    try:
        return onnx.helper.find_min_ir_version_for([onnx.helper.make_opsetid("", opset)])
    except ValueError:  # opsets 2-4 were never released; IR 3 is what opsets 1 and 5 use
        return 3


def first_opset_of(op_type: str) -> int:
    """The lowest opset in which `op_type` exists."""
    return op_versions(op_type)[0]


@functools.cache
def axes_input_since(op_type: str) -> int | None:
    """The schema version at which `op_type`'s `axes` became an input (Squeeze and
    Unsqueeze 13, ReduceSum 13, the other reductions 18), from onnx.defs; None when it
    never did or always was one."""
    schemas = [onnx.defs.get_schema(op_type, v, "") for v in op_versions(op_type)]
    for before, after in itertools.pairwise(schemas):
        if "axes" in [i.name for i in after.inputs] and "axes" in before.attributes:
            return after.since_version
    return None


# Elementwise ops that needed `broadcast=1` for any broadcasting before opset 7.
_LEGACY_BROADCAST = {"Add", "Sub", "Mul", "Div", "Equal", "Less", "Greater", "And", "Or", "Xor"}


class Builder:
    """Creates nodes for `target_opset` and inserts them before `anchor`.

    With `anchor=None` the nodes are only collected in `self.nodes`; that is how If
    branches are built. Family nodes are announced through `on_family`, so that the
    version-conversion driver can bring them to the target as well. Every name it makes
    comes from `namer`, which knows every name in the model (passes.names); without one,
    the names of `graph` (or the anchor's graph) and its subgraphs are the ones avoided.
    """

    def __init__(
        self,
        target_opset: int,
        anchor: ir.Node | None,
        *,
        culprit: ir.Node,
        on_family: Callable[[ir.Node, int], None],
        namer: Namer | None = None,
        in_function: bool = False,
        graph: ir.Graph | None = None,
        constants: dict | None = None,
    ) -> None:
        self.opset = target_opset
        self.anchor = anchor
        self.culprit = culprit
        self.on_family = on_family
        self.nodes: list[ir.Node] = []
        self.in_function = in_function
        # Where initializers go: the anchor's graph, or for a body builder the enclosing one.
        self.graph = graph if graph is not None else (anchor.graph if anchor else None)
        if namer is None:
            namer = Namer.of_graph(self.graph) if self.graph is not None else Namer()
        self.namer = namer
        # Initializers already made, shared across builders: equal constants are made once.
        self._constants = constants if constants is not None else {}

    # -- plumbing ---------------------------------------------------------------------
    def refuse(self, reason: str, remedy: str) -> ConversionError:
        """The error for the node being rewritten (callers `raise b.refuse(...)`)."""
        return ConversionError(
            self.culprit.name or "<unnamed>", self.culprit.op_type, reason, remedy
        )

    def require(self, op_type: str) -> None:
        if schema_version(op_type, self.opset) is None:
            since = first_opset_of(op_type)
            raise self.refuse(
                f"the exact form at opset {self.opset} needs {op_type}, which ONNX only has "
                f"from opset {since}",
                f"target opset {since} or later",
            )

    def require_input_types(self, op_type: str, inputs: Sequence[ir.Value | None]) -> None:
        """Refuse a node whose typed input its schema at the target does not take.

        The one place that keeps every emitted node type-valid at the target opset: a form
        that is exact in numbers can still name an op on a type it lacks there (ReduceMax
        never takes int16, Mul takes int8 only from opset 14), and the model would fail the
        full checker. A family node made at an older version is left to the adapters that
        bring it to the target (they widen types on the way), so it is checked only when
        made at the target's version.
        """
        for index, value in enumerate(inputs):
            if value is not None and value.dtype is not None:
                self.require_accepts(op_type, value.dtype, "the exact form", index)

    def require_accepts(
        self, op_type: str, dtype: ir.DataType, what: str, input_index: int = 0
    ) -> None:
        """Refuse unless `op_type` at the target takes `dtype` (`what`: the form), naming
        the first opset that would."""
        if schema_accepts(op_type, self.opset, dtype, input_index):
            return
        later = next(
            (
                v
                for v in range(self.opset + 1, onnx.defs.onnx_opset_version() + 1)
                if schema_accepts(op_type, v, dtype, input_index)
            ),
            None,
        )
        raise self.refuse(
            f"{what} needs {op_type} on {dtype.name}, which {op_type} at opset {self.opset} "
            "does not take",
            f"target opset {later} or later" if later else f"another type than {dtype.name}",
        )

    def _insert(self, node: ir.Node) -> None:
        self.nodes.append(node)
        if self.anchor is not None:
            self.anchor.graph.insert_before(self.anchor, node)

    def sub_builder(self) -> Builder:
        """A builder for a subgraph body: same target, nodes collected, not inserted."""
        return Builder(
            self.opset,
            None,
            culprit=self.culprit,
            on_family=self.on_family,
            namer=self.namer,
            in_function=self.in_function,
            graph=self.graph,
            constants=self._constants,
        )

    def op(
        self,
        op_type: str,
        inputs: Sequence[ir.Value | None],
        attributes: dict | None = None,
        *,
        dtype: ir.DataType | None = None,
        shape: ir.Shape | None = None,
        family_version: int | None = None,
    ) -> ir.Value:
        """Emit one single-output node; `family_version` marks a Max- or Min-family node."""
        if family_version is None:
            self.require(op_type)
        if family_version in (None, schema_version(op_type, self.opset)):
            self.require_input_types(op_type, inputs)
        node = ir.node(
            op_type, list(inputs), attributes=attributes or {}, name=self._fresh_name(op_type)
        )
        out = node.outputs[0]
        out.name = self.namer.unique(node.name + "_out")
        if dtype is not None:
            out.dtype = dtype
        if shape is not None:
            out.shape = shape
        self._insert(node)
        if family_version is not None:
            self.on_family(node, family_version)
        return out

    def _fresh_name(self, op_type: str) -> str:
        return self.fresh(f"__{op_type.lower()}")

    def fresh(self, suffix: str) -> str:
        """A name no value or node of the model has: the culprit's name, `suffix`, a number."""
        return self.namer.fresh(f"{self.culprit.name or self.culprit.op_type}{suffix}")

    # -- constants ----------------------------------------------------------------------
    def const(self, array: np.ndarray | int | float, dtype: ir.DataType | None = None) -> ir.Value:
        """A constant: an initializer in graphs, a Constant node in functions.

        Initializers because Constant only takes float types before opset 9; a subgraph
        builder puts them in the enclosing graph, which its body can read.
        """
        array = np.asarray(array)
        if dtype is not None:
            array = array.astype(dtype.numpy())
        if self.in_function:
            if self.opset < 9 and array.dtype.kind not in "f":
                raise self.refuse(
                    f"the exact form needs a {array.dtype} constant inside a function, and "
                    "Constant only holds float types before opset 9 (functions have no "
                    "initializers)",
                    "target opset 9 or later",
                )
            tensor = ir.tensor(array)
            return self.op(
                "Constant", [], {"value": tensor}, dtype=tensor.dtype, shape=ir.Shape(array.shape)
            )
        key = (id(self.graph), array.dtype.str, array.shape, array.tobytes())
        cached = self._constants.get(key)
        if cached is not None and cached.graph is self.graph:
            return cached
        name = self._fresh_name("const")
        value = self._constants[key] = ir.Value(
            name=name,
            type=ir.TensorType(ir.DataType.from_numpy(array.dtype)),
            shape=ir.Shape(array.shape),
            const_value=ir.tensor(array, name=name),
        )
        self.graph.register_initializer(value)
        return value

    def axis_length(self, x: ir.Value, axis: int) -> ir.Value:
        """The length of x's `axis` as an int64 scalar: a constant where it is static, else
        Gather(Shape(x), axis) at run time (below opset 11 Gather takes no negative index,
        so `axis` must not be negative there)."""
        length = None if x.shape is None else x.shape[axis]
        if isinstance(length, int):
            return self.const(np.array(length, dtype=np.int64))
        rank = None if x.shape is None else ir.Shape([len(x.shape)])
        shape = self.op("Shape", [x], dtype=ir.DataType.INT64, shape=rank)
        return self.op(
            "Gather",
            [shape, self.const(np.array(axis, dtype=np.int64))],
            {"axis": 0},
            dtype=ir.DataType.INT64,
            shape=ir.Shape([]),
        )

    def arithmetic_select(
        self, condition: ir.Value, x: ir.Value, y: ir.Value, dtype: ir.DataType
    ) -> ir.Value:
        """Where(condition, x, y) without Where, for integer x and y: x*c + y*(1-c). Exact for
        integers (one product is the value times 1, the other times 0, and adding 0 never
        overflows), not for floats (inf * 0 is NaN). Mul and Add broadcast as Where does."""
        take = self.cast(condition, dtype)
        leave = self.cast(self.op("Not", [condition], dtype=ir.DataType.BOOL), dtype)
        return self.op(
            "Add",
            [self.op("Mul", [x, take], dtype=dtype), self.op("Mul", [y, leave], dtype=dtype)],
            dtype=dtype,
        )

    def int64_initializer(self, values: Sequence[int]) -> ir.Value:
        """An int64 vector as an initializer (backends such as TensorRT want constant axes
        there); in functions, which cannot hold initializers, a Constant."""
        return self.const(np.array(list(values), dtype=np.int64))

    def scalar_like(self, value: float | int, dtype: ir.DataType) -> ir.Value:
        return self.const(np.array(value, dtype=dtype.numpy()))

    # -- ops whose spelling depends on the opset ------------------------------------------
    def cast(self, x: ir.Value, to: ir.DataType) -> ir.Value:
        if x.dtype == to:
            return x
        self.require("Cast")
        if self.opset < 6 and self.in_function:
            raise self.refuse(
                "the exact form needs a Cast inside a function, and before opset 6 Cast names "
                "its target type as a string, which ONNX cannot type inside a function body",
                "target opset 6 or later",
            )
        if self.opset < 6:
            to_attr: int | str = onnx.TensorProto.DataType.Name(to.value)
        else:
            to_attr = int(to.value)
        return self.op("Cast", [x], {"to": to_attr}, dtype=to, shape=x.shape)

    def with_axes(
        self,
        op_type: str,
        inputs: list[ir.Value | None],
        axes: Sequence[int],
        attributes: dict | None = None,
        **kwargs,
    ) -> ir.Value:
        """Squeeze/Unsqueeze/ReduceSum/ReduceMin with `axes` spelt for the target opset."""
        attributes = dict(attributes or {})
        if self.opset >= axes_input_since(op_type):
            inputs = [*inputs, self.const(np.array(list(axes), dtype=np.int64))]
        else:
            attributes["axes"] = list(axes)
        return self.op(op_type, inputs, attributes, **kwargs)

    def squeeze(self, x: ir.Value, axes: Sequence[int]) -> ir.Value:
        return self.with_axes("Squeeze", [x], axes, dtype=x.dtype)

    def unsqueeze(self, x: ir.Value, axes: Sequence[int]) -> ir.Value:
        return self.with_axes("Unsqueeze", [x], axes, dtype=x.dtype)

    def binary(self, op_type: str, a: ir.Value, b: ir.Value, **kwargs) -> ir.Value:
        """An elementwise binary op; `b` may broadcast against `a` (numpy rules from opset
        7; before that only as a suffix of `a`'s shape, which is what `broadcast=1` says)."""
        attributes = {}
        if self.opset < 7 and op_type in _LEGACY_BROADCAST and _may_differ(a.shape, b.shape):
            attributes["broadcast"] = 1
        return self.op(op_type, [a, b], attributes, **kwargs)

    def slice(
        self,
        x: ir.Value,
        starts: Sequence[int],
        ends: Sequence[int],
        axes: Sequence[int],
        steps: Sequence[int] | None = None,
    ) -> ir.Value:
        self.require("Slice")
        if self.opset < 10:
            if steps is not None and any(s != 1 for s in steps):
                raise self.refuse(
                    "the exact form needs a Slice with a negative step", "target opset 10 or later"
                )
            return self.op(
                "Slice",
                [x],
                {"starts": list(starts), "ends": list(ends), "axes": list(axes)},
                dtype=x.dtype,
            )
        ints = [
            self.const(np.array(list(v), dtype=np.int64))
            for v in (starts, ends, axes, steps or [1] * len(axes))
        ]
        return self.op("Slice", [x, *ints], dtype=x.dtype)

    def tile(self, x: ir.Value, repeats: Sequence[int]) -> ir.Value:
        if self.opset >= 6:
            return self.op(
                "Tile", [x, self.const(np.array(list(repeats), dtype=np.int64))], dtype=x.dtype
            )
        for axis, count in enumerate(repeats):  # Tile-1 repeats along one axis per node
            if count != 1:
                x = self.op(
                    "Tile",
                    [
                        x,
                        self.const(np.array([count], dtype=np.int64)),
                        self.const(np.array([axis], dtype=np.int64)),
                    ],
                    dtype=x.dtype,
                )
        return x

    def clip_pick(self, x: ir.Value, bound: np.ndarray, family: Extremum) -> ir.Value:
        """family.pick(x, bound) for a scalar `bound`, spelt with Clip (no broadcasting
        needed), where the opset's Clip takes x's type: Max raises x to at least `bound`
        (Clip's min), Min lowers it to at most `bound` (Clip's max)."""
        side = "min" if family.direction > 0 else "max"
        if self.opset < 11:
            return self.op("Clip", [x], {side: float(bound)}, dtype=x.dtype, shape=x.shape)
        limit = self.const(np.asarray(bound).astype(x.dtype.numpy()))
        inputs = [x, limit] if side == "min" else [x, None, limit]
        return self.op("Clip", inputs, dtype=x.dtype, shape=x.shape)

    def if_(
        self,
        cond: ir.Value,
        then_out: tuple[Builder, ir.Value],
        else_out: tuple[Builder, ir.Value],
        dtype: ir.DataType | None,
    ) -> ir.Value:
        branches = {}
        for name, (sub, out) in (("then_branch", then_out), ("else_branch", else_out)):
            if out.producer() is None or out.producer() not in sub.nodes:
                # A branch output must be produced inside the branch.
                out = sub.op("Identity", [out], dtype=out.dtype, shape=out.shape)
            branches[name] = ir.Graph(
                inputs=[], outputs=[out], nodes=sub.nodes, name=f"{self._fresh_name('if')}_{name}"
            )
        return self.op("If", [cond], branches, dtype=dtype)


def _may_differ(a: ir.Shape | None, b: ir.Shape | None) -> bool:
    return a is None or b is None or tuple(a) != tuple(b)
