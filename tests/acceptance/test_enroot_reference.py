"""Image references in the generated Slurm jobs reach the registry they name: each is read the way the node reads it,
by pyxis 0.19.0 and enroot 3.4.1's own parsing lines (:mod:`support.enroot`). enroot before 4.0 reads
``public.ecr.aws/...`` without ``#`` as a Docker Hub image (FACTS.md section 5)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from support import ROOT
from support.enroot import docker_meaning, enroot_pull
from typer.testing import CliRunner

from fmcluster.bootstrap.enroot import ImageReferenceError, enroot_reference
from fmcluster.cli import app as cli_app

PINNED = yaml.safe_load((ROOT / "bootstrap/versions.yaml").read_text())["first_job_image"]
DIGEST = "sha256:" + "0123456789abcdef" * 4


def image_defaults(folder: Path) -> dict[str, str]:
    """Every ``FMC_IMAGE`` default in the batch scripts under ``folder``."""
    found = {}
    for script in folder.rglob("*.sbatch"):
        for m in re.finditer(r'^FMC_IMAGE="\$\{FMC_IMAGE:?-([^}]*)\}"$', script.read_text(), re.M):
            found[str(script.relative_to(folder))] = m.group(1)
    return found


def test_the_old_docker_form_is_what_enroot_3_4_reads_as_docker_hub():
    """The premise, on enroot's own lines: without #, the pinned image is asked of Docker Hub."""
    assert enroot_pull(PINNED["x86_64"])["registry"] == "registry-1.docker.io"


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_the_pinned_first_job_images_are_pulled_from_the_ecr_public_gallery(arch):
    assert enroot_pull(enroot_reference(PINNED[arch])) == docker_meaning(PINNED[arch])


@pytest.mark.parametrize("example, arch", [("p5-parallelcluster", "x86_64"), ("p5en-hyperpod", "x86_64"),
                                           ("p6e-gb200-hyperpod-training-plan", "aarch64")])
def test_every_first_job_pulls_the_pinned_image_from_its_registry(tmp_path: Path, example, arch):
    result = CliRunner().invoke(cli_app, ["acceptance", "first-job", str(ROOT / "examples" / f"{example}.yaml"),
                                          "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    defaults = image_defaults(tmp_path / "first-job")
    assert defaults, "no FMC_IMAGE in the first job"
    for script, image in defaults.items():
        assert enroot_pull(image) == docker_meaning(PINNED[arch]), script


@pytest.mark.parametrize("given, expected", [
    ("nvcr.io/nvidia/pytorch:25.01-py3", {"registry": "nvcr.io", "image": "nvidia/pytorch", "tag": "25.01-py3"}),
    (f"public.ecr.aws/hpc-cloud/nccl-tests@{DIGEST}",
     {"registry": "public.ecr.aws", "image": "hpc-cloud/nccl-tests", "tag": DIGEST}),
    (f"public.ecr.aws/hpc-cloud/nccl-tests:latest@{DIGEST}",
     {"registry": "public.ecr.aws", "image": "hpc-cloud/nccl-tests", "tag": DIGEST}),
    ("localhost:5000/nccl-tests:1", {"registry": "localhost:5000", "image": "nccl-tests", "tag": "1"}),
    ("nvcr.io#nvidia/pytorch:25.01-py3", {"registry": "nvcr.io", "image": "nvidia/pytorch", "tag": "25.01-py3"}),
    ("nvidia/cuda:12.8.0-base-ubuntu22.04",
     {"registry": "registry-1.docker.io", "image": "nvidia/cuda", "tag": "12.8.0-base-ubuntu22.04"}),
    ("ubuntu", {"registry": "registry-1.docker.io", "image": "library/ubuntu", "tag": "latest"}),
    ("/fsx/images/nccl-tests.sqsh", {"squashfs": "/fsx/images/nccl-tests.sqsh"}),
])
def test_a_given_image_reaches_the_registry_docker_would_ask(tmp_path: Path, given, expected):
    """``acceptance render --image`` (nccl-tests through pyxis) on ParallelCluster: what the job asks enroot for."""
    result = CliRunner().invoke(cli_app, ["acceptance", "render", str(ROOT / "examples/p5-parallelcluster.yaml"),
                                          "--image", given, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    defaults = image_defaults(tmp_path)
    assert defaults
    for script, image in defaults.items():
        assert enroot_pull(image) == expected, script


def test_a_reference_enroot_cannot_read_is_refused_in_one_line(tmp_path: Path):
    result = CliRunner().invoke(cli_app, ["acceptance", "first-job", str(ROOT / "examples/p5-parallelcluster.yaml"),
                                          "--image", "nvcr.io/NVIDIA/PyTorch:25.01", "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "--image nvcr.io/NVIDIA/PyTorch:25.01: enroot 3.4 cannot read it" in result.output
    assert "Traceback" not in result.output
    assert "error" in enroot_pull("nvcr.io#NVIDIA/PyTorch:25.01")  # enroot's own verdict agrees


def test_what_passes_the_check_is_what_enroot_reads():
    for ref in ("nvcr.io/nvidia/pytorch:25.01-py3", "ubuntu", f"quay.io/a/b@{DIGEST}"):
        assert "error" not in enroot_pull(enroot_reference(ref))
    with pytest.raises(ImageReferenceError):
        enroot_reference("quay.io/a/b@sha256:short")
