"""Rules for untrusted model files and for where output may go.

    check_model_data(proto, path)            external data, declared tensor sizes and UTF-8
                                             strings, before anything reads the data;
                                             InvalidModelError (exit code 2)
    describe_invalid(proto, error)           a checker error, said precisely when the graph
                                             has a dangling input, a cycle or a name made twice

**External data.** A model file may point its tensors at any path. Reading one outside the
model's directory leaks files (onnx CVE-2022-25882 `../x`, CVE-2024-27318 `sub/../../x`,
absolute paths, CVE-2026-27489 symlinks in the directory that point out of it). onnx's C++
loader refuses all of these and any symlink; onnx_ir's `ExternalTensor` refuses them, and
files with several hard links, but only when it reads, only with a base directory set, and
with a `ValueError`. Here every external tensor of every graph, function, attribute and
training_info graph is checked once, on the protobuf, before any of its bytes are read
(and then read only by maxlower.external, from the model's directory): a location is relative,
stays inside the directory after `..` and after symlinks, names a regular file with one
link, and its `offset`/`length` are integers the file holds and that match the tensor's
shape. Keys other than onnx's `location`, `offset`, `length`, `checksum` and `basepath` are
refused (CVE-2026-34445: onnx < 1.21 set them as attributes), and so is a key given twice
(a checker could read the first and a loader the last); so is an offset or length
beyond 2^63-1 (int() of 5,000 digits would raise).

**Strings.** Protobuf parses a string field that is not UTF-8 and returns it as bytes;
onnx.checker lets it pass and onnx_ir fails on it when it writes the model back. Every
string field is checked on loading: the model is parsed again as the same schema in proto3
syntax, whose C parser refuses strings that are not UTF-8 (about 0.02 s per 20,000 nodes),
and only if that fails walked in Python to name the field.

**Declared sizes.** onnx.checker compares each tensor's data with its dims, but maxlower hands
initializers over 1000 bytes to the checker without their data (`maxlower.io`), so a 4-byte
tensor claiming 10^12 elements would pass. `check_model_data` checks them all.

**Writing.** Where output may go, and how every file is written, is `maxlower.files`.
"""

from __future__ import annotations

import functools
import math
import ntpath
import os
import pathlib
import stat as stat_module
from collections.abc import Iterator

import onnx
import onnx_ir as ir
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from maxlower.errors import InvalidModelError
from maxlower.external import node_text, tensors
from passes.errors import concise
from passes.graph_utils import subgraph_place

# onnx.external_data_helper._ALLOWED_EXTERNAL_DATA_KEYS, the keys of the ONNX spec
EXTERNAL_DATA_KEYS = frozenset({"location", "offset", "length", "checksum", "basepath"})
_INT64_MAX = (1 << 63) - 1

# Element count per value of each typed data field (complex: two; packed 4-bit: a half).
_TYPED_FIELDS = {
    "float_data": {onnx.TensorProto.FLOAT: 1, onnx.TensorProto.COMPLEX64: 2},
    "double_data": {onnx.TensorProto.DOUBLE: 1, onnx.TensorProto.COMPLEX128: 2},
    "int64_data": {onnx.TensorProto.INT64: 1},
    "uint64_data": {onnx.TensorProto.UINT32: 1, onnx.TensorProto.UINT64: 1},
    "string_data": {onnx.TensorProto.STRING: 1},
}


# --- reading ------------------------------------------------------------------------------


def check_model_data(
    proto: onnx.ModelProto, path: str | os.PathLike, *, directory_known: bool = True
) -> None:
    """Refuse a model whose tensors point outside its directory or declare more data than
    they hold, or whose strings are not UTF-8. Reads no external data; stats each external
    file once. Without `directory_known` (a model in memory, whose file nobody named),
    any external tensor is refused: there is no directory to look for its data in."""
    path = pathlib.Path(path)
    _check_text(proto, path)
    directory = path.parent
    files: dict[str, os.stat_result] = {}
    for tensor, where in tensors(proto):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            if not directory_known:
                raise InvalidModelError(
                    f"{path}: tensor {tensor.name!r} ({where}) keeps its data in an external "
                    "file, and no base_dir says where that file is: pass base_dir=<the model "
                    "file's directory>, or load the model with onnx.load(path), which reads "
                    "the data in"
                )
            _check_external(tensor, where, path, directory, files)
        else:
            _check_inline(tensor, where, path)


