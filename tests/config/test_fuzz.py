"""Property-based: random and broken project files give a ConfigError, never another exception."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import ALL_FILES

from fmcluster import checks, config
from fmcluster.errors import ConfigError

VALID = {
    "name": "demo",
    "availability_zone_id": "use1-az6",
    "network": {"vpc_cidr": "10.0.0.0/16", "compute_subnet_prefix": 24, "interface_endpoints": ["ssm"]},
    "compute_groups": [
        {"name": "train", "instance_type": "p5.48xlarge", "count": 2,
         "capacity": {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}, "placement_group": "auto"},
    ],
    "tags": {"team": "x"},
    "storage": {
        "bucket": {"existing_name": "my-bucket"},
        "fsx": {"deployment_type": "PERSISTENT_2", "storage_capacity_gib": 19200, "throughput_per_tib": 250,
                "metadata": {"mode": "USER_PROVISIONED", "iops": 3000}, "efa_enabled": True,
                "associations": [{"file_system_path": "/data", "data_repository_path": "s3://my-bucket/p/"}]},
        "checkpoint": {"parameters": 7e10, "target_write_seconds": 60, "keep": 2},
    },
    "observability": {"scrape_interval": "30s", "alerts": {"emails": ["a@b.co"]}, "grafana": {"enabled": True}},
}

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-10**6, max_value=10**6), st.floats(allow_nan=False),
    st.text(max_size=20), st.sampled_from(["p5.48xlarge", "cr-0123456789abcdef0", "10.0.0.0/8", "auto", "on-demand",
                                           "capacity-block", "training-plan", "use1-az6", "0.0.0.0/0", "-1",
                                           "SCRATCH_2", "USER_PROVISIONED", "/fsx", "s3://x/y/", 1200, 3000, 1e15]),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.text(max_size=12), inner, max_size=3)),
                      max_leaves=8)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, prefix + (i,))


ALL_PATHS = [p for p in _paths(VALID) if p]


def _outcome(text: str) -> None:
    try:
        checks.validate(config.parse(text, None))
    except ConfigError as exc:
        assert exc.problems, "a ConfigError must carry at least one error"
        for problem in exc.problems:
            assert problem.message and isinstance(problem.path, str)
            problem.format()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(ALL_PATHS), value=values, action=st.sampled_from(["replace", "delete", "add"]))
def test_mutated_configs_fail_cleanly(path, value, action) -> None:
    data = copy.deepcopy(VALID)
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    if action == "replace":
        parent[path[-1]] = value
    elif action == "delete":
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[f"{path[-1]}x"] = value
    _outcome(yaml.safe_dump(data))


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(list(config.Project.model_fields) + ["junk"]), values, max_size=8))
def test_random_top_level_documents_fail_cleanly(document) -> None:
    _outcome(yaml.safe_dump(document))


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_random_text_fails_cleanly(text) -> None:
    _outcome(text)


def test_the_seed_config_is_valid() -> None:
    """Mutations start from a valid file, so most of them exercise a single broken field."""
    checks.validate(config.parse(yaml.safe_dump(VALID), None))


# --- every example, mutated structurally and byte by byte ---------------------------------------------------

EXAMPLES = [p for p in ALL_FILES]
EXAMPLE_DATA = {p.name: yaml.safe_load(p.read_text()) for p in EXAMPLES}
EXAMPLE_PATHS = [(name, path) for name, data in EXAMPLE_DATA.items() for path in _paths(data) if path]
hostile = st.one_of(
    values, st.just(True), st.just(10**400), st.just(float("inf")), st.just(1e308), st.just("../../etc"),
    st.just("/etc"), st.just("scratch"), st.text(alphabet=st.characters(codec="utf-8"), min_size=100, max_size=300),
)


def _accepted_or_located(text: str | bytes) -> None:
    """The invariant: a ConfigError whose every problem is located, or a valid project whose plan is whole."""
    try:
        loaded = config.parse(text, Path("fuzz.yaml"))
        plan, _ = checks.validate(loaded)
    except ConfigError as exc:
        assert exc.problems
        for problem in exc.problems:
            assert problem.line is not None and problem.file == Path("fuzz.yaml"), problem.format()
            problem.format()
        return
    plan.as_dict()


@settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(target=st.sampled_from(EXAMPLE_PATHS), value=hostile,
       action=st.sampled_from(["replace", "delete", "duplicate"]))
def test_every_example_mutated_fails_cleanly(target, value, action) -> None:
    name, path = target
    data = copy.deepcopy(EXAMPLE_DATA[name])
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    if action == "replace":
        parent[path[-1]] = value
    elif action == "delete":
        del parent[path[-1]]
    elif isinstance(parent, list):
        parent.append(copy.deepcopy(parent[path[-1]]))
    else:
        parent[f"{path[-1]}"] = [parent[path[-1]], parent[path[-1]]]
    _accepted_or_located(yaml.safe_dump(data, allow_unicode=True))


@settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(source=st.sampled_from(EXAMPLES), data=st.data())
def test_byte_mutations_of_examples_fail_cleanly(source, data) -> None:
    raw = bytearray(source.read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(raw) - 1))
        kind = data.draw(st.sampled_from(["flip", "insert", "delete", "repeat"]))
        if kind == "flip":
            raw[at] = data.draw(st.integers(0, 255))
        elif kind == "insert":
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del raw[at:at + data.draw(st.integers(1, 16))]
        else:
            raw[at:at] = raw[at:at + 40] * data.draw(st.integers(1, 50))
        if not raw:
            raw = bytearray(b"\x00")
    _accepted_or_located(bytes(raw))
