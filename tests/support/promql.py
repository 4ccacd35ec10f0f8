"""Metric names out of PromQL expressions, read from the syntax tree of a real parser (promql-parser,
the Rust ``promql-parser`` crate's Python binding): no regular expressions."""

from __future__ import annotations

from collections.abc import Iterator

import promql_parser

GRAFANA_VARIABLES = {"$node": "ip-10-0-0-1", "$__rate_interval": "5m", "$__interval": "1m", "$fsx_id": "fs-0"}
"""What Grafana substitutes before a query reaches Prometheus."""


def selectors(expr: promql_parser.Expr) -> Iterator[promql_parser.VectorSelector]:
    """Every vector selector of a parsed expression."""
    if isinstance(expr, promql_parser.VectorSelector):
        yield expr
    elif isinstance(expr, promql_parser.MatrixSelector):
        yield expr.vector_selector
    elif isinstance(expr, promql_parser.BinaryExpr):
        yield from selectors(expr.lhs)
        yield from selectors(expr.rhs)
    elif isinstance(expr, promql_parser.AggregateExpr):
        yield from selectors(expr.expr)
        if expr.param is not None:
            yield from selectors(expr.param)
    elif isinstance(expr, promql_parser.Call):
        for arg in expr.args:
            yield from selectors(arg)
    elif isinstance(expr, (promql_parser.ParenExpr, promql_parser.SubqueryExpr, promql_parser.UnaryExpr)):
        yield from selectors(expr.expr)
    elif not isinstance(expr, (promql_parser.NumberLiteral, promql_parser.StringLiteral)):
        raise TypeError(f"unknown PromQL node {type(expr).__name__}: {expr}")


def metric_names(expr: str) -> set[str]:
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    names = set()
    for selector in selectors(promql_parser.parse(expr)):
        if selector.name is None:
            raise AssertionError(f"{expr}: a selector without a metric name cannot be checked")
        names.add(selector.name)
    return names