def _check_text(proto: onnx.ModelProto, path: pathlib.Path) -> None:
    """Protobuf parses a string field that is not UTF-8 and hands it over as bytes, which
    passes onnx.checker and breaks onnx_ir later, when it writes the model back."""
    if _all_utf8(proto):
        return
    found = _not_utf8(proto)
    if found is not None:
        field, value = found
        raise InvalidModelError(
            f"{path}: the model's {field} {value[:60]!r} is not valid UTF-8 (ONNX strings are "
            "UTF-8); the file is damaged or was not written by an ONNX tool"
        )


# Above this size the model is walked in Python instead: the fast check holds two more
# copies of the protobuf for a moment (serialised, parsed), the walk none, and a model this
# large is mostly tensor bytes, which the walk does not visit.
_FAST_TEXT_CHECK_BYTES = 1 << 26


def _all_utf8(proto: onnx.ModelProto) -> bool:
    """True if every string field of the model is UTF-8, found fast: the model serialised
    and parsed again, in C, as the same schema in proto3 syntax, whose parser refuses a
    string field that is not UTF-8 (unknown fields are skipped by both). False means "walk
    it": `_not_utf8` then says which field."""
    if proto.ByteSize() > _FAST_TEXT_CHECK_BYTES:
        return False
    try:
        _utf8_checking_model_class().FromString(proto.SerializeToString())
    except DecodeError:
        return False
    return True


@functools.cache
def _utf8_checking_model_class():
    """onnx's ModelProto schema as proto3 (no defaults, no required), in its own pool."""
    file_proto = descriptor_pb2.FileDescriptorProto()
    onnx.ModelProto.DESCRIPTOR.file.CopyToProto(file_proto)
    file_proto.syntax = "proto3"
    file_proto.ClearField("options")
    messages = list(file_proto.message_type)
    while messages:
        message = messages.pop()
        messages.extend(message.nested_type)
        for field in message.field:
            field.ClearField("default_value")
            if field.label == field.LABEL_REQUIRED:
                field.label = field.LABEL_OPTIONAL
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_proto)
    name = f"{file_proto.package}.ModelProto" if file_proto.package else "ModelProto"
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


@functools.cache
def _text_fields(descriptor) -> tuple[tuple[str, ...], ...]:
    """(singular strings, repeated strings, singular messages, repeated messages)."""
    fields = descriptor.fields
    return (
        tuple(f.name for f in fields if f.type == f.TYPE_STRING and not f.is_repeated),
        tuple(f.name for f in fields if f.type == f.TYPE_STRING and f.is_repeated),
        tuple(f.name for f in fields if f.type == f.TYPE_MESSAGE and not f.is_repeated),
        tuple(f.name for f in fields if f.type == f.TYPE_MESSAGE and f.is_repeated),
    )


def _not_utf8(message) -> tuple[str, bytes] | None:
    """The first string field (name, value) that protobuf could not decode, if any. Bytes
    fields (tensor data) are not touched."""
    strings, repeated_strings, messages, repeated_messages = _text_fields(message.DESCRIPTOR)
    for name in strings:
        value = getattr(message, name)
        if type(value) is bytes:
            return f"{message.DESCRIPTOR.name}.{name}", value
    for name in repeated_strings:
        for value in getattr(message, name):
            if type(value) is bytes:
                return f"{message.DESCRIPTOR.name}.{name}", value
    children = [getattr(message, name) for name in messages if message.HasField(name)]
    for name in repeated_messages:
        children.extend(getattr(message, name))
    for child in children:
        found = _not_utf8(child)
        if found is not None:
            return found
    return None


def _check_inline(tensor: onnx.TensorProto, where: str, path: pathlib.Path) -> None:
    elements = _declared_elements(tensor, where, path)
    if tensor.data_type in (onnx.TensorProto.UNDEFINED, onnx.TensorProto.STRING):
        return  # the checker says what is wrong with these
    if tensor.HasField("raw_data"):
        held, needed = len(tensor.raw_data), _nbytes(tensor, elements)
        unit = "bytes"
    else:
        field, per_element = _typed_field(tensor.data_type)
        held, unit = len(getattr(tensor, field)), f"values in {field}"
        needed = math.ceil(elements * per_element)
    if held != needed:
        raise InvalidModelError(
            f"{path}: tensor {tensor.name!r} ({where}) declares shape {list(tensor.dims)} "
            f"of {_type_name(tensor)}, {needed} {unit}, but holds {held}"
        )


def _typed_field(data_type: int) -> tuple[str, float]:
    for field, types in _TYPED_FIELDS.items():
        if data_type in types:
            return field, types[data_type]
    # every other type is stored one per int32 (float16, bool, int8...), 4-bit two per int32
    bits = ir.DataType(data_type).bitwidth
    return "int32_data", (bits / 8 if bits < 8 else 1)


