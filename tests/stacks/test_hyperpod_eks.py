"""HyperPod on EKS projects: what the synthesized NAME-cluster holds (one EKS cluster with API authentication, the
pinned version and private endpoint, the add-ons at their pins, the HyperPod cluster orchestrated by it), and the
order CloudFormation creates it in, read from the template (control plane -> access entries -> DaemonSet add-ons ->
chart -> HyperPod cluster -> the add-ons that need nodes -> quotas; tests/kubernetes/test_readiness.py replays it).
The suite's one synthesis, shared by every assertion."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest
from support import ROOT, Synthesized
from support.readiness import ancestors as _after

from fmcluster.config.hyperpod_eks import DEFAULT_KUBERNETES_VERSION
from fmcluster.generate.hyperpod_eks import ADDONS, BASE_ADDONS, NODE_ADDONS, TASK_GOVERNANCE, VPC_CNI_MINIMUM

TEAMS = "p5-hyperpod-eks-teams"
PLAN = "p5en-hyperpod-eks"


@pytest.fixture(scope="module")
def templates(synthesized: Synthesized) -> dict[str, dict]:
    return {name: synthesized.template(f"{name}-cluster") for name in (TEAMS, PLAN)}


def _of_type(template: dict, kind: str) -> dict[str, dict]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


def _one(template: dict, kind: str) -> tuple[str, dict]:
    [(logical_id, resource)] = _of_type(template, kind).items()
    return logical_id, resource


def test_one_eks_cluster_with_api_auth_the_pinned_version_private_endpoint_and_every_log(templates) -> None:
    template = templates[TEAMS]
    _, cluster = _one(template, "AWS::EKS::Cluster")
    props = cluster["Properties"]
    assert props["Version"] == DEFAULT_KUBERNETES_VERSION
    assert props["UpgradePolicy"] == {"SupportType": "STANDARD"}  # no extended-support fee unless chosen
    assert props["AccessConfig"] == {"AuthenticationMode": "API", "BootstrapClusterCreatorAdminPermissions": False}
    vpc = props["ResourcesVpcConfig"]
    assert (vpc["EndpointPrivateAccess"], vpc["EndpointPublicAccess"]) == (True, False)
    assert "PublicAccessCidrs" not in vpc
    assert {t["Type"] for t in props["Logging"]["ClusterLogging"]["EnabledTypes"]} == {
        "api", "audit", "authenticator", "controllerManager", "scheduler"}
    [group] = vpc["SecurityGroupIds"]
    assert template["Resources"][group["Fn::GetAtt"][0]]["Type"] == "AWS::EC2::SecurityGroup"
    subnets = [template["Resources"][s["Ref"]]["Properties"] for s in vpc["SubnetIds"]]
    assert [ipaddress.ip_network(s["CidrBlock"]).prefixlen for s in subnets] == [28, 28]
    # two zones by zone ID (the nodes' and the Region's lowest-numbered other one EKS accepts), never Fn::GetAZs
    assert [s["AvailabilityZoneId"] for s in subnets] == ["use1-az6", "use1-az1"]
    assert "AvailabilityZone" not in subnets[0] and "Fn::GetAZs" not in json.dumps(template)


def test_access_entries_for_each_admin_and_the_kubectl_handler(templates) -> None:
    template = templates[PLAN]
    entries = _of_type(template, "AWS::EKS::AccessEntry").values()
    principals = [e["Properties"]["PrincipalArn"] for e in entries]
    assert "arn:aws:iam::111122223333:role/ml-platform-admin" in principals and len(principals) == 2
    handler = next(p for p in principals if isinstance(p, dict))
    function = next(r for r in _of_type(template, "AWS::Lambda::Function").values()
                    if r["Properties"].get("Description") == "onEvent handler for EKS kubectl resource provider")
    assert function["Properties"]["Role"] == handler  # the handler's own role is the one given cluster admin
    for entry in entries:
        [policy] = entry["Properties"]["AccessPolicies"]
        assert policy["PolicyArn"]["Fn::Join"][1][-1].endswith("AmazonEKSClusterAdminPolicy")


def test_addons_at_their_pins_and_vpc_cni_new_enough(templates) -> None:
    found = {r["Properties"]["AddonName"]: r["Properties"]["AddonVersion"]
             for r in _of_type(templates[PLAN], "AWS::EKS::Addon").values()}
    assert set(found) == set(BASE_ADDONS)
    assert all(found[n] in ADDONS[n].values() for n in found)
    cni = tuple(int(x) for x in found["vpc-cni"].lstrip("v").split("-")[0].split("."))
    assert cni >= VPC_CNI_MINIMUM
    teams = {r["Properties"]["AddonName"] for r in _of_type(templates[TEAMS], "AWS::EKS::Addon").values()}
    assert {TASK_GOVERNANCE, "amazon-sagemaker-hyperpod-training-operator", "cert-manager"} <= teams


def test_hyperpod_cluster_is_orchestrated_by_the_eks_cluster(templates) -> None:
    template = templates[PLAN]
    eks_id, _ = _one(template, "AWS::EKS::Cluster")
    _, cluster = _one(template, "AWS::SageMaker::Cluster")
    props = cluster["Properties"]
    assert props["Orchestrator"] == {"Eks": {"ClusterArn": {"Fn::GetAtt": [eks_id, "Arn"]}}}
    groups = {g["InstanceGroupName"]: g for g in props["InstanceGroups"]}
    assert list(groups) == ["system", "train"]
    assert "KubernetesConfig" not in groups["system"] and "TrainingPlanArn" not in groups["system"]
    train = groups["train"]
    assert train["KubernetesConfig"] == {"Labels": {"fmcluster.io/pool": "train"},
                                         "Taints": [{"Key": "nvidia.com/gpu", "Value": "true", "Effect": "NoSchedule"}]}
    assert train["TrainingPlanArn"].endswith("training-plan/p5en-eks")
    assert "OnCreate" in train["LifeCycleConfig"] and "OnInitComplete" not in train["LifeCycleConfig"]
    assert "SlurmConfig" not in train


def test_creation_order_read_from_the_template(templates) -> None:
    template = templates[TEAMS]
    after = _after(template)
    eks_id, _ = _one(template, "AWS::EKS::Cluster")
    entries = set(_of_type(template, "AWS::EKS::AccessEntry"))
    addons = {k: r["Properties"]["AddonName"] for k, r in _of_type(template, "AWS::EKS::Addon").items()}
    early = {k for k, n in addons.items() if n not in NODE_ADDONS}
    late = {k for k, n in addons.items() if n in NODE_ADDONS}
    [governance] = [k for k, n in addons.items() if n == TASK_GOVERNANCE]
    chart, _ = _one(template, "Custom::AWSCDK-EKS-HelmChart")
    hyperpod, _ = _one(template, "AWS::SageMaker::Cluster")
    scheduler, _ = _one(template, "AWS::SageMaker::ClusterSchedulerConfig")
    quotas = set(_of_type(template, "AWS::SageMaker::ComputeQuota"))
    assert len(quotas) == 2 and {addons[k] for k in early} == {"vpc-cni", "kube-proxy", "eks-pod-identity-agent"}
    assert all(eks_id in after[e] for e in entries)
    assert all(entries <= after[a] for a in addons)
    assert early | entries <= after[chart]
    assert {chart, *early} <= after[hyperpod]
    assert all(hyperpod in after[a] for a in late)
    assert governance in after[scheduler]
    assert all({scheduler, governance} <= after[q] for q in quotas)


def test_the_order_reader_sees_a_missing_dependency(templates) -> None:
    """The reader is not vacuous: with the chart's DependsOn dropped, the HyperPod cluster still waits for it (its
    own DependsOn), but the chart no longer waits for the add-ons."""
    template = json.loads(json.dumps(templates[TEAMS]))
    chart, resource = _one(template, "Custom::AWSCDK-EKS-HelmChart")
    addon = next(iter(_of_type(template, "AWS::EKS::Addon")))
    assert addon in _after(template)[chart]
    resource["DependsOn"] = [d for d in resource["DependsOn"] if d not in _of_type(template, "AWS::EKS::Addon")]
    assert addon not in _after(template)[chart]


def test_chart_values_carry_the_region_the_taints_and_the_instance_types(templates) -> None:
    _, chart = _one(templates[PLAN], "Custom::AWSCDK-EKS-HelmChart")
    text = json.dumps(chart["Properties"]["Values"])
    assert "ml.p5en.48xlarge" in text and "nvidia.com/gpu" in text and "AWS::Region" in text
    assert chart["Metadata"]["fmcluster:chart"] == "stub"  # no cache here: preflight refuses it
    assert (chart["Properties"]["Release"], chart["Properties"]["Namespace"]) == ("hyperpod-dependencies",
                                                                                  "kube-system")


def test_quotas_name_the_hyperpod_cluster_and_each_team(templates) -> None:
    template = templates[TEAMS]
    hyperpod, _ = _one(template, "AWS::SageMaker::Cluster")
    quotas = {r["Properties"]["ComputeQuotaTarget"]["TeamName"]: r["Properties"]
              for r in _of_type(template, "AWS::SageMaker::ComputeQuota").values()}
    assert set(quotas) == {"research", "inference"}
    assert all(q["ClusterArn"] == {"Fn::GetAtt": [hyperpod, "ClusterArn"]} for q in quotas.values())
    assert quotas["research"]["ComputeQuotaConfig"]["ComputeQuotaResources"] == [
        {"InstanceType": "ml.p5.48xlarge", "Count": 10}]


def test_fsx_is_a_static_volume_in_default_and_each_team_namespace_after_the_csi_driver_and_quotas(templates):
    template = templates[TEAMS]
    after = _after(template)
    manifest_id, manifest = _one(template, "Custom::AWSCDK-EKS-KubernetesResource")
    text = json.dumps(manifest["Properties"]["Manifest"])
    for namespace in ("default", "hyperpod-ns-research", "hyperpod-ns-inference"):
        assert f'\\"namespace\\":\\"{namespace}\\"' in text, namespace
    assert "FileSystemId" in text and '\\"storageClassName\\":\\"\\"' in text
    csi = next(k for k, r in _of_type(template, "AWS::EKS::Addon").items()
               if r["Properties"]["AddonName"] == "aws-fsx-csi-driver")
    assert {csi, *_of_type(template, "AWS::SageMaker::ComputeQuota")} <= after[manifest_id]


def _policies_of_role(template: dict, role: str) -> set[str]:
    return {k for k, r in _of_type(template, "AWS::IAM::Policy").items()
            if {"Ref": role} in r["Properties"].get("Roles", [])}


@pytest.mark.parametrize("example", [TEAMS, PLAN])
def test_every_function_depends_on_its_roles_policies_so_teardown_keeps_them(templates, example) -> None:
    """As stock CDK: a function depends on its role's policies (the provider framework's holds lambda:InvokeFunction
    on the kubectl handler). Without it CloudFormation may delete the policy first on teardown and the chart's
    delete can never reach the handler (issue 41)."""
    template = templates[example]
    functions = _of_type(template, "AWS::Lambda::Function")
    assert len(functions) >= 3
    for logical_id, function in functions.items():
        role = function["Properties"]["Role"]["Fn::GetAtt"][0]
        policies = _policies_of_role(template, role)
        depends = function.get("DependsOn", [])
        assert policies and policies <= set(depends), logical_id
        assert role not in depends  # the GetAtt orders them already (cfn-lint W3005)


def test_a_public_endpoint_is_open_only_to_the_projects_cidrs(tmp_path: Path) -> None:
    from fmcluster.stacks.app import synthesize  # starts jsii: only when this test runs

    text = (ROOT / "examples" / f"{PLAN}.yaml").read_text().replace(
        "    admins:", "    public_endpoint: true\n    public_access_cidrs: [203.0.113.0/24]\n    admins:")
    (tmp_path / "public.yaml").write_text(text.replace(f"name: {PLAN}", "name: eks-public"))
    template = synthesize(tmp_path / "public.yaml", tmp_path / "out")["eks-public-cluster"]
    _, cluster = _one(template, "AWS::EKS::Cluster")
    vpc = cluster["Properties"]["ResourcesVpcConfig"]
    assert (vpc["EndpointPrivateAccess"], vpc["EndpointPublicAccess"]) == (True, True)
    assert vpc["PublicAccessCidrs"] == ["203.0.113.0/24"]


def test_the_training_operators_identity_reads_its_own_hyperpod_cluster_only(templates) -> None:
    """Created after the HyperPod cluster, its role names the cluster's ARN instead of every cluster's."""
    template = templates[TEAMS]
    hyperpod, _ = _one(template, "AWS::SageMaker::Cluster")
    [policy] = [r for k, r in _of_type(template, "AWS::IAM::Policy").items() if "TrainingOperatorRole" in k]
    [statement] = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Resource"] == {"Fn::GetAtt": [hyperpod, "ClusterArn"]}
