"""The ParallelCluster construct: provider nested stack, Custom::PclusterCluster, node policy, outputs;
clean under cfn-lint and cdk-nag."""

from __future__ import annotations

import json

import pytest
from cfnlint.api import ManualArgs, lint
from support import assert_nag_clean, load, project_dict, synth_with_nag

from fmcluster.contracts import MountContract, NetworkContract, StorageContract
from fmcluster.generate import placeholders
from fmcluster.plan import make_plan

GROUPS = [
    {"name": "ondemand", "instance_type": "p5.48xlarge", "count": 2},
    {"name": "block", "instance_type": "p5en.48xlarge", "count": 4,
     "capacity": {"type": "capacity-block", "reservation_id": "cr-0fedcba9876543210"}},
]


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One app, two stacks: a cluster created by CDK (with metrics), and a config-only one."""
    from aws_cdk import App, Aws, Fn, Stack
    from fmcluster.stacks.parallelcluster import ParallelClusterCluster

    outdir = tmp_path_factory.mktemp("cdk.out")
    app = App(outdir=str(outdir))
    out: dict = {"outdir": outdir}
    for name, settings in (("pcdemo", {}), ("pcfile", {"create_cluster": False})):
        loaded = load(project_dict(name=name, compute_groups=GROUPS,
                                   orchestrator={"type": "parallelcluster", "parallelcluster": settings}))
        project = loaded.project
        stack = Stack(app, f"{name}-cluster")
        imp = lambda key, n=name: Fn.import_value(f"{n}-{key}")  # noqa: E731 -- tokens, as in the real stacks
        network = NetworkContract(imp("VpcId"), imp("ComputeSubnetId"), imp("EfaSecurityGroupId"),
                                  imp("NodeSecurityGroupId"), imp("StorageSecurityGroupId"),
                                  imp("ComputeSubnetId"))  # a regular zone: services share the compute subnet
        storage = StorageContract(imp("BucketName"), imp("BucketArn"),
                                  MountContract(imp("FileSystemId"), imp("FileSystemDnsName"), imp("FileSystemMountName"),
                                                "/fsx", True), None)
        metrics = placeholders.metrics() if name == "pcdemo" else None
        construct = ParallelClusterCluster(
            stack, "ParallelCluster", plan=make_plan(project).cluster, network=network, storage=storage,
            bootstrap_uri=f"s3://{name}-bundles/bootstrap/on-node-configured.sh",
            # one literal ARN, one token (the storage bucket's, imported)
            bootstrap_read_arns=[f"arn:aws:s3:::{name}-bundles/bootstrap/*"] if name == "pcdemo"
            else [Fn.join("", [imp("BucketArn"), "/bootstrap/*"])], metrics=metrics,
            # as the real stack passes it: CDK's asset bucket, a token
            scripts_bucket_arn=Fn.join("", ["arn:", Aws.PARTITION, ":s3:::",
                                            Fn.sub("cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}")]))
        out[name] = {"stack": stack, "construct": construct}
    out["error"], out["report"] = synth_with_nag(app, outdir)
    for name in ("pcdemo", "pcfile"):
        out[name]["template"] = json.loads((outdir / f"{name}-cluster.template.json").read_text())
    return out


def _of_type(template: dict, kind: str) -> dict:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


def test_provider_is_the_pinned_versions_public_template(synth):
    (nested,) = _of_type(synth["pcdemo"]["template"], "AWS::CloudFormation::Stack").values()
    url = nested["Properties"]["TemplateURL"]["Fn::Sub"]
    assert url == ("https://${AWS::Region}-aws-parallelcluster.s3.${AWS::Region}.${AWS::URLSuffix}"
                   "/parallelcluster/3.16.1/templates/custom_resource/cluster.yaml")
    assert set(nested["Properties"]["Parameters"]) == {"AdditionalIamPolicies"}


def test_cluster_resource_takes_the_service_token_name_config_and_is_deleted_with_its_stack_by_default(synth):
    template = synth["pcdemo"]["template"]
    (provider_id,) = _of_type(template, "AWS::CloudFormation::Stack")
    (cluster,) = _of_type(template, "Custom::PclusterCluster").values()
    props = cluster["Properties"]
    assert props["ServiceToken"] == {"Fn::GetAtt": [provider_id, "Outputs.ServiceToken"]}
    assert props["ClusterName"] == "pcdemo-slurm" != "pcdemo-cluster"
    assert props["DeletionPolicy"] == "Delete"  # Retain needs a network that outlives the stacks
    config = props["ClusterConfiguration"]
    assert config["HeadNode"]["Networking"]["SubnetId"] == {"Fn::ImportValue": "pcdemo-ComputeSubnetId"}
    assert config["SharedStorage"][0]["FsxLustreSettings"]["FileSystemId"] == {"Fn::ImportValue": "pcdemo-FileSystemId"}
    assert config["Region"] == {"Ref": "AWS::Region"}
    queues = {q["Name"]: q for q in config["Scheduling"]["SlurmQueues"]}
    assert queues["block"]["CapacityType"] == "CAPACITY_BLOCK"
    assert queues["block"]["ComputeResources"][0]["Networking"]["PlacementGroup"] == {"Enabled": False}
    assert queues["ondemand"]["CustomActions"]["OnNodeConfigured"]["Script"] == \
        "s3://pcdemo-bundles/bootstrap/on-node-configured.sh"


def test_nodes_get_the_node_policy_by_reference(synth):
    template = synth["pcdemo"]["template"]
    policies = _of_type(template, "AWS::IAM::ManagedPolicy")
    node_id = next(k for k, r in policies.items() if r["Properties"].get("ManagedPolicyName") == "parallelcluster-pcdemo-nodes")
    (cluster,) = _of_type(template, "Custom::PclusterCluster").values()
    head = cluster["Properties"]["ClusterConfiguration"]["HeadNode"]["Iam"]["AdditionalIamPolicies"]
    assert {"Policy": {"Ref": node_id}} in head
    statements = policies[node_id]["Properties"]["PolicyDocument"]["Statement"]
    assert [s["Action"] for s in statements] == ["s3:GetObject", "aps:RemoteWrite"]


def test_provider_may_attach_only_the_node_policies_to_this_clusters_roles(synth):
    template = synth["pcdemo"]["template"]
    attach = next(r for r in _of_type(template, "AWS::IAM::ManagedPolicy").values()
                  if "ManagedPolicyName" not in r["Properties"])
    statement, read = attach["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == ["iam:AttachRolePolicy", "iam:DetachRolePolicy"]
    # ...and read the custom actions' scripts in CDK's asset bucket (its URL check got a 403 before)
    assert read["Action"] == "s3:GetObject" and read["Sid"] == "ReadCustomActionScripts"
    assert json.dumps(read["Resource"]).endswith('"/*.sh"]]}') and "cdk-hnb659fds-assets-" in json.dumps(read["Resource"])
    assert "role/parallelcluster/pcdemo-slurm/*" in json.dumps(statement["Resource"])
    assert "iam:PolicyARN" in statement["Condition"]["ArnEquals"]


def test_outputs_head_node_ip_cluster_name_and_node_policy(synth):
    outputs = synth["pcdemo"]["template"]["Outputs"]
    (cluster_id,) = _of_type(synth["pcdemo"]["template"], "Custom::PclusterCluster")
    assert outputs["HeadNodePrivateIp"]["Value"] == {"Fn::GetAtt": [cluster_id, "headNode.privateIpAddress"]}
    assert outputs["ParallelClusterName"]["Value"] == "pcdemo-slurm"
    # the way in is named where the address is (it was "reach it with SSM Session Manager", which takes no address)
    assert "`fmcluster connect PROJECT`" in outputs["HeadNodePrivateIp"]["Description"]
    assert outputs["ParallelClusterNodePolicyArn"]["Export"] == {"Name": "pcdemo-ParallelClusterNodePolicyArn"}


def test_config_only_projects_get_the_policy_but_no_cluster(synth):
    template = synth["pcfile"]["template"]
    assert not _of_type(template, "Custom::PclusterCluster")
    assert not _of_type(template, "AWS::CloudFormation::Stack")
    assert "ParallelClusterNodePolicyArn" in template["Outputs"] and "HeadNodePrivateIp" not in template["Outputs"]


def test_cfn_lint_clean(synth):
    findings = []
    for name in ("pcdemo", "pcfile"):
        matches = lint(json.dumps(synth[name]["template"]), config=ManualArgs(regions=["us-east-1"]))
        findings += [f"{name}: {m.rule.id} {m.message[:200]}" for m in matches]
    assert not findings, "\n".join(findings)


def test_cdk_nag_clean_with_reasoned_acknowledgements(synth):
    assert [r["pluginName"] for r in synth["report"].get("pluginReports", [])] == ["AwsSolutions"], synth["error"]
    assert_nag_clean(synth["report"], synth["error"])


def test_the_node_policy_description_does_not_follow_settings(synth):
    """ManagedPolicyName is custom and Description create-only: a description that changed with the metrics setting
    would ask CloudFormation to replace a custom-named policy, which it refuses (the stack would wedge)."""
    descriptions = {name: next(r for r in _of_type(synth[name]["template"], "AWS::IAM::ManagedPolicy").values()
                               if "ManagedPolicyName" in r["Properties"])["Properties"]["Description"]
                    for name in ("pcdemo", "pcfile")}  # metrics on, metrics off
    assert descriptions["pcdemo"].replace("pcdemo", "NAME") == descriptions["pcfile"].replace("pcfile", "NAME")
