"""`acceptance render` and `first-job` for HyperPod on EKS: every object of every file validates against its schema,
workers ask for their node's GPUs and EFA interfaces (the catalog's), pods tolerate their group's taints and land on
it, and a team's jobs carry its Kueue queue when task governance is on. Renders are identical run to run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from fmcluster.bootstrap import kubernetes_jobs
from fmcluster.bootstrap.first_job import FirstJobError
from fmcluster.bootstrap.versions import BootstrapError
from support import ROOT, load
from support import kubernetes as k8s
from support.sandbox import SHELLCHECK

from fmcluster import catalog, checks, config
from fmcluster.kubernetes.nodes import EFA_RESOURCE, GPU_RESOURCE, GROUP_LABEL

EXAMPLES = {"teams": ROOT / "examples" / "p5-hyperpod-eks-teams.yaml", "plan": ROOT / "examples" /
            "p5en-hyperpod-eks.yaml"}


def _cluster(name: str):
    plan, _ = checks.validate(config.load(EXAMPLES[name]))
    return plan.cluster


def _render(name: str, out: Path) -> dict[str, list[dict]]:
    cluster = _cluster(name)
    kubernetes_jobs.render_acceptance(cluster, out, image="nccl-tests:1")
    kubernetes_jobs.render_first_job(cluster, out)
    return {str(p.relative_to(out)): list(yaml.safe_load_all(p.read_text())) for p in sorted(out.rglob("*.yaml"))}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, tuple[Path, dict[str, list[dict]]]]:
    """Each example rendered once for the tests that only read the files."""
    out = {}
    for name in EXAMPLES:
        folder = tmp_path_factory.mktemp(name)
        out[name] = (folder, _render(name, folder))
    return out


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_rendered_object_validates(name: str, rendered):
    files = rendered[name][1]
    kinds = {o["kind"] for objs in files.values() for o in objs}
    assert kinds == {"ConfigMap", "Job", "MPIJob", "PyTorchJob"}
    for file, objs in files.items():
        assert k8s.validate_all(objs) == {}, file


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_workers_ask_for_the_whole_node_and_land_on_their_group(name: str, rendered):
    cluster = _cluster(name)
    files = rendered[name][1]
    for group in cluster.groups:
        itype = catalog.get(group.instance_type)
        (mpijob,) = files[f"{group.name}/nccl.yaml"]
        worker = mpijob["spec"]["mpiReplicaSpecs"]["Worker"]
        # every node, or as many as the team's quota admits (tests/kubernetes/test_jobs_fit_quota.py: 14 of 16)
        assert worker["replicas"] == (14 if name == "teams" else group.count)
        pod = worker["template"]["spec"]
        assert pod["containers"][0]["resources"]["limits"] == {GPU_RESOURCE: itype.gpus,
                                                               EFA_RESOURCE: itype.max_efa_interfaces,
                                                               "hugepages-2Mi": "5120Mi", "memory": "32000Mi"}
        assert pod["nodeSelector"][GROUP_LABEL] == group.name
        taints = cluster.hyperpod_eks.group(group.name).node_taints
        assert {(t["key"], t.get("value"), t["effect"]) for t in pod["tolerations"]} == {
            (t.key, t.value, t.effect) for t in taints}
        assert pod["tolerations"], "the GPU groups are tainted by default: the pods must tolerate it"
        job = files[f"{group.name}/node-checks.yaml"][1]
        assert job["spec"]["completions"] == job["spec"]["parallelism"] == worker["replicas"]


def test_task_governance_puts_the_jobs_in_a_team_queue(rendered):
    tmp_path, files = rendered["teams"]
    for objs in files.values():
        for obj in objs:
            assert obj["metadata"]["namespace"] == "hyperpod-ns-research"  # research may hold the most (10 + 4)
            if obj["kind"] != "ConfigMap":
                assert obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "hyperpod-ns-research-localqueue"
    readme = (tmp_path / "README.md").read_text()
    assert "Team research's quota admits 14 of the 16 nodes" in readme


def test_without_task_governance_the_jobs_run_unqueued_in_default(rendered):
    for objs in rendered["plan"][1].values():
        for obj in objs:
            assert obj["metadata"]["namespace"] == "default"
            assert "kueue.x-k8s.io/queue-name" not in obj["metadata"]["labels"]


def test_the_node_checks_carry_the_slurm_jobs_script_and_health_check(rendered):
    files = rendered["plan"][1]
    config_map = files["train/node-checks.yaml"][0]
    script = config_map["data"]["node-checks.sh"]
    assert "FMC-NODE" in script and 'bash "${HERE}/healthcheck.sh"' in script
    assert config_map["data"]["healthcheck.sh"].startswith("#!/bin/bash")
    pod = files["train/node-checks.yaml"][1]["spec"]["template"]["spec"]
    # the verdict the node's health check wrote at boot, read-only (node-checks.sh reads it where it cannot sudo)
    assert {"name": "fmc-health", "mountPath": "/var/lib/fmcluster", "readOnly": True} in \
        pod["containers"][0]["volumeMounts"]
    assert 'FMC-NODE %s health' in script and "/var/lib/fmcluster/health" in script
    assert "pcie.gpu_nvlinks_expected_up=18" in script  # p5en: the catalog's NVLinks per GPU, as the Slurm jobs pass
    first = files["first-job/train.yaml"][0]["data"]
    assert first["first_job_train.py"] == (ROOT / "templates/acceptance/first_job_train.py").read_text()


def test_renders_are_identical_run_to_run(tmp_path: Path):
    one, two = tmp_path / "one", tmp_path / "two"
    _render("teams", one)
    _render("teams", two)
    assert [(p.relative_to(one), p.read_bytes()) for p in sorted(one.rglob("*")) if p.is_file()] == \
           [(p.relative_to(two), p.read_bytes()) for p in sorted(two.rglob("*")) if p.is_file()]


def test_no_image_is_refused_with_what_to_give(tmp_path: Path):
    with pytest.raises(BootstrapError, match="give --image"):
        kubernetes_jobs.render_acceptance(_cluster("plan"), tmp_path)


def test_the_first_job_needs_fsx(tmp_path: Path):
    loaded = load({"name": "k8s", "availability_zone_id": "use1-az6", "os": "al2023",
                   "orchestrator": {"type": "hyperpod-eks",
                                    "hyperpod_eks": {"admins": ["arn:aws:iam::111122223333:role/admin"]}},
                   "compute_groups": [{"name": "train", "instance_type": "p5.48xlarge", "count": 2}],
                   "storage": {"fsx": {"enabled": False}}})
    plan, _ = checks.validate(loaded)
    with pytest.raises(FirstJobError, match="storage.fsx.enabled: true"):
        kubernetes_jobs.render_first_job(plan.cluster, tmp_path)


def test_the_pods_shell_commands_pass_shellcheck(rendered, tmp_path: Path):
    """The launcher's loop and the node-check pod's command (bash -c strings inside the YAML), by the real
    shellcheck; the node-check script itself is the Slurm jobs' node-checks.sh, linted there."""
    files = rendered["teams"][1]
    scripts = []
    for objs in files.values():
        for obj in (o for o in objs if o["kind"] != "ConfigMap"):
            pods = ([obj["spec"]["template"]["spec"]] if obj["kind"] == "Job" else
                    [r["template"]["spec"] for r in obj["spec"].get("mpiReplicaSpecs", {}).values()])
            for pod in pods:
                command = pod["containers"][0].get("command", [])
                if command[:2] == ["/bin/bash", "-c"]:
                    scripts.append("#!/bin/bash\n" + command[2])
    assert len(scripts) == 2
    for i, text in enumerate(scripts):
        path = tmp_path / f"cmd{i}.sh"
        path.write_text(text, encoding="utf-8")
        proc = subprocess.run([SHELLCHECK, "--norc", str(path)], check=False, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stdout