def _check_external(
    tensor: onnx.TensorProto,
    where: str,
    path: pathlib.Path,
    directory: pathlib.Path,
    files: dict[str, os.stat_result],
) -> None:
    name = f"tensor {tensor.name!r} ({where})"
    entries: dict[str, str] = {}
    for entry in tensor.external_data:
        if entry.key not in EXTERNAL_DATA_KEYS:
            raise InvalidModelError(
                f"{path}: {name} has the external-data key {entry.key[:100]!r}, which ONNX "
                f"does not define (allowed: {', '.join(sorted(EXTERNAL_DATA_KEYS))}); remove it"
            )
        if entry.key in entries:
            raise InvalidModelError(
                f"{path}: {name} gives the external-data key {entry.key!r} twice"
            )
        entries[entry.key] = entry.value
    location = entries.get("location", "")

    def refuse(problem: str, security: bool = False) -> None:
        rule = "; refused, as a security rule" if security else ""
        raise InvalidModelError(
            f"{path}: the external-data location {location[:200]!r} of {name} {problem}{rule}"
        )

    if not location:
        refuse("is empty")
    if "\0" in location:
        refuse("holds a NUL character", security=True)
    if os.path.isabs(location) or ntpath.isabs(location) or ntpath.splitdrive(location)[0]:
        refuse("is an absolute path, not one inside the model's directory", security=True)
    resolved = os.path.normpath(os.path.join(os.path.abspath(directory), location))
    if not _inside(resolved, os.path.abspath(directory)):
        refuse("leads out of the model's directory", security=True)
    real = os.path.realpath(resolved)
    if not _inside(real, os.path.realpath(directory)):
        refuse(
            f"goes through a symbolic link to {real!r}, outside the model's directory",
            security=True,
        )
    if real not in files:
        try:
            files[real] = os.stat(real)
        except FileNotFoundError:
            refuse(f"is missing (looked in {str(directory)!r})")
        except OSError as error:
            refuse(f"cannot be read ({error.strerror or error})")
    stat = files[real]
    if not _is_regular(stat):
        refuse("is not a regular file")
    if stat.st_nlink > 1:
        refuse(
            f"has {stat.st_nlink} hard links; onnx and onnx_ir refuse to read such a file "
            "(a hard link can bring in a file from elsewhere): copy it to a file of its own"
        )
    offset = _external_int(entries, "offset", 0, path, name)
    needed = _nbytes(tensor, _declared_elements(tensor, where, path))
    length = _external_int(entries, "length", None, path, name)
    if length is not None and length != needed:
        raise InvalidModelError(
            f"{path}: {name} declares shape {list(tensor.dims)} of {_type_name(tensor)} "
            f"({needed} bytes) but an external-data length of {length}"
        )
    if offset + needed > stat.st_size:
        refuse(
            f"holds {stat.st_size} bytes, fewer than the {offset + needed} "
            f"(offset {offset} + {needed}) the tensor needs; it is shorter than the model says"
        )


def _external_int(
    entries: dict[str, str], key: str, default: int | None, path: pathlib.Path, name: str
) -> int | None:
    if key not in entries:
        return default
    text = entries[key]
    if not text.isascii() or not text.isdigit():
        raise InvalidModelError(
            f"{path}: {name} has the external-data {key} {text[:40]!r}, not a non-negative integer"
        )
    # int() refuses more than 4300 digits (sys.int_info); no file holds 2^63 bytes anyway
    if len(text.lstrip("0")) > len(str(_INT64_MAX)) or int(text) > _INT64_MAX:
        shown = text if len(text) <= 40 else f"{text[:20]}...({len(text)} digits)"
        raise InvalidModelError(
            f"{path}: {name} has the external-data {key} {shown}, more than any file holds "
            "(at most 2^63-1)"
        )
    return int(text)


def _declared_elements(tensor: onnx.TensorProto, where: str, path: pathlib.Path) -> int:
    if any(d < 0 for d in tensor.dims):
        raise InvalidModelError(
            f"{path}: tensor {tensor.name!r} ({where}) has a negative dim {list(tensor.dims)}"
        )
    elements = math.prod(tensor.dims)
    if elements > _INT64_MAX:
        raise InvalidModelError(
            f"{path}: tensor {tensor.name!r} ({where}) declares shape {list(tensor.dims)}: "
            f"{elements:.3g} elements, more than an int64 counts"
        )
    return elements


def _nbytes(tensor: onnx.TensorProto, elements: int) -> int:
    try:
        bits = ir.DataType(tensor.data_type).bitwidth
    except (ValueError, TypeError):  # an unknown type: the checker will say so
        return 0
    return math.ceil(elements * bits / 8)


