"""`maxlower inspect`: the family nodes of a model, and what conversion would do to each."""

from __future__ import annotations

import pathlib

import click

from maxlower import pipeline
from maxlower.cli.main import (
    DEBUG_OPTION,
    EXIT_CODES_HELP,
    cli,
    errors_to_exit_codes,
    opset_text,
)
from maxlower.errors import check_target_opset
from maxlower.family_nodes import FamilyNode, family_nodes, in_graph_order
from maxlower.inspect import Plan, op_inventory, plan_conversion
from maxlower.io import model_from_proto
from maxlower.pipeline import load_proto
from maxlower.ui import echo
from passes.builder import schema_version


@cli.command(
    help=f"""List the Max- and Min-family nodes of IN and, with --opset, what conversion
would do.

First every op of IN, with its schema version at IN's opset and its node count. Then,
for every Max, ReduceMax, ArgMax, Min, ReduceMin and ArgMin node (main graph, subgraphs,
model-local functions): where it is, its op and schema version, its inputs' element types
and shapes (and constant axes), and its attributes; with --opset N, also what converting
a copy to N would do to each node, or why no exact form exists. Nothing is written.
Details: docs/cli.md, "maxlower inspect".

\b
Examples:
  maxlower inspect model.onnx
  maxlower inspect model.onnx --opset 11

{EXIT_CODES_HELP}
With --opset, exit code 3 means that conversion to N would fail.""",
    short_help="List the Max- and Min-family nodes and what conversion would do.",
)
@click.argument("input_path", metavar="IN", type=click.Path(path_type=pathlib.Path))
@click.option(
    "--opset",
    "-t",
    "opset",
    type=int,
    default=None,
    metavar="N",
    help="Also show what converting to this opset would do. Default: list only.",
)
@DEBUG_OPTION
def inspect(input_path: pathlib.Path, opset: int | None, debug: bool) -> None:
    with errors_to_exit_codes(debug):
        if opset is not None:
            check_target_opset(opset)
        prepared = load_proto(input_path)
        base_dir = str(input_path.parent)
        plan = plan_conversion(prepared, base_dir, opset) if opset is not None else None
        model = model_from_proto(prepared, base_dir)
        nodes = family_nodes(model, infer_shapes=False)  # typed by the pipeline

        source = model.opset_imports.get("")
        header = f"{input_path}: opset {opset_text(source)}, ir_version {model.ir_version}, "
        header += f"{len(nodes)} Max/Min-family node{'s' if len(nodes) != 1 else ''}"
        echo(header + (f"; planned conversion to opset {opset}" if plan else ""))
        _print_inventory(prepared)
        where = None
        for node in nodes:
            if node.where != where:
                where = node.where
                echo(f"\n{where}")
            version = f"-{node.version}" if node.version else " (not in this opset)"
            echo(f"  node {node.node!r}: {node.op_type}{version}")
            echo(f"    inputs: {', '.join(node.inputs) or '(none)'}")
            echo(f"    attributes: {', '.join(node.attributes) or '(none)'}")
            if plan is not None:
                for line in _plan_lines(plan, node):
                    echo(f"    {line}")
        if plan is not None:
            others = in_graph_order(plan.other_rewrites(nodes), nodes)
            if others:
                echo("\nnodes that conversion creates are rewritten in turn:")
                for rewrite in others:
                    echo(f"  {pipeline.rewrite_line(rewrite)}")
            if plan.error is not None:
                echo(
                    f"\nconversion to opset {opset} would fail at node "
                    f"{plan.error.node_name!r} ({plan.error.op_type})"
                )
                raise plan.error
            echo(f"\nconversion to opset {opset} would succeed")


def _print_inventory(prepared) -> None:
    """Every op, most used first, four to a line: `Conv-11 ×53`."""
    uses = op_inventory(prepared)
    nodes = sum(use.count for use in uses)
    kinds = f"{len(uses)} kind{'s' if len(uses) != 1 else ''}"
    echo(f"\nops: {kinds}, {nodes} node{'s' if nodes != 1 else ''}")
    cells = [f"{use.label()} ×{use.count}" for use in uses]
    width = max(map(len, cells), default=0)
    for start in range(0, len(cells), 4):
        echo("  " + "  ".join(f"{cell:<{width}}" for cell in cells[start : start + 4]).rstrip())


def _plan_lines(plan: Plan, node: FamilyNode) -> list[str]:
    target = schema_version(node.op_type, plan.opset)
    if plan.error is not None:
        if (plan.error.node_name, plan.error.op_type) == (node.node, node.op_type):
            return [f"at opset {plan.opset}: no exact form: {plan.error.reason}"]
        return []
    rewrites = plan.rewrites_of(node)  # one node's steps, in the order they were made
    if not rewrites:
        if target is None:  # cannot happen after a successful conversion; be plain anyway
            return [f"at opset {plan.opset}: {node.op_type} does not exist"]
        return [f"at opset {plan.opset}: {node.op_type}-{target}, no rewrite needed"]
    return [
        f"at opset {plan.opset}: {node.op_type} {r.from_version}→{r.to_version}: {r.what}"
        for r in rewrites
    ]
