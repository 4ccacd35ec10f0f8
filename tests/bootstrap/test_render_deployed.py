"""`fmcluster bootstrap render` writes what deploys: for every example and shipped project, each bundle it renders
(every role's, by default) is byte for byte the one the synthesized cloud assembly publishes (same SHA256SUMS, entry
script and manifest), and it renders all of them. It used to build its own contexts: ParallelCluster's head-node
bundle lacked 85-imex-prolog and 88-slurm-policy."""

from __future__ import annotations

import pytest
from support import ALL_FILES
from typer.testing import CliRunner

from fmcluster import config
from fmcluster.bootstrap.bundles import BUNDLES_DIR
from fmcluster.cli.bootstrap import app

pytestmark = pytest.mark.synth

CASES = {config.load(str(p)).project.name: p for p in ALL_FILES}


def _bundles(root):
    """Bundle folder name -> folder, wherever the orchestrator's layout puts them (a bundle has SHA256SUMS)."""
    return {p.parent.name: p.parent for p in root.rglob("SHA256SUMS")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_render_is_the_deployed_bundle(synthesized, tmp_path, name):
    deployed = _bundles(synthesized.outdir / BUNDLES_DIR / name)
    assert deployed, f"no bundles synthesized for {name}"
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["render", str(CASES[name]), "--out", str(out)])
    assert result.exit_code == 0, result.output
    rendered = _bundles(out)
    assert sorted(rendered) == sorted(deployed)
    for bundle, path in rendered.items():
        for f in ("SHA256SUMS", "bootstrap.sh", "manifest.json"):
            assert (path / f).read_text() == (deployed[bundle] / f).read_text(), f"{name}/{bundle}/{f}"