def _type_name(tensor: onnx.TensorProto) -> str:
    try:
        return ir.DataType(tensor.data_type).name
    except ValueError:
        return f"data type {tensor.data_type}"


def _inside(path: str, directory: str) -> bool:
    return os.path.commonpath([path, directory]) == directory and path != directory


def _is_regular(stat: os.stat_result) -> bool:
    return stat_module.S_ISREG(stat.st_mode)


# --- function calls -----------------------------------------------------------------------

# onnx's checker and shape inference (and inlining, for the verifier) expand every call of
# a model-local function into its body: a function that calls the one below it twice, 40
# levels deep, is 2^40 nodes to them. Shape inference takes ~10 µs per expanded node.
EXPANDED_NODE_LIMIT = 1 << 20


def check_function_calls(proto: onnx.ModelProto, path: str | os.PathLike) -> None:
    """Refuse (InvalidModelError) a model whose local functions call themselves, or whose
    main graph or some function holds more than EXPANDED_NODE_LIMIT nodes once every call
    is expanded. Linear in the model's size: each function's expanded size is counted once."""
    functions = {(f.domain, f.name, f.overload): f for f in proto.functions}
    if not functions:
        return
    sizes = _expanded_sizes(functions, path)
    scopes = [("the main graph", list(proto.graph.node))]
    scopes += [(f"function {d}::{n}", list(functions[d, n, o].node)) for d, n, o in functions]
    for where, nodes in scopes:
        total = sum(1 + sizes.get(_callee(node), 0) for node in _all_nodes(nodes))
        if total > EXPANDED_NODE_LIMIT:
            raise InvalidModelError(
                f"{path}: {where} holds {total:.3g} nodes once its calls of model-local "
                "functions are expanded (as onnx's checker and shape inference expand them), over "
                f"maxlower's budget of {EXPANDED_NODE_LIMIT:,}: inline or simplify the "
                "functions that call each other"
            )


def _callee(node: onnx.NodeProto) -> tuple[str, str, str]:
    return (node.domain, node.op_type, node.overload)


def _all_nodes(nodes) -> Iterator[onnx.NodeProto]:
    """`nodes` and the nodes of their subgraphs, at any depth (a loop, not recursion)."""
    pending = list(nodes)
    while pending:
        node = pending.pop()
        yield node
        for attribute in node.attribute:
            for subgraph in [attribute.g] if attribute.HasField("g") else [*attribute.graphs]:
                pending.extend(subgraph.node)


def _expanded_sizes(functions: dict, path) -> dict[tuple[str, str, str], int]:
    """{function key: its node count with every call expanded}, by a depth-first walk
    without recursion; a function that calls itself (ONNX forbids it) is refused."""
    calls = {
        key: [_callee(n) for n in _all_nodes(f.node) if _callee(n) in functions]
        for key, f in functions.items()
    }
    own = {key: sum(1 for _ in _all_nodes(f.node)) for key, f in functions.items()}
    sizes: dict[tuple[str, str, str], int] = {}
    for root in functions:
        if root in sizes:
            continue
        stack, on_path = [(root, iter(calls[root]))], {root}
        while stack:
            key, pending = stack[-1]
            callee = next(pending, None)
            if callee is None:
                sizes[key] = own[key] + sum(sizes[c] for c in calls[key])
                stack.pop()
                on_path.discard(key)
            elif callee in on_path:
                cycle = " -> ".join(f"{d}::{n}" for d, n, _ in [*(k for k, _ in stack), callee])
                raise InvalidModelError(
                    f"{path}: model-local functions call themselves ({cycle}); ONNX "
                    "functions cannot be recursive"
                )
            elif callee not in sizes:
                stack.append((callee, iter(calls[callee])))
                on_path.add(callee)
    return sizes


# --- invalid graphs -----------------------------------------------------------------------


def describe_invalid(proto: onnx.ModelProto, error: BaseException) -> str:
    """What is wrong with a model the checker refused: a dangling input, a cycle, or a value
    two nodes make, said with the node names; else the checker's message, condensed."""
    free_names: dict = {}  # each subgraph's outer names, walked once
    problem = _graph_problem(proto.graph, "main graph", set(), free_names)
    for function in proto.functions:
        if problem is None:
            where = f"function {function.domain}::{function.name}"
            problem = _nodes_problem(function.node, where, set(function.input), set(), free_names)
    return problem or concise(error)


