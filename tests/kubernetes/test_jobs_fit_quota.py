"""Every Kubernetes job fmcluster generates for the teams example fits the ComputeQuota of the team it is submitted as,
computed here from the AWS::SageMaker::ComputeQuota resources the synthesized cluster stack holds (not from the
generator's own arithmetic); a group no team's quota admits any node of is refused with what to change."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fmcluster.bootstrap import kubernetes_jobs
from fmcluster.bootstrap.first_job import FirstJobError
from fmcluster.bootstrap.versions import BootstrapError
from support import ROOT

from fmcluster import catalog, config
from fmcluster.plan import make_plan

TEAMS = ROOT / "examples" / "p5-hyperpod-eks-teams.yaml"
QUEUE = "kueue.x-k8s.io/queue-name"


@pytest.fixture(scope="module")
def quotas(tmp_path_factory) -> list[dict]:
    from fmcluster.stacks.app import synthesize  # starts jsii: only when these tests run

    template = synthesize(TEAMS, tmp_path_factory.mktemp("synth"))[f"{TEAMS.stem}-cluster"]
    return [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::ComputeQuota"]


def _admits(quotas: list[dict], instance_type: str, capacity: int) -> dict[str, int]:
    """Team -> instances of ``instance_type`` one workload can hold: the quota's guaranteed count, plus its absolute
    borrow limit when its strategy borrows (LendAndBorrow, AWS API reference ResourceSharingConfig), but no more than
    the other teams lend (Lend or LendAndBorrow: their guaranteed counts) nor than the group holds."""
    rows = {}
    for q in quotas:
        config_, sharing = q["ComputeQuotaConfig"], q["ComputeQuotaConfig"]["ResourceSharingConfig"]
        guaranteed = sum(r["Count"] for r in config_["ComputeQuotaResources"] if r["InstanceType"] == instance_type)
        borrow = sum(r["Count"] for r in sharing.get("AbsoluteBorrowLimits", []) if r["InstanceType"] == instance_type)
        rows[q["ComputeQuotaTarget"]["TeamName"]] = (guaranteed, borrow if sharing["Strategy"] == "LendAndBorrow"
                                                     else 0, sharing["Strategy"] in ("Lend", "LendAndBorrow"))
    lent = {team: sum(og for other, (og, _, lends) in rows.items() if other != team and lends) for team in rows}
    return {team: min(capacity, g + min(b, lent[team])) for team, (g, b, _) in rows.items()}


def _pods(obj: dict) -> list[tuple[int, dict]]:
    """(replicas, pod spec) of every pod template of a Job, MPIJob or PyTorchJob."""
    spec = obj["spec"]
    if obj["kind"] == "Job":
        return [(spec["parallelism"], spec["template"]["spec"])]
    replicas = spec.get("mpiReplicaSpecs") or spec["pytorchReplicaSpecs"]
    return [(r["replicas"], r["template"]["spec"]) for r in replicas.values()]


def test_every_generated_job_fits_the_quota_of_the_team_it_is_submitted_as(quotas, tmp_path: Path):
    cluster = make_plan(config.load(TEAMS).project).cluster
    kubernetes_jobs.render_acceptance(cluster, tmp_path, image="nccl-tests:1")
    kubernetes_jobs.render_first_job(cluster, tmp_path)
    (group,) = cluster.groups
    itype = catalog.get(group.instance_type)
    admits = _admits(quotas, catalog.hyperpod_type(group.instance_type), group.count)
    assert admits == {"research": 14, "inference": 6}  # 10 + 4 borrowed from inference's lent 6; 6
    jobs = [o for p in sorted(tmp_path.rglob("*.yaml")) for o in yaml.safe_load_all(p.read_text())
            if o["kind"] != "ConfigMap"]
    assert {o["kind"] for o in jobs} == {"Job", "MPIJob", "PyTorchJob"}
    for job in jobs:
        team = job["metadata"]["labels"][QUEUE].removeprefix("hyperpod-ns-").removesuffix("-localqueue")
        assert job["metadata"]["namespace"] == f"hyperpod-ns-{team}"
        gpus = sum(n * int(pod["containers"][0]["resources"].get("requests", {}).get("nvidia.com/gpu", 0))
                   for n, pod in _pods(job))
        nodes = gpus // itype.gpus  # every GPU pod asks for a whole node
        assert gpus % itype.gpus == 0 and 2 <= nodes <= admits[team], (job["kind"], team, nodes, admits)
        assert nodes == max(admits.values()), job["kind"]  # as many nodes as the best-placed team's quota admits
    readme = (tmp_path / "README.md").read_text()
    assert "Team research's quota admits 14 of the 16 nodes" in readme


def test_a_group_no_teams_quota_admits_is_refused_with_what_to_change(tmp_path: Path):
    text = TEAMS.read_text().replace("shared: {guaranteed: 10, borrow: 4}", "shared: {guaranteed: 0, borrow: 4}") \
        .replace("shared: {guaranteed: 6}", "shared: {guaranteed: 0}")
    cluster = make_plan(config.parse(text, TEAMS).project).cluster
    with pytest.raises(BootstrapError, match=r"no team's ComputeQuota admits any of group shared's 16 nodes.*"
                                             r"teams\[\]\.instances\.shared\.guaranteed"):
        kubernetes_jobs.render_acceptance(cluster, tmp_path, image="nccl-tests:1")
    with pytest.raises(FirstJobError, match="no team's ComputeQuota admits"):  # the first-job command's usage error
        kubernetes_jobs.render_first_job(cluster, tmp_path)
