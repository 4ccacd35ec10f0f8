"""Slurm accounting end to end in the app: ``NAME-accounting`` between the network and the cluster, its exports read
by the cluster stack, and each orchestrator pointed at the database (the two accounting examples, synthesized with
every other project)."""

from __future__ import annotations

import json

from support import Synthesized

PC, HP = "p5-slurm-accounting", "p5en-slurm-accounting"


def _resources(template: dict, kind: str) -> list[dict]:
    return [r for r in template["Resources"].values() if r["Type"] == kind]


def _import(project: str, key: str) -> dict:
    return {"Fn::ImportValue": f"{project}-{key}"}


def test_the_database_sits_in_the_networks_two_database_subnets(synthesized: Synthesized) -> None:
    for project in (PC, HP):
        [group] = _resources(synthesized.template(f"{project}-accounting"), "AWS::RDS::DBSubnetGroup")
        assert group["Properties"]["SubnetIds"] == [_import(project, "DatabaseSubnet1Id"),
                                                    _import(project, "DatabaseSubnet2Id")]
        outputs = synthesized.template(f"{project}-network")["Outputs"]
        assert {outputs[k]["Export"]["Name"] for k in ("DatabaseSubnet1Id", "DatabaseSubnet2Id")} == {
            f"{project}-DatabaseSubnet1Id", f"{project}-DatabaseSubnet2Id"}


def test_only_projects_with_a_database_get_an_accounting_stack(synthesized: Synthesized) -> None:
    accounting = sorted(name for name in synthesized.templates if name.endswith("-accounting"))
    assert accounting == [f"{PC}-accounting", f"{HP}-accounting"]
    for name, template in synthesized.templates.items():
        if name.endswith("-network") and not name.startswith((PC + "-", HP + "-")):
            assert not [k for k in template["Resources"] if k.startswith("Database")], name


def test_the_accounting_stack_is_protected_and_deployed_between_network_and_cluster(synthesized: Synthesized) -> None:
    manifest = json.loads((synthesized.outdir / "manifest.json").read_text())["artifacts"]
    stack = manifest[f"{PC}-accounting"]
    assert stack["properties"].get("terminationProtection") is True
    assert f"{PC}-network" in stack["dependencies"]
    assert f"{PC}-accounting" in manifest[f"{PC}-cluster"]["dependencies"]


def test_parallelcluster_reads_the_database_through_its_exports(synthesized: Synthesized) -> None:
    template = synthesized.template(f"{PC}-cluster")
    [cluster] = _resources(template, "Custom::PclusterCluster")
    configuration = cluster["Properties"]["ClusterConfiguration"]
    database = configuration["Scheduling"]["SlurmSettings"]["Database"]
    assert database["PasswordSecretArn"] == _import(PC, "AccountingDatabaseSecretArn")
    assert database["Uri"] == {"Fn::Join": ["", [_import(PC, "AccountingDatabaseEndpoint"), ":3306"]]}
    assert database["UserName"] == "slurm_admin"
    # slurmdbd's host joins the database's client group; the compute nodes do not
    assert _import(PC, "AccountingClientSecurityGroupId") in configuration["HeadNode"]["Networking"]["SecurityGroups"]
    assert "AccountingClientSecurityGroupId" not in json.dumps(configuration["Scheduling"]["SlurmQueues"])
    # the provider validates the secret with DescribeSecret
    statements = [s for p in _resources(template, "AWS::IAM::ManagedPolicy")
                  for s in p["Properties"]["PolicyDocument"]["Statement"] if s.get("Sid") == "DescribeAccountingSecret"]
    assert [(s["Action"], s["Resource"]) for s in statements] == [
        ("secretsmanager:DescribeSecret", _import(PC, "AccountingDatabaseSecretArn"))]


def test_parallelcluster_without_accounting_has_no_database(synthesized: Synthesized) -> None:
    [cluster] = _resources(synthesized.template("p5-parallelcluster-cluster"), "Custom::PclusterCluster")
    assert "Database" not in cluster["Properties"]["ClusterConfiguration"]["Scheduling"]["SlurmSettings"]


def test_hyperpod_gets_the_database_and_continuous_provisioning(synthesized: Synthesized) -> None:
    template = synthesized.template(f"{HP}-cluster")
    [cluster] = _resources(template, "AWS::SageMaker::Cluster")
    props = cluster["Properties"]
    assert props["NodeProvisioningMode"] == "Continuous"
    assert props["Orchestrator"]["Slurm"]["AccountingDatabase"] == {
        "Endpoint": _import(HP, "AccountingDatabaseEndpoint"), "Port": 3306,
        "SecretArn": _import(HP, "AccountingDatabaseSecretArn")}
    # the controller cannot join a group alone (VpcConfig is cluster-wide): the database admits the node group
    ingress = _resources(synthesized.template(f"{HP}-accounting"), "AWS::EC2::SecurityGroupIngress")
    assert _import(HP, "NodeSecurityGroupId") in [r["Properties"]["SourceSecurityGroupId"] for r in ingress]
    statements = [s for p in _resources(template, "AWS::IAM::Policy")
                  for s in p["Properties"]["PolicyDocument"]["Statement"] if s.get("Sid") == "ReadAccountingSecret"]
    assert [s["Resource"] for s in statements] == [_import(HP, "AccountingDatabaseSecretArn")]
    # ... and a HyperPod project without accounting keeps HyperPod's defaults
    [plain] = _resources(synthesized.template("p5en-hyperpod-cluster"), "AWS::SageMaker::Cluster")
    assert "NodeProvisioningMode" not in plain["Properties"]
    assert "AccountingDatabase" not in plain["Properties"]["Orchestrator"]["Slurm"]


def test_parallelcluster_admits_only_its_client_group(synthesized: Synthesized) -> None:
    ingress = _resources(synthesized.template(f"{PC}-accounting"), "AWS::EC2::SecurityGroupIngress")
    assert len(ingress) == 1 and "Fn::GetAtt" in ingress[0]["Properties"]["SourceSecurityGroupId"]
