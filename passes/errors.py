"""The one error a pass raises when it cannot rewrite a node exactly, and the one way the
text of another library's error (onnx's checker, shape inference and version converter,
onnxruntime) enters a message: `concise`.

    "/project/onnx/version_converter/BaseConverter.h:66: adapter_lookup: Assertion `false`
     failed: No Adapter From Version $13 for Equal"
        →  "no adapter from version 13 for Equal"
"""

from __future__ import annotations

import re

import onnx

# What a reader cannot act on: where in onnx's C++ sources an assertion sits, the assertion
# itself, the converter's "$13" spelling of numbers, the error class tags of shape inference
# and onnxruntime, and the checker's "==> Context:" trailer, which repeats the node's name.
_NOISE = (
    (re.compile(r"(?:[\w.+-]*/)*[\w.+-]+\.(?:h|hh|hpp|hxx|c|cc|cpp|cxx)(?::\d+)+:?\s*"), ""),
    (re.compile(r"(?:\b\w+:\s*)?Assertion\s*[`'][^`']*[`']\s*failed[.:]?\s*"), ""),
    (re.compile(r"(?<![\w$])\$(?=\d)"), ""),
    (re.compile(r"\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*\w+\s*:\s*"), ""),
    (re.compile(r"\[(?:ShapeInference|TypeInference)Error\]\s*(?:Inference error\(s\):\s*)?"), ""),
    (re.compile(r"\s*==>\s*Context:[^\n]*"), ""),
    (
        re.compile(r"\bNo Adapter (From|To) Version\b"),
        lambda m: f"no adapter {m[1].lower()} version",
    ),
    (re.compile(r"\bNode\s*(\([^()]*\)\s*)?(with schema\s*\(:*\w+:\d+\)\s*)?has (?=\w+ size)"), ""),
    (re.compile(r"\.(?=[);])"), ""),
    (re.compile(r"\b\w+ typestr: ([^,]+), has unsupported type: "), r"\1 does not take "),
    (
        re.compile(
            r"DataType \((\d+)\) of (?:Input or Output|input|output) of operator '(\w+)' is "
            r"(?:unallowed for|not supported in) Opset Version (\d+)"
        ),
        lambda m: f"{m[2]} at opset {m[3]} does not take {_type_name(int(m[1]))}",
    ),
)


def _type_name(data_type: int) -> str:
    try:
        return onnx.TensorProto.DataType.Name(data_type).lower()
    except ValueError:
        return f"data type {data_type}"


def concise(error: BaseException | str) -> str:
    """The informative part of an error's text, on one line: without C++ source paths,
    assertion boilerplate, `$` artefacts or class tags. The full text stays available to
    --debug (ConversionError keeps it as `detail` and as its `__cause__`)."""
    text = error if isinstance(error, str) else error_text(error)
    for pattern, replacement in _NOISE:
        text = pattern.sub(replacement, text)
    lines = [line.strip() for line in text.splitlines()]
    return "; ".join(line.rstrip(".;") for line in lines if line) or text.strip()


def error_text(error: BaseException) -> str:
    """An exception's whole message (or its class name when it has none), for `concise`."""
    return str(error).strip() or type(error).__name__


class ErrorDetail(Exception):
    """The full text a ConversionError's message was condensed from; the error's
    `__cause__`, so that a traceback (--debug) shows it."""


class ConversionError(RuntimeError):
    """No exact rewrite exists for a node.

    A RuntimeError, as onnx.version_converter's refusals are: code written for onnx's
    converter (`except RuntimeError`) catches maxlower's too.

    The message always names the node, the op, the reason, and what would make the
    rewrite possible, on one line, so that a user can act on it without reading our
    source. Text taken from other libraries' errors in `reason` is condensed (`concise`);
    `detail` holds the reason as it was given (None when nothing was condensed).
    """

    # passes.version.other_ops.RefusalRemedy of a refused node, which the driver widens to
    # the opsets where every node of the model converts (other_ops.with_model_opsets)
    refusal_remedy: object | None = None

    def __init__(self, node_name: str, op_type: str, reason: str, remedy: str) -> None:
        self.node_name = node_name
        self.op_type = op_type
        self.reason = concise(reason)
        self.remedy = remedy
        self.detail = reason if self.reason != reason else None
        super().__init__(
            f"node {node_name!r} ({op_type}): {self.reason}. To make it possible: {remedy}"
        )
        if self.detail is not None:
            self.__cause__ = ErrorDetail(self.detail)
