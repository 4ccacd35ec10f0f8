"""``fmcluster status``'s readers (``fmcluster/aws/stackstate.py``, ``status.py``, each orchestrator's module):
stacks against moto's CloudFormation, ParallelCluster's stack, fleet record and tagged instances against moto's
CloudFormation, DynamoDB and EC2, HyperPod against moto's SageMaker, PCS under botocore's Stubber (moto has no PCS)
with moto's EC2, and the EC2 status checks under the Stubber (moto reports every instance ok)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from moto import mock_aws
from support import BASE, plan_of

from fmcluster.aws import nodes, stackstate
from fmcluster.aws import status as st
from fmcluster.aws.alerts import AlertsStatus

REGION = "us-east-1"
PC = plan_of(BASE + "orchestrator: {type: parallelcluster}\n")
ACCOUNTING = plan_of(BASE + "orchestrator: {type: parallelcluster, accounting: {enabled: true}}\n")
HP = plan_of(BASE.replace("p5.48xlarge", "p4d.24xlarge") + "orchestrator: {type: hyperpod}\n")
PCS = plan_of(BASE + "orchestrator: {type: pcs, pcs: {ami_id: ami-0123456789abcdef0}}\n")
NONE = plan_of(BASE)
WHEN = datetime(2026, 11, 30, 12, tzinfo=timezone.utc)


def client(service: str):
    return boto3.client(service, region_name=REGION)


def deploy(name: str, outputs: dict[str, str] | None = None, protect: bool = False) -> None:
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
                "Outputs": {k: {"Value": v} for k, v in (outputs or {}).items()}}
    if not template["Outputs"]:
        del template["Outputs"]
    client("cloudformation").create_stack(StackName=name, TemplateBody=json.dumps(template),
                                          EnableTerminationProtection=protect)


def launch(tags: dict[str, str], count: int = 1, instance_type: str = "p5.48xlarge") -> list[str]:
    ec2 = client("ec2")
    # moto takes any image ID (reading its default images takes 20 s)
    made = ec2.run_instances(ImageId="ami-0123456789abcdef0", MinCount=count, MaxCount=count,
                             InstanceType=instance_type, TagSpecifications=[
                                 {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}])
    return [i["InstanceId"] for i in made["Instances"]]


# --- stacks ---------------------------------------------------------------------------------------

def test_stack_state_reads_status_protection_and_outputs_and_knows_a_missing_stack() -> None:
    with mock_aws():
        deploy("demo-network", {"VpcId": "vpc-1"}, protect=True)
        cfn = client("cloudformation")
        network, storage = stackstate.stack_states(cfn, ["demo-network", "demo-storage"])
    assert (network.status, network.ok, network.termination_protection) == ("CREATE_COMPLETE", True, True)
    assert network.outputs == {"VpcId": "vpc-1"} and network.stack_id.startswith("arn:aws:cloudformation:")
    assert (storage.status, storage.deployed, storage.ok) == (stackstate.NOT_DEPLOYED, False, False)


def stubbed_cfn(error: str, message: str) -> boto3.client:
    cfn = boto3.client("cloudformation", region_name=REGION)
    stubber = Stubber(cfn)
    stubber.add_client_error("describe_stacks", error, message)
    stubber.activate()
    return cfn


def test_stack_state_lets_other_refusals_through() -> None:
    """Only "does not exist" means not deployed: access denied (the session words it) and any other refusal raise."""
    with pytest.raises(ClientError, match="AccessDenied"):
        stackstate.stack_state(stubbed_cfn("AccessDenied", "no"), "demo-network")
    with pytest.raises(ClientError, match="ValidationError"):
        stackstate.stack_state(stubbed_cfn("ValidationError", "1 validation error detected"), "demo-network")
    state = stackstate.stack_state(stubbed_cfn("ValidationError", "Stack with id demo-network does not exist"),
                                   "demo-network")
    assert state.status == stackstate.NOT_DEPLOYED


def test_a_failed_stack_is_not_ok_and_says_why() -> None:
    cfn = boto3.client("cloudformation", region_name=REGION)
    with Stubber(cfn) as stubber:
        stubber.add_response("describe_stacks", {"Stacks": [{
            "StackName": "demo-cluster", "StackId": "arn:aws:cloudformation:us-east-1:1:stack/demo-cluster/x",
            "CreationTime": WHEN, "StackStatus": "UPDATE_ROLLBACK_COMPLETE",
            "StackStatusReason": "Resource ParallelClusterCluster failed", "EnableTerminationProtection": True}]})
        state = stackstate.stack_state(cfn, "demo-cluster")
    assert not state.ok and state.reason == "Resource ParallelClusterCluster failed"
    assert state.updated == WHEN.isoformat() and not state.busy


def test_project_stacks_are_the_stacks_the_app_builds() -> None:
    assert stackstate.project_stacks(PC) == ["demo-network", "demo-storage", "demo-observability", "demo-cluster"]
    assert stackstate.project_stacks(ACCOUNTING) == ["demo-network", "demo-storage", "demo-observability",
                                                     "demo-accounting", "demo-cluster"]
    quiet = plan_of(BASE + "observability: {prometheus: false, grafana: {enabled: false}}\n")
    assert stackstate.project_stacks(quiet) == ["demo-network", "demo-storage", "demo-cluster"]


def test_a_stack_the_project_no_longer_builds_is_listed_while_deployed() -> None:
    with mock_aws():
        deploy("demo-network")
        deploy("demo-accounting", protect=True)  # accounting turned off since
        found = {s.name: built for s, built in stackstate.all_stacks(client("cloudformation"), PC)}
        deploy("demo-cluster", {"ParallelClusterName": "demo-slurm"})
        again = st.project_status(client, PC, REGION, lambda ws: AlertsStatus(ws))
    assert found == {"demo-network": True, "demo-storage": True, "demo-observability": True, "demo-accounting": False,
                     "demo-cluster": True}
    assert not again.healthy  # storage and observability are not deployed
    assert [s["name"] for s in again.as_dict()["stacks"] if not s["in_project"]] == ["demo-accounting"]


# --- ParallelCluster ------------------------------------------------------------------------------

def pcluster(fleet: str | None = "RUNNING", own_stack: bool = True) -> None:
    deploy("demo-cluster", {"ParallelClusterName": "demo-slurm"}, protect=True)
    if own_stack:
        deploy("demo-slurm")
    if fleet is not None:
        ddb = client("dynamodb")
        ddb.create_table(TableName="parallelcluster-demo-slurm", BillingMode="PAY_PER_REQUEST",
                         KeySchema=[{"AttributeName": "Id", "KeyType": "HASH"}],
                         AttributeDefinitions=[{"AttributeName": "Id", "AttributeType": "S"}])
        ddb.put_item(TableName="parallelcluster-demo-slurm", Item={"Id": {"S": "COMPUTE_FLEET"}, "Data": {"M": {
            "status": {"S": fleet}, "lastStatusUpdatedTime": {"S": "2026-11-30 12:00:00.000000+00:00"}}}})
    name = {"parallelcluster:cluster-name": "demo-slurm"}
    launch({**name, "parallelcluster:node-type": "HeadNode"}, instance_type="c5.2xlarge")
    compute = {**name, "parallelcluster:node-type": "Compute", "parallelcluster:queue-name": "train",
               "parallelcluster:compute-resource-name": "train"}
    launch(compute)
    launch({**compute, "fmcluster:health": "unhealthy"})
    launch({**compute, "parallelcluster:cluster-name": "other"})  # another cluster's node: not ours


def test_parallelcluster_reads_its_stack_fleet_and_nodes_by_tag() -> None:
    with mock_aws():
        pcluster()
        stack = stackstate.stack_state(client("cloudformation"), "demo-cluster")
        status = st.CLUSTERS["parallelcluster"](client, PC, stack)
    assert (status.name, status.state, status.ok) == ("demo-slurm", "CREATE_COMPLETE", True)
    assert status.facts["compute fleet"] == "RUNNING" and status.facts["head node"].endswith(" running")
    [train] = status.groups
    assert (train.expected_min, train.expected_max, train.running, train.failing) == (0, 2, 1, 1)
    assert train.detail == "queue train" and not train.healthy and not status.healthy


def test_a_stopped_fleet_or_no_record_is_not_up() -> None:
    with mock_aws():
        pcluster(fleet="STOPPED")
        stopped = st.CLUSTERS["parallelcluster"](client, PC, stackstate.stack_state(client("cloudformation"),
                                                                                    "demo-cluster"))
    with mock_aws():
        pcluster(fleet=None)
        unknown = st.CLUSTERS["parallelcluster"](client, PC, stackstate.stack_state(client("cloudformation"),
                                                                                    "demo-cluster"))
    assert not stopped.ok and stopped.facts["compute fleet"] == "STOPPED"
    assert not unknown.ok and unknown.facts["compute fleet"].startswith("unknown")


def test_a_cluster_without_its_own_stack_says_how_to_create_it() -> None:
    manual = plan_of(BASE + "orchestrator: {type: parallelcluster, parallelcluster: {create_cluster: false}}\n")
    with mock_aws():
        pcluster(own_stack=False)
        status = st.CLUSTERS["parallelcluster"](client, manual, stackstate.stack_state(client("cloudformation"),
                                                                                       "demo-cluster"))
    assert status.problem.startswith("ParallelCluster cluster demo-slurm has no stack")
    assert "pcluster create-cluster" in status.problem and not status.healthy


def test_an_impaired_status_check_makes_a_node_failing() -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    with Stubber(ec2) as stubber:
        stubber.add_response("describe_instance_status", {"InstanceStatuses": [
            {"InstanceId": "i-1", "InstanceStatus": {"Status": "ok"}, "SystemStatus": {"Status": "impaired"}},
            {"InstanceId": "i-2", "InstanceStatus": {"Status": "ok"}, "SystemStatus": {"Status": "ok"}}]},
            {"InstanceIds": ["i-1", "i-2"]})
        group = nodes.ec2_group(ec2, "train", "p5.48xlarge", (2, 2), [
            {"InstanceId": "i-1", "State": {"Name": "running"}}, {"InstanceId": "i-2", "State": {"Name": "running"}},
            {"InstanceId": "i-3", "State": {"Name": "pending"}}])
    assert (group.running, group.failing, group.pending) == (1, 1, 1)
    assert group.states == {"pending": 1, "running": 2} and not group.healthy


# --- HyperPod -------------------------------------------------------------------------------------

def hyperpod_cluster() -> str:
    name = "demo-hyperpod-0123456789abcdef0"
    groups = [("controller", "ml.m5.12xlarge", 1), ("train", "ml.p4d.24xlarge", 2)]
    made = client("sagemaker").create_cluster(ClusterName=name, InstanceGroups=[
        {"InstanceGroupName": g, "InstanceType": t, "InstanceCount": n, "ThreadsPerCore": 1,
         "ExecutionRole": "arn:aws:iam::123456789012:role/exec",
         "LifeCycleConfig": {"SourceS3Uri": f"s3://sagemaker-demo/lifecycle/{g}/", "OnCreate": "bootstrap.sh"}}
        for g, t, n in groups],
        VpcConfig={"SecurityGroupIds": ["sg-0123456789abcdef0"], "Subnets": ["subnet-0123456789abcdef0"]})
    deploy("demo-cluster", {"HyperPodClusterArn": made["ClusterArn"]})
    return made["ClusterArn"]


def test_hyperpod_compute_groups_are_groups_and_the_controller_a_fact() -> None:
    with mock_aws():
        hyperpod_cluster()
        status = st.CLUSTERS["hyperpod"](client, HP, stackstate.stack_state(client("cloudformation"),
                                                                           "demo-cluster"))
    assert (status.state, status.ok) == ("InService", True)
    [train] = status.groups
    assert (train.name, train.expected, train.running, train.failing) == ("train", "2", 2, 0) and train.healthy
    assert status.facts["controller"].startswith("1/1 ml.m5.12xlarge: 1 Running")


def test_hyperpod_without_its_cluster_is_a_problem_not_a_traceback() -> None:
    with mock_aws():
        deploy("demo-cluster", {"HyperPodClusterArn": "arn:aws:sagemaker:us-east-1:123456789012:cluster/gone"})
        status = st.CLUSTERS["hyperpod"](client, HP, stackstate.stack_state(client("cloudformation"),
                                                                           "demo-cluster"))
    assert status.problem.startswith("cannot read HyperPod cluster") and not status.healthy


# --- PCS ------------------------------------------------------------------------------------------

def pcs_answers(stubber: Stubber, group_status: str = "ACTIVE") -> None:
    base = {"createdAt": WHEN, "modifiedAt": WHEN}
    stubber.add_response("get_cluster", {"cluster": {
        **base, "name": "demo-s-0123", "id": "pcs_abc", "arn": "arn:aws:pcs:us-east-1:1:cluster/pcs_abc",
        "status": "ACTIVE", "scheduler": {"type": "SLURM", "version": "25.05"}, "size": "SMALL",
        "networking": {}}}, {"clusterIdentifier": "pcs_abc"})
    groups = [("train", "pcs_train", 0, 2, "p5.48xlarge"), ("login", "pcs_login", 1, 1, "m6i.xlarge")]
    stubber.add_response("list_compute_node_groups", {"computeNodeGroups": [
        {**base, "name": n, "id": i, "arn": f"arn:aws:pcs:us-east-1:1:computenodegroup/{i}", "clusterId": "pcs_abc",
         "status": "ACTIVE"} for n, i, *_ in groups]}, {"clusterIdentifier": "pcs_abc"})
    stubber.add_response("list_queues", {"queues": [
        {**base, "name": "train", "id": "q1", "arn": "arn:aws:pcs:us-east-1:1:queue/q1", "clusterId": "pcs_abc",
         "status": "ACTIVE"}]}, {"clusterIdentifier": "pcs_abc"})
    for name, gid, low, high, kind in groups:
        stubber.add_response("get_compute_node_group", {"computeNodeGroup": {
            **base, "name": name, "id": gid, "arn": f"arn:aws:pcs:us-east-1:1:computenodegroup/{gid}",
            "clusterId": "pcs_abc", "status": group_status if name == "train" else "ACTIVE", "subnetIds": ["s"],
            "customLaunchTemplate": {"id": "lt-1", "version": "1"}, "iamInstanceProfileArn": "arn:p",
            "scalingConfiguration": {"minInstanceCount": low, "maxInstanceCount": high},
            "instanceConfigs": [{"instanceType": kind}],
            **({"errorInfo": [{"code": "InsufficientInstanceCapacity", "message": "none left"}]}
               if group_status != "ACTIVE" and name == "train" else {})}},
            {"clusterIdentifier": "pcs_abc", "computeNodeGroupIdentifier": gid})


def pcs_status(group_status: str = "ACTIVE"):
    pcs = boto3.client("pcs", region_name=REGION)
    with mock_aws(), Stubber(pcs) as stubber:
        deploy("demo-cluster", {"PcsClusterId": "pcs_abc", "PcsLoginNodeGroupId": "pcs_login"})
        launch({"aws:pcs:compute-node-group-id": "pcs_train"}, count=2)
        launch({"aws:pcs:compute-node-group-id": "pcs_login"}, instance_type="m6i.xlarge")
        pcs_answers(stubber, group_status)
        status = st.CLUSTERS["pcs"](lambda s: pcs if s == "pcs" else client(s), PCS,
                                    stackstate.stack_state(client("cloudformation"), "demo-cluster"))
        stubber.assert_no_pending_responses()
    return status


def test_pcs_reads_cluster_queues_and_node_groups_with_their_instances() -> None:
    status = pcs_status()
    assert (status.name, status.state, status.ok) == ("demo-s-0123", "ACTIVE", True)
    [train] = status.groups
    assert (train.instance_type, train.expected, train.running, train.detail) == ("p5.48xlarge", "0-2", 2, "ACTIVE")
    assert status.facts["queues"] == "train ACTIVE" and status.facts["login nodes"].startswith("1/1 running")
    assert status.healthy


def test_a_failed_pcs_node_group_is_not_up_and_says_why() -> None:
    status = pcs_status("UPDATE_FAILED")
    assert not status.ok and status.groups[0].detail == "UPDATE_FAILED; InsufficientInstanceCapacity: none left"


# --- self-managed ---------------------------------------------------------------------------------

def test_self_managed_nodes_are_counted_by_the_templates_tags() -> None:
    two = plan_of(BASE + "  - name: eval\n    instance_type: p5.48xlarge\n    count: 1\n")
    with mock_aws():
        deploy("demo-cluster")
        launch({"fmcluster:project": "demo", "fmcluster:group": "train"}, count=2)
        launch({"fmcluster:project": "other", "fmcluster:group": "eval"})
        status = st.CLUSTERS["none"](client, two, stackstate.stack_state(client("cloudformation"), "demo-cluster"))
    by_name = {g.name: g for g in status.groups}
    assert (by_name["train"].running, by_name["train"].expected) == (2, "0-2")
    assert by_name["eval"].running == 0 and status.healthy  # nothing launches them: none is expected


@pytest.mark.synth
def test_project_stacks_match_every_synthesized_project(synthesized) -> None:
    """What ``status`` lists and ``destroy`` deletes is what the app builds, for every project and example."""
    from support import PROJECTS

    from fmcluster.contracts import STACKS
    from fmcluster.plan import make_plan

    for name, project in PROJECTS.items():
        built = [f"{name}-{kind}" for kind in STACKS if f"{name}-{kind}" in synthesized.templates]
        assert stackstate.project_stacks(make_plan(project)) == built, name
