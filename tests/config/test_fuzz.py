"""Property-based: random and broken project files give a ConfigError, never another exception."""

from __future__ import annotations

import copy

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
                "existing": {"file_system_id": "fs-0123456789abcdef0", "dns_name": "fs.example", "mount_name": "abcd"},
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
