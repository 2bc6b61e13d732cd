"""Reading and writing model files for the command line: clear errors, atomic writes.

Models stay in onnx_ir from load to save, so large initializers stay lazy; a model whose
tensors are in external data is written with its data beside the output file.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import tempfile

import onnx
import onnx_ir as ir
from google.protobuf.message import DecodeError
from onnx_ir.passes.common import CheckerPass

from maxlower.api import InvalidModelError


def load_model(path: str | os.PathLike, *, check: bool = True) -> ir.Model:
    """Load an ONNX file into onnx_ir; InvalidModelError if it is missing, unreadable or
    (with `check`) not a valid model by `onnx.checker` with full_check."""
    path = pathlib.Path(path)
    if not path.exists():
        raise InvalidModelError(f"{path}: no such file")
    if path.is_dir():
        raise InvalidModelError(f"{path}: is a directory, not an ONNX file")
    try:
        model = ir.load(path)
    except DecodeError:
        raise InvalidModelError(
            f"{path}: not an ONNX model (the protobuf cannot be parsed)") from None
    except OSError as error:
        raise InvalidModelError(f"{path}: cannot read ({error.strerror or error})") from None
    except Exception as error:  # other formats' parsers (text, json) raise their own kinds
        raise InvalidModelError(f"{path}: cannot load ({one_line(error)})") from None
    if model.ir_version == 0 or not model.opset_imports:
        # An empty file parses as an empty ModelProto; say what is missing instead.
        raise InvalidModelError(f"{path}: not an ONNX model (no IR version or opset import)")
    _check_external_data(model, path)
    if check:
        try:
            CheckerPass(full_check=True)(model)
        except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
            raise InvalidModelError(
                f"{path}: the model is not valid ONNX ({one_line(error)})") from None
    return model


def default_output_path(input_path: str | os.PathLike, opset: int) -> pathlib.Path:
    """`<stem>.opset<N>.onnx` beside the input."""
    input_path = pathlib.Path(input_path)
    return input_path.with_name(f"{input_path.stem}.opset{opset}.onnx")


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name the same file (through symlinks and hard links too)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet
        return pathlib.Path(a).resolve() == pathlib.Path(b).resolve()


def check_destination(path: str | os.PathLike) -> None:
    """Fail before any work if `path` cannot be an output file."""
    path = pathlib.Path(path)
    if not path.parent.is_dir():
        raise InvalidModelError(
            f"{path}: the output directory {str(path.parent)!r} does not exist")
    if path.is_dir():
        raise InvalidModelError(f"{path}: is a directory; give a file name for the output")


def save_model_atomic(model: ir.Model, path: str | os.PathLike) -> pathlib.Path:
    """Write `model` to `path` through a temporary file in the same directory and
    `os.replace`, so that `path` is never left half-written. External data, if the model
    has any, goes to `<name>.data` beside it."""
    path = pathlib.Path(path)
    check_destination(path)
    directory = path.parent
    external_data = f"{path.name}.data" if _has_external_tensors(model) else None
    # Same suffix, so that ir.save picks the format `path` asks for (protobuf by default).
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=directory)
    os.close(fd)
    try:
        ir.save(model, temp_name, external_data=external_data)
        _copy_mode(path, temp_name)
        os.replace(temp_name, path)
    except OSError as error:
        what = f"{error.strerror}: {error.filename}" if error.filename else str(error)
        raise InvalidModelError(f"{path}: cannot write ({what})") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
    return path


def one_line(error: BaseException) -> str:
    """An exception's message on one line (checker messages span several)."""
    return " ".join(line.strip() for line in str(error).splitlines() if line.strip())


def _external_tensors(model: ir.Model) -> list[ir.ExternalTensor]:
    return [value.const_value for graph in model.graphs()
            for value in graph.initializers.values()
            if isinstance(value.const_value, ir.ExternalTensor)]


def _has_external_tensors(model: ir.Model) -> bool:
    return bool(_external_tensors(model))


def _check_external_data(model: ir.Model, path: pathlib.Path) -> None:
    """Tensors load lazily, so a missing data file would only surface when writing."""
    for tensor in _external_tensors(model):
        data = pathlib.Path(tensor.path)
        size = data.stat().st_size if data.is_file() else None
        if size is None or (tensor.length is not None
                            and (tensor.offset or 0) + tensor.length > size):
            problem = "is missing" if size is None else "is shorter than the model says"
            raise InvalidModelError(
                f"{path}: the external data file {tensor.location!r} of tensor "
                f"{tensor.name!r} {problem} (looked in {str(data.parent)!r})")


def _copy_mode(existing: pathlib.Path, temp_name: str) -> None:
    """mkstemp makes 0600 files; give the output the mode a plain open() would have."""
    try:
        mode = existing.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    os.chmod(temp_name, mode)
