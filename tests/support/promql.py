"""A small PromQL scanner for tests: which metric names does an expression read?"""

from __future__ import annotations

import re

_FUNCTIONS = {
    "sum", "max", "min", "avg", "count", "group", "by", "on", "without", "ignoring", "group_left", "group_right",
    "rate", "irate", "increase", "delta", "and", "or", "unless", "offset", "vector", "topk", "bottomk", "bool",
    "max_over_time", "min_over_time", "avg_over_time", "label_replace", "clamp_min", "clamp_max", "abs",
    "histogram_quantile", "count_over_time", "last_over_time", "absent", "time", "scalar", "sort", "sort_desc",
}


def metric_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression (identifiers that are not functions, keywords or labels)."""
    stripped = re.sub(r"\{[^}]*\}", "{}", expr)  # drop label matchers
    stripped = re.sub(r"(by|on|without|ignoring|group_left|group_right)\s*\([^)]*\)", " ", stripped)
    stripped = re.sub(r'"[^"]*"', "", stripped)
    stripped = re.sub(r"\[[^\]]*\]", "[]", stripped)
    stripped = re.sub(r"\boffset\s+[0-9]+[smhdwy]", " ", stripped)
    stripped = re.sub(r"\b[0-9][0-9.e+-]*\b", " ", stripped)
    names = set()
    for match in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", stripped):
        word = match.group(0)
        end = match.end()
        if word in _FUNCTIONS or (end < len(stripped) and stripped[end:].lstrip().startswith("(")):
            continue
        names.add(word)
    return names
