"""The generated ParallelCluster configuration: queues, compute resources, capacity, storage, access."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel
from support import generated, load, project_dict

from fmcluster import checks
from fmcluster.config import parallelcluster as pc_settings
from fmcluster.errors import ConfigError
from fmcluster.generate import parallelcluster as generate
from fmcluster.plan import make_plan

GROUPS = [
    {"name": "ondemand", "instance_type": "p5.48xlarge", "count": 4},
    {"name": "odcr", "instance_type": "p5e.48xlarge", "count": 8,
     "capacity": {"type": "reservation", "reservation_id": "cr-0123456789abcdef0"}},
    {"name": "block", "instance_type": "p5en.48xlarge", "count": 16,
     "capacity": {"type": "capacity-block", "reservation_id": "cr-0fedcba9876543210"}},
]


def _queues(cfg):
    return {q["Name"]: q for q in cfg["Scheduling"]["SlurmQueues"]}


def _resources(cfg):
    return {cr["Name"]: (q, cr) for q in cfg["Scheduling"]["SlurmQueues"] for cr in q["ComputeResources"]}


def test_one_queue_per_group_by_default_named_after_it():
    cfg = generated(project_dict(compute_groups=GROUPS))
    assert list(_queues(cfg)) == ["ondemand", "odcr", "block"]
    for name, queue in _queues(cfg).items():
        assert [cr["Name"] for cr in queue["ComputeResources"]] == [name]
    assert {n: cr["InstanceType"] for n, (_, cr) in _resources(cfg).items()} == {
        "ondemand": "p5.48xlarge", "odcr": "p5e.48xlarge", "block": "p5en.48xlarge"}


def test_explicit_queue_mapping_puts_groups_in_one_queue():
    groups = GROUPS[:2]
    cfg = generated(project_dict(compute_groups=groups,
                                 orchestrator={"type": "parallelcluster",
                                               "parallelcluster": {"queues": {"gpu": ["odcr", "ondemand"]}}}))
    assert list(_queues(cfg)) == ["gpu"]
    assert [cr["Name"] for cr in _queues(cfg)["gpu"]["ComputeResources"]] == ["odcr", "ondemand"]


def test_every_compute_resource_has_efa_with_gpudirect_rdma():
    for _, cr in _resources(generated(project_dict(compute_groups=GROUPS))).values():
        assert cr["Efa"] == {"Enabled": True, "GdrSupport": True}


def test_placement_group_on_for_on_demand_off_for_odcr_and_capacity_blocks():
    resources = _resources(generated(project_dict(compute_groups=GROUPS)))
    enabled = {n: cr["Networking"]["PlacementGroup"]["Enabled"] for n, (_, cr) in resources.items()}
    # a reservation made outside a placement group cannot launch into a new one
    # (ParallelCluster's PlacementGroupCapacityReservationValidator)
    assert enabled == {"ondemand": True, "odcr": False, "block": False}


def test_a_reservation_launches_into_its_own_placement_group_by_name():
    odcr = dict(GROUPS[1], capacity=dict(GROUPS[1]["capacity"], placement_group="spine-7"))
    (_, cr), = _resources(generated(project_dict(compute_groups=[odcr]))).values()
    assert cr["Networking"]["PlacementGroup"] == {"Enabled": True, "Name": "spine-7"}


def test_placement_group_follows_an_explicit_choice():
    groups = [dict(GROUPS[0], placement_group=False)]
    (_, cr), = _resources(generated(project_dict(compute_groups=groups))).values()
    assert cr["Networking"]["PlacementGroup"] == {"Enabled": False}


def test_capacity_block_queue_is_capacity_block_with_all_nodes_static_and_its_reservation():
    queue, cr = _resources(generated(project_dict(compute_groups=GROUPS)))["block"]
    assert queue["CapacityType"] == "CAPACITY_BLOCK"
    assert cr["MinCount"] == cr["MaxCount"] == 16
    assert cr["CapacityReservationTarget"] == {"CapacityReservationId": "cr-0fedcba9876543210"}


def test_odcr_is_on_demand_with_its_reservation_and_static_nodes():
    queue, cr = _resources(generated(project_dict(compute_groups=GROUPS)))["odcr"]
    assert queue["CapacityType"] == "ONDEMAND"
    assert cr["MinCount"] == cr["MaxCount"] == 8
    assert cr["CapacityReservationTarget"] == {"CapacityReservationId": "cr-0123456789abcdef0"}


def test_on_demand_nodes_are_dynamic_unless_static_nodes_says_otherwise():
    queue, cr = _resources(generated(project_dict(compute_groups=GROUPS)))["ondemand"]
    assert queue["CapacityType"] == "ONDEMAND" and "CapacityReservationTarget" not in cr
    assert (cr["MinCount"], cr["MaxCount"]) == (0, 4)
    cfg = generated(project_dict(compute_groups=GROUPS[:1],
                                 orchestrator={"type": "parallelcluster", "parallelcluster": {"static_nodes": {"ondemand": 2}}}))
    assert _resources(cfg)["ondemand"][1]["MinCount"] == 2


def test_a_capacity_block_with_fewer_static_nodes_is_refused_naming_the_field():
    data = project_dict(compute_groups=GROUPS[2:],
                        orchestrator={"type": "parallelcluster", "parallelcluster": {"static_nodes": {"block": 3}}})
    assert _refused(data, "parallelcluster-capacity", "orchestrator.parallelcluster.static_nodes.block",
                    "MinCount = MaxCount")


def test_fsx_is_mounted_by_file_system_id_at_the_contract_mount_path():
    cfg = generated(project_dict())
    assert cfg["SharedStorage"] == [{"Name": "fsx", "StorageType": "FsxLustre", "MountDir": "/fsx",
                                     "FsxLustreSettings": {"FileSystemId": "fs-00000000000000000"}}]


def test_no_shared_storage_without_a_file_system():
    assert "SharedStorage" not in generated(project_dict(), fsx=False)


def test_every_queue_runs_the_launcher_on_node_configured_with_the_compute_pointer():
    cfg = generated(project_dict(compute_groups=GROUPS))
    launcher = "s3://pc-bootstrap-placeholder/bootstrap/fmcluster-launch.sh"
    compute = "arn:aws:ssm:us-east-1:000000000000:parameter/fmcluster/pc/bootstrap/compute"
    head = "arn:aws:ssm:us-east-1:000000000000:parameter/fmcluster/pc/bootstrap/head-node"
    for queue in cfg["Scheduling"]["SlurmQueues"]:
        assert queue["CustomActions"] == {"OnNodeConfigured": {"Script": launcher, "Args": ["configure", compute]}}
    # the head node runs the same launcher with its own pointer (its dispatcher runs the head-node bundle: pyxis in
    # the shared plugstack.conf), and again after every update with the digest its pointer names
    assert cfg["HeadNode"]["CustomActions"] == {
        "OnNodeConfigured": {"Script": launcher, "Args": ["configure", head]},
        "OnNodeUpdated": {"Script": launcher, "Args": ["update", head, "0" * 64]}}


def test_head_node_is_private_ssm_only_imdsv2_and_nothing_is_open_to_the_world():
    cfg = generated(project_dict())
    head = cfg["HeadNode"]
    assert head["Networking"] == {"SubnetId": "subnet-00000000000000000",
                                  "SecurityGroups": ["sg-00000000000000001", "sg-00000000000000000"]}
    assert "Ssh" not in head and "KeyName" not in json.dumps(cfg)
    assert head["Imds"] == {"Secured": True} and cfg["Imds"] == {"ImdsSupport": "v2.0"}
    assert "0.0.0.0/0" not in json.dumps(cfg)
    assert {"Policy": "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"} in head["Iam"]["AdditionalIamPolicies"]
    assert head["LocalStorage"]["RootVolume"]["Encrypted"] is True


def test_compute_queues_use_the_cluster_security_groups_and_subnet():
    for queue in generated(project_dict(compute_groups=GROUPS))["Scheduling"]["SlurmQueues"]:
        assert queue["Networking"]["SubnetIds"] == ["subnet-00000000000000000"]
        assert set(queue["Networking"]["SecurityGroups"]) == {"sg-00000000000000000", "sg-00000000000000001"}


def test_node_policies_and_extra_policies_reach_head_login_and_compute_nodes():
    extra = "arn:aws:iam::123456789012:policy/team-data"
    cfg = generated(project_dict(orchestrator={"type": "parallelcluster", "parallelcluster": {
        "extra_iam_policy_arns": [extra], "login_nodes": {"count": 2}}}))
    expected = [{"Policy": "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"},
                {"Policy": "arn:aws:iam::000000000000:policy/parallelcluster-pc-nodes"}, {"Policy": extra}]
    assert cfg["HeadNode"]["Iam"]["AdditionalIamPolicies"] == expected
    assert cfg["Scheduling"]["SlurmQueues"][0]["Iam"]["AdditionalIamPolicies"] == expected
    pool, = cfg["LoginNodes"]["Pools"]
    assert pool["Iam"]["AdditionalIamPolicies"] == expected
    assert (pool["Count"], pool["InstanceType"]) == (2, "m7i.2xlarge")


def test_node_policy_reads_the_bundle_and_remote_writes_only_with_a_workspace():
    from fmcluster.generate import placeholders

    base = generate.node_policy_statements(["arn:aws:s3:::b/bootstrap/*"], None)
    assert base == [{"Sid": "ReadBootstrapBundle", "Effect": "Allow", "Action": "s3:GetObject",
                     "Resource": ["arn:aws:s3:::b/bootstrap/*"]}]
    metrics = placeholders.metrics()
    with_metrics = generate.node_policy_statements(["arn:aws:s3:::b/bootstrap/*"], metrics)
    assert with_metrics[-1] == {"Sid": "RemoteWriteMetrics", "Effect": "Allow", "Action": "aps:RemoteWrite",
                                "Resource": metrics.workspace_arn}


@pytest.mark.parametrize(("os", "pc_os"), [("ubuntu-22.04", "ubuntu2204"), ("ubuntu-24.04", "ubuntu2404"),
                                           ("al2023", "alinux2023")])
def test_os_follows_the_project(os, pc_os):
    assert generated(project_dict(os=os))["Image"] == {"Os": pc_os}


def test_arm64_clusters_get_an_arm64_head_node():
    groups = [{"name": "nvl", "instance_type": "p6e-gb200.36xlarge", "count": 18,
               "capacity": {"type": "capacity-block", "reservation_id": "cr-0fedcba9876543210"}}]
    assert generated(project_dict(compute_groups=groups))["HeadNode"]["InstanceType"] == "m7g.4xlarge"


def test_mixed_architectures_are_refused():
    groups = [GROUPS[0], {"name": "nvl", "instance_type": "p6e-gb200.36xlarge", "count": 9,
                          "capacity": {"type": "capacity-block", "reservation_id": "cr-0fedcba9876543210"}}]
    assert _refused(project_dict(compute_groups=groups), "parallelcluster-architecture",
                    "compute_groups[1].instance_type", "one architecture")


HEALTH = [{"HealthCheckProgram": "/usr/local/sbin/fmcluster-node-health"}, {"HealthCheckInterval": 300},
          {"HealthCheckNodeState": "ANY"}]
"""The periodic node health check every GPU node installs, run by slurmd (tests/bootstrap/test_node_health.py)."""


def test_slurm_settings_pass_through():
    cfg = generated(project_dict(orchestrator={"type": "parallelcluster", "parallelcluster": {"slurm": {
        "queue_update_strategy": "TERMINATE", "custom_settings": {"SchedulerParameters": "nohold_on_prolog_fail"}}}}))
    assert cfg["Scheduling"]["SlurmSettings"] == {
        "QueueUpdateStrategy": "TERMINATE", "ScaledownIdletime": 10,
        "CustomSlurmSettings": [{"SchedulerParameters": "nohold_on_prolog_fail"}, *HEALTH,
                                # GPUs tracked even without accounting (squeue's tres-alloc names them only then)
                                {"AccountingStorageTRES": "gres/gpu"}]}
    own = generated(project_dict(orchestrator={"type": "parallelcluster", "parallelcluster": {"slurm": {
        "custom_settings": {"accountingstoragetres": "gres/gpu:h100"}}}}))
    assert own["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"] == [{"accountingstoragetres": "gres/gpu:h100"},
                                                                         *HEALTH]
    mine = generated(project_dict(orchestrator={"type": "parallelcluster", "parallelcluster": {"slurm": {
        "custom_settings": {"HealthCheckProgram": "/opt/nhc/nhc"}}}}))  # the project's own health check wins
    assert mine["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"][:3] == [
        {"HealthCheckProgram": "/opt/nhc/nhc"}, {"HealthCheckInterval": 300}, {"HealthCheckNodeState": "ANY"}]


def test_tags_carry_the_project():
    cfg = generated(project_dict(tags={"team": "llm"}))
    assert cfg["Tags"] == [{"Key": "fmcluster:project", "Value": "pc"}, {"Key": "team", "Value": "llm"}]


def test_invalid_queue_names_are_refused_naming_the_field():
    data = project_dict(orchestrator={"type": "parallelcluster", "parallelcluster": {"queues": {"Big_Queue": ["train"]}}})
    assert _refused(data, "parallelcluster-names", "orchestrator.parallelcluster.queues.Big_Queue", "queue name")


def test_cluster_name_differs_from_every_stack_name():
    assert make_plan(load(project_dict()).project).cluster.pcluster_name == "pc-slurm"


def _refused(data, check: str, path: str, words: str) -> bool:
    """The generator trusts the checks: the project never reaches it, and the check names the field."""
    with pytest.raises(ConfigError) as refused:
        checks.validate(load(data))
    return any(p.check == check and p.path == path and words in p.message for p in refused.value.problems)


def test_no_shared_objects_so_yaml_has_no_anchors():
    import yaml

    assert "&id" not in yaml.safe_dump(generated(project_dict(compute_groups=GROUPS)))


def test_every_settings_field_is_described():
    def walk(model: type[BaseModel]):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no description"
            for arg in getattr(field.annotation, "__args__", ()) or (field.annotation,):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    walk(arg)
    walk(pc_settings.ParallelClusterSettings)


def test_settings_reject_unknown_keys():
    with pytest.raises(ConfigError, match="unknown key 'head_node_type'"):
        load(project_dict(orchestrator={"type": "parallelcluster", "parallelcluster": {"head_node_type": "m7i.large"}}))


def test_ultraserver_queues_run_the_imex_prolog_at_allocation():
    groups = [{"name": "nvl72", "instance_type": "p6e-gb200.36xlarge", "count": 18,
               "capacity": {"type": "capacity-block", "reservation_id": "cr-0fedcba9876543210"}}]
    settings = generated(project_dict(os="ubuntu-24.04", compute_groups=groups))["Scheduling"]["SlurmSettings"]
    assert {"PrologFlags": "Alloc,NoHold"} in settings["CustomSlurmSettings"]
    own = generated(project_dict(os="ubuntu-24.04", compute_groups=groups, orchestrator={
        "type": "parallelcluster", "parallelcluster": {"slurm": {"custom_settings": {"PrologFlags": "Alloc"}}}}))
    assert own["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"] == [{"PrologFlags": "Alloc"}, *HEALTH,
                                                                         {"AccountingStorageTRES": "gres/gpu"}]
    plain = generated(project_dict())["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"]
    assert plain == [*HEALTH, {"AccountingStorageTRES": "gres/gpu"}]  # no IMEX: no PrologFlags


def test_accounting_writes_the_database_and_its_defaults_and_the_projects_settings_win():
    without = generated(project_dict())
    assert "Database" not in without["Scheduling"]["SlurmSettings"]
    config = generated(project_dict(orchestrator={
        "type": "parallelcluster", "accounting": {"enabled": True},
        "parallelcluster": {"slurm": {"custom_settings": {"PriorityWeightFairshare": 500}}}}))
    slurm = config["Scheduling"]["SlurmSettings"]
    assert slurm["Database"]["Uri"].endswith(".rds.amazonaws.com:3306") and "://" not in slurm["Database"]["Uri"]
    assert slurm["Database"]["PasswordSecretArn"].startswith("arn:aws:secretsmanager:")
    custom = {k: v for item in slurm["CustomSlurmSettings"] for k, v in item.items()}
    assert custom == {"PriorityWeightFairshare": 500, "PriorityType": "priority/multifactor",
                      "AccountingStorageTRES": "gres/gpu", **{k: v for item in HEALTH for k, v in item.items()}}
    # slurmdbd runs on the head node: it alone joins the database's client group
    head = config["HeadNode"]["Networking"]["SecurityGroups"]
    assert len(head) == len(without["HeadNode"]["Networking"]["SecurityGroups"]) + 1
    assert all(head[-1] not in q["Networking"]["SecurityGroups"] for q in config["Scheduling"]["SlurmQueues"])
    off = generated(project_dict(orchestrator={
        "type": "parallelcluster", "accounting": {"enabled": True, "fair_share": False, "tres": []}}))
    assert off["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"] == HEALTH
