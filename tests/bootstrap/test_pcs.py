"""The pcs flavour's bundle, as rendered: what the traits of its row in fmcluster/flavours.py make of it.

Each expectation is the PCS fact it stands for (sources beside the row in fmcluster/flavours.py), not a value read
back from the row: the bundle mounts FSx (PCS has no storage setting), has no container step (configless slurmd
cannot load pyxis), runs Slurm's clients from where AWS's PCS recipe installs Slurm, finds a GB200 node's IMEX
peers from EC2 (no per-job prolog under PCS) and tags the instance when its health check fails.
"""

from __future__ import annotations

from fmcluster.bootstrap import render
from support.sandbox import FSX, context_for, make_project

PCS_SLURM = "/opt/aws/pcs/scheduler/slurm-24.11"  # aws-hpc-recipes dlami-for-pcs.yaml:219-273, 387-425


def _files(itype: str, role: str = "compute", **options) -> dict[str, str]:
    # orchestrator.type pcs parses once fmcluster/orchestrators.py has its row; the flavour decides the bundle
    project = make_project(itype, "ubuntu-24.04", "none")
    return render.render_files(context_for(project, "gpu", role, "pcs", fsx=FSX, **options))


def test_a_pcs_compute_node_mounts_fsx_and_runs_no_container_step():
    steps = {k.split("/")[1].split("-")[0] for k in _files("p5.48xlarge") if k.startswith("steps/")}
    assert steps == {"10", "20", "30", "40", "50", "60", "70", "90", "95", "99"}


def test_a_pcs_gb200_node_finds_its_imex_peers_from_ec2_and_asks_slurm_where_pcs_installs_it():
    imex = _files("p6e-gb200.36xlarge")["files/fmcluster-imex"]
    assert f"scontrol={PCS_SLURM}/bin/scontrol" in imex
    assert "aws ec2 describe-instance-topology" in imex
    assert "sagemaker" not in imex and "/opt/slurm/" not in imex


def test_a_failed_pcs_health_check_tags_the_instance():
    health = _files("p5.48xlarge")["steps/99-healthcheck.sh"]
    assert "aws ec2 create-tags" in health and 'mark_unhealthy "${reason}"' in health
    assert "scontrol" not in health  # no drain: slurmd has not fetched its configuration yet


def test_pcs_writes_no_plugstack_even_with_containers_turned_on():
    write_pyxis_conf = 'fmc_write_file "${FMC_ROOT}${PYXIS_CONF}"'
    hyperpod = render.render_files(context_for(make_project("p5.48xlarge", "ubuntu-24.04", "hyperpod"), "gpu",
                                               "compute"))["steps/80-containers.sh"]
    assert write_pyxis_conf in hyperpod  # where slurmd can load pyxis, the node writes its include
    containers = _files("p5.48xlarge", containers=True)["steps/80-containers.sh"]
    assert write_pyxis_conf not in containers and 'fmc_line_in_file "${plugstack}"' not in containers
    assert "does not load pyxis" in containers
