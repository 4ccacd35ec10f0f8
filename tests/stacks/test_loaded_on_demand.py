"""A project loads the CDK modules its own stacks use, and no other orchestrator's: each orchestrator's stack module
(:data:`fmcluster.stacks.cluster.BUILDERS`), the accounting stack and cdk-nag are imported when a project needs them.
Each import costs every synthesis (HyperPod on EKS's module alone pulls ``aws_eks`` and the kubectl layer's jsii
assembly: about 0.5 s)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from fmcluster.stacks.cluster import BUILDERS, OwnBuilder
from support import ROOT

from fmcluster import orchestrators

BUILD = textwrap.dedent("""
    import json, sys
    from fmcluster.stacks.app import build, new_app
    app = new_app(outdir=sys.argv[1], context={"nag": sys.argv[2]})
    build(app, [sys.argv[3]])
    print(json.dumps(sorted(sys.modules)))
""")
NOT_FOR_PARALLELCLUSTER = ["fmcluster.stacks.hyperpod", "fmcluster.stacks.hyperpod_eks", "fmcluster.stacks.pcs",
                           "fmcluster.stacks.accounting", "aws_cdk.aws_eks", "aws_cdk.aws_eks_v2", "aws_cdk.aws_rds",
                           "aws_cdk.aws_secretsmanager", "aws_cdk.aws_sagemaker", "aws_cdk.aws_pcs",
                           "aws_cdk.lambda_layer_kubectl_v35"]


def modules_after_building(project: Path, tmp_path: Path, nag: str) -> set[str]:
    """The modules a fresh process holds once it has built ``project``'s stacks (as ``app.py`` does, before
    synthesizing)."""
    done = subprocess.run([sys.executable, "-c", BUILD, str(tmp_path / "out"), nag, str(project)], cwd=ROOT,
                          env={**os.environ}, capture_output=True, text=True, timeout=300, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_a_parallelcluster_project_loads_no_other_orchestrators_stack_modules_nor_cdk_nag_when_it_is_off(tmp_path):
    loaded = modules_after_building(ROOT / "projects" / "default.yaml", tmp_path, "false")
    assert "fmcluster.stacks.parallelcluster" in loaded  # its own, loaded by its builder
    assert sorted(loaded & set(NOT_FOR_PARALLELCLUSTER)) == []
    assert not {m for m in loaded if m == "cdk_nag" or m.startswith("cdk_nag.")}


def test_every_builder_names_its_orchestrators_own_module_and_its_build():
    for name, builder in BUILDERS.items():
        if name == "none":
            continue
        assert isinstance(builder, OwnBuilder), name
        module = importlib.import_module(builder.module)
        assert callable(module.build), builder.module
        assert builder.module.rsplit(".", 1)[1] == name.replace("-", "_")
    assert list(BUILDERS) == list(orchestrators.NAMES)