def _graph_problem(
    graph: onnx.GraphProto, where: str, outer: set[str], free_names: dict
) -> str | None:
    defined = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    defined |= {s.values.name for s in graph.sparse_initializer}
    return _nodes_problem(graph.node, where, defined, outer, free_names)


def _nodes_problem(
    nodes, where: str, defined: set[str], outer: set[str], free_names: dict
) -> str | None:
    producer: dict[str, int] = {}
    for index, node in enumerate(nodes):
        for name in filter(None, node.output):
            if name in producer or name in defined:
                first = (
                    f"node {node_text(nodes[producer[name]], producer[name])} "
                    f"({nodes[producer[name]].op_type})"
                    if name in producer
                    else "a graph input or initializer"
                )
                return (
                    f"{where}: value {name!r} is made twice, by {first} and by node "
                    f"{node_text(node, index)} ({node.op_type}); each value needs one "
                    "producer"
                )
            producer[name] = index
    visible = outer | defined | producer.keys()  # once: per node it made the check O(n²)
    uses = [sorted(_used_names(node, visible, free_names)) for node in nodes]
    for index, node in enumerate(nodes):
        for name in uses[index]:
            if name not in producer and name not in defined and name not in outer:
                return (
                    f"{where}: input {name!r} of node {node_text(node, index)} "
                    f"({node.op_type}) is made by no node, and is no graph input or "
                    "initializer"
                )
    cycle = _cycle(nodes, [[producer[n] for n in names if n in producer] for names in uses])
    if cycle:
        chain = " -> ".join(f"{node_text(nodes[i], i)} ({nodes[i].op_type})" for i in cycle)
        return f"{where}: the nodes form a cycle: {chain}"
    for index, node in enumerate(nodes):
        late = [n for n in uses[index] if producer.get(n, -1) > index]
        if late:
            return (
                f"{where}: node {node_text(node, index)} ({node.op_type}) comes before "
                f"the node that makes its input {late[0]!r}; ONNX needs nodes in "
                "topological order"
            )
    for index, node in enumerate(nodes):
        for attribute in node.attribute:
            graphs = [attribute.g] if attribute.HasField("g") else [*attribute.graphs]
            for k, subgraph in enumerate(graphs):
                label = subgraph_place(
                    where,
                    node,
                    attribute.name,
                    None if attribute.HasField("g") else k,
                    shown=node_text(node, index),
                )
                problem = _graph_problem(subgraph, label, visible, free_names)
                if problem:
                    return problem
    return None


def _used_names(node: onnx.NodeProto, visible: set[str], free_names: dict) -> set[str]:
    """The node's inputs, and the outer-scope names its subgraphs read."""
    names = set(filter(None, node.input))
    for attribute in node.attribute:
        for subgraph in [attribute.g] if attribute.HasField("g") else [*attribute.graphs]:
            names |= _free_names(subgraph, free_names) & visible
    return names


def _free_names(graph: onnx.GraphProto, known: dict) -> set[str]:
    """The outer-scope names `graph` reads; `known` holds those of the graphs already
    walked ({id: (graph, names)}: the graph is kept, so that its id is not reused), so
    that nested bodies are walked once, not once per level."""
    if id(graph) in known:
        return known[id(graph)][1]
    own = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    used: set[str] = set()
    for node in graph.node:
        own.update(node.output)
        used.update(filter(None, node.input))
        for attribute in node.attribute:
            for subgraph in [attribute.g] if attribute.HasField("g") else [*attribute.graphs]:
                used |= _free_names(subgraph, known)
    used.update(v.name for v in graph.output)
    known[id(graph)] = (graph, used - own)
    return used - own


def _cycle(nodes, inputs_from: list[list[int]]) -> list[int] | None:
    """A cycle of node indices (first repeated at the end), if the dependencies have one."""
    state = [0] * len(nodes)  # 0 new, 1 on the stack, 2 done
    for start in range(len(nodes)):
        if state[start]:
            continue
        stack, path = [(start, iter(inputs_from[start]))], [start]
        state[start] = 1
        while stack:
            index, pending = stack[-1]
            following = next(pending, None)
            if following is None:
                state[index] = 2
                stack.pop()
                path.pop()
            elif state[following] == 1:
                # path[k + 1] makes an input of path[k]: data flows backwards along it
                loop = path[path.index(following) :]
                return [following, *reversed(loop[1:]), following]
            elif state[following] == 0:
                state[following] = 1
                stack.append((following, iter(inputs_from[following])))
                path.append(following)
    return None


__all__ = [
    "EXTERNAL_DATA_KEYS",
    "check_function_calls",
    "check_model_data",
    "describe_invalid",
]
