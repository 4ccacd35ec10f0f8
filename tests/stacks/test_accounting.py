"""The Slurm accounting database construct, synthesized alone in a bare stack: encrypted, retained, reachable from
its client group only, its password generated into Secrets Manager; clean under cfn-lint and cdk-nag."""

from __future__ import annotations

import json

import pytest
from cfnlint.api import ManualArgs, lint
from support import assert_nag_clean, synth_with_nag

from fmcluster import orchestrators
from fmcluster.config.accounting import AccountingDatabase

SUBNETS = ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from aws_cdk import App, Fn, Stack

    from fmcluster.stacks.accounting import SlurmAccountingDatabase

    outdir = tmp_path_factory.mktemp("cdk.out")
    app = App(outdir=str(outdir))
    out: dict = {}
    hyperpod_nodes = Fn.import_value("hp-NodeSecurityGroupId")
    for name, fmt, clients in (("pc", "password", ()), ("hp", "credentials", (hyperpod_nodes,))):
        stack = Stack(app, f"{name}-accounting")
        out[name] = SlurmAccountingDatabase(
            stack, "Accounting", settings=AccountingDatabase(min_capacity_acu=0.5, max_capacity_acu=4),
            vpc_id=Fn.import_value(f"{name}-VpcId"), subnet_ids=SUBNETS, clients=clients, secret_format=fmt,
            # what the accounting stack passes: the orchestrator's trait
            require_tls=orchestrators.get({"pc": "parallelcluster", "hp": "hyperpod"}[name]).accounting_tls)
    out["error"], out["report"] = synth_with_nag(app, outdir)
    for name in ("pc", "hp"):
        out[f"{name}-template"] = json.loads((outdir / f"{name}-accounting.template.json").read_text())
    return out


def _of_type(template: dict, kind: str) -> dict:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


def _one(template: dict, kind: str) -> tuple[str, dict]:
    (found,) = _of_type(template, kind).items()
    return found


def test_database_is_encrypted_private_protected_and_retained(synth):
    template = synth["pc-template"]
    _, cluster = _one(template, "AWS::RDS::DBCluster")
    props = cluster["Properties"]
    assert props["StorageEncrypted"] is True and props["DeletionProtection"] is True
    assert cluster["DeletionPolicy"] == cluster["UpdateReplacePolicy"] == "Retain"
    assert props["ServerlessV2ScalingConfiguration"] == {"MinCapacity": 0.5, "MaxCapacity": 4}
    assert props["Engine"] == "aurora-mysql" and props["Port"] == 3306
    assert "DBClusterIdentifier" not in props  # create-only: a custom name would wedge a replacement
    _, writer = _one(template, "AWS::RDS::DBInstance")
    assert writer["Properties"]["PubliclyAccessible"] is False
    assert writer["Properties"]["DBInstanceClass"] == "db.serverless"
    assert writer["DeletionPolicy"] == "Retain"
    _, params = _one(template, "AWS::RDS::DBClusterParameterGroup")
    assert params["Properties"]["Parameters"]["require_secure_transport"] == "ON"


def test_every_log_the_database_exports_is_written(synth):
    """Aurora writes a slow query log only with slow_query_log 1 and log_output FILE in the cluster parameter group
    (Aurora User Guide, "Configuring your database to monitor slow SQL queries with Database Insights"): exporting
    ``slowquery`` without them exports nothing."""
    template = synth["pc-template"]
    _, cluster = _one(template, "AWS::RDS::DBCluster")
    _, params = _one(template, "AWS::RDS::DBClusterParameterGroup")
    exported, parameters = cluster["Properties"]["EnableCloudwatchLogsExports"], params["Properties"]["Parameters"]
    assert set(exported) <= {"error", "slowquery"}  # error is written by default; general and audit need more
    if "slowquery" in exported:
        assert parameters["slow_query_log"] == "1" and parameters["log_output"] == "FILE"
        assert float(parameters["long_query_time"]) > 0


def test_subnet_group_spans_the_given_subnets(synth):
    _, group = _one(synth["pc-template"], "AWS::RDS::DBSubnetGroup")
    assert group["Properties"]["SubnetIds"] == SUBNETS


def test_password_is_generated_and_referenced_never_written(synth):
    for name, suffix in (("pc", "}}"), ("hp", ":SecretString:password}}")):
        template = synth[f"{name}-template"]
        secret_id, secret = _one(template, "AWS::SecretsManager::Secret")
        assert secret["DeletionPolicy"] == "Retain"
        generate = secret["Properties"]["GenerateSecretString"]
        assert generate["ExcludePunctuation"] is True and generate["PasswordLength"] >= 16
        _, cluster = _one(template, "AWS::RDS::DBCluster")
        password = cluster["Properties"]["MasterUserPassword"]
        assert password == {"Fn::Sub": ["{{resolve:secretsmanager:${Secret}" + suffix, {"Secret": {"Ref": secret_id}}]}
    # ParallelCluster: the secret is the password itself; HyperPod: user name and password as JSON
    assert "SecretStringTemplate" not in _one(synth["pc-template"], "AWS::SecretsManager::Secret")[1]["Properties"][
        "GenerateSecretString"]
    hp = _one(synth["hp-template"], "AWS::SecretsManager::Secret")[1]["Properties"]["GenerateSecretString"]
    assert json.loads(hp["SecretStringTemplate"]) == {"username": "slurm_admin"}
    assert hp["GenerateStringKey"] == "password"


def test_only_the_clients_reach_the_database(synth):
    template = synth["hp-template"]
    groups = _of_type(template, "AWS::EC2::SecurityGroup")
    db_id = next(k for k, g in groups.items() if "database:" in g["Properties"]["GroupDescription"])
    client_id = next(k for k in groups if k != db_id)
    # the database opens nothing
    assert groups[db_id]["Properties"]["SecurityGroupEgress"][0]["CidrIp"] == "255.255.255.255/32"
    ingress = list(_of_type(template, "AWS::EC2::SecurityGroupIngress").values())
    sources = [r["Properties"]["SourceSecurityGroupId"] for r in ingress]
    assert sources == [{"Fn::GetAtt": [client_id, "GroupId"]}, {"Fn::ImportValue": "hp-NodeSecurityGroupId"}]
    for rule in ingress:
        p = rule["Properties"]
        assert (p["IpProtocol"], p["FromPort"], p["ToPort"]) == ("tcp", 3306, 3306)
        assert "CidrIp" not in p
        assert p["GroupId"] == {"Fn::GetAtt": [db_id, "GroupId"]}
    assert len(_of_type(synth["pc-template"], "AWS::EC2::SecurityGroupIngress")) == 1


def test_contract_points_at_the_cluster_and_the_secret(synth):
    from aws_cdk import Stack

    construct = synth["pc"]
    resolve = Stack.of(construct).resolve
    contract = construct.contract
    assert resolve(contract.endpoint) == {"Fn::GetAtt": [Stack.of(construct).get_logical_id(construct.cluster),
                                                         "Endpoint.Address"]}
    assert resolve(contract.secret_arn) == {"Ref": Stack.of(construct).get_logical_id(construct.secret)}
    assert contract.port == 3306 and contract.user_name == "slurm_admin"


def test_one_availability_zone_is_refused():
    from aws_cdk import App, Stack

    from fmcluster.stacks.accounting import SlurmAccountingDatabase

    for subnets in ([SUBNETS[0]], [SUBNETS[0], SUBNETS[0]]):
        with pytest.raises(ValueError, match="two Availability Zones"):
            SlurmAccountingDatabase(Stack(App(), "s"), "A", settings=AccountingDatabase(),
                                    vpc_id="vpc-0123456789abcdef0", subnet_ids=subnets)


def test_cfn_lint_clean(synth):
    findings = []
    for name in ("pc", "hp"):
        matches = lint(json.dumps(synth[f"{name}-template"]), config=ManualArgs(regions=["us-east-1"]))
        findings += [f"{name}: {m.rule.id} {m.message[:200]}" for m in matches]
    assert not findings, "\n".join(findings)


def test_cdk_nag_clean_with_reasoned_acknowledgements(synth):
    assert_nag_clean(synth["report"], synth["error"])


def test_the_contract_feeds_parallelclusters_database_settings_as_tokens(synth):
    """Wired in one stack, the generated SlurmSettings.Database resolves to the cluster's endpoint and the secret."""
    from aws_cdk import Stack
    from support import load, project_dict

    from fmcluster.generate import parallelcluster, placeholders
    from fmcluster.plan import make_plan

    construct = synth["pc"]
    stack = Stack.of(construct)
    project = load(project_dict(orchestrator={"type": "parallelcluster", "accounting": {"enabled": True}})).project
    plan = make_plan(project)
    config = parallelcluster.cluster_config(plan.cluster, network=placeholders.NETWORK, storage=None,
                                            bootstrap=placeholders.bootstrap(plan.project),
                                            accounting=construct.contract)
    database = stack.resolve(config["Scheduling"]["SlurmSettings"]["Database"])
    cluster_id, secret_id = stack.get_logical_id(construct.cluster), stack.get_logical_id(construct.secret)
    assert database["Uri"] == {"Fn::Join": ["", [{"Fn::GetAtt": [cluster_id, "Endpoint.Address"]}, ":3306"]]}
    assert database["PasswordSecretArn"] == {"Ref": secret_id} and database["UserName"] == "slurm_admin"
    head = stack.resolve(config["HeadNode"]["Networking"]["SecurityGroups"])
    assert head[-1] == {"Fn::GetAtt": [stack.get_logical_id(construct.client_security_group), "GroupId"]}


def _uses(node: object) -> set[str]:
    """Logical IDs a resource's properties name (Ref, Fn::GetAtt, and Fn::Sub's own ${Ref})."""
    if isinstance(node, dict):
        found = {node["Ref"]} if isinstance(node.get("Ref"), str) else set()
        if "Fn::GetAtt" in node:
            found.add(node["Fn::GetAtt"][0])
        return found.union(*(_uses(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_uses(v) for v in node))
    return set()


@pytest.mark.parametrize("name", ["pc", "hp"])
def test_what_the_retained_database_uses_is_retained_and_nothing_else(synth, name):
    """A stack delete leaves the database: everything it uses must stay too, or RDS/EC2 refuse to delete it under the
    database and the stack ends DELETE_FAILED (DeleteDBSubnetGroup, DeleteDBClusterParameterGroup: "in use"; a
    security group on the database's network interfaces: DependencyViolation). What nothing retained uses goes."""
    resources = synth[f"{name}-template"]["Resources"]
    retained = {lid for lid, r in resources.items() if r.get("DeletionPolicy") == "Retain"}
    needed, todo = set(), [lid for lid in retained if resources[lid]["Type"].startswith("AWS::RDS::DB")]
    while todo:
        lid = todo.pop()
        if lid not in needed:
            needed.add(lid)
            todo.extend(u for u in _uses(resources[lid].get("Properties", {})) if u in resources)
    assert {resources[lid]["Type"] for lid in needed} >= {
        "AWS::RDS::DBCluster", "AWS::RDS::DBInstance", "AWS::RDS::DBSubnetGroup", "AWS::RDS::DBClusterParameterGroup",
        "AWS::EC2::SecurityGroup", "AWS::SecretsManager::Secret"}
    assert needed - retained == set(), "used by the retained database, deleted under it"
    assert retained == needed, f"retained, used by nothing retained: {sorted(retained - needed)}"
    for lid in retained:
        assert resources[lid]["UpdateReplacePolicy"] == "Retain", lid


def test_tls_is_required_where_the_orchestrator_s_slurmdbd_is_known_to_use_it(synth):
    """ParallelCluster's slurmdbd connects under require_secure_transport; whether HyperPod's does is unknown (no
    source), so its database takes plain connections too and admits the cluster's nodes only."""
    pc = _one(synth["pc-template"], "AWS::RDS::DBClusterParameterGroup")[1]["Properties"]["Parameters"]
    hp = _one(synth["hp-template"], "AWS::RDS::DBClusterParameterGroup")[1]["Properties"]["Parameters"]
    assert pc["require_secure_transport"] == "ON" and hp["require_secure_transport"] == "OFF"
    assert {k: v for k, v in hp.items() if k != "require_secure_transport"} == \
        {k: v for k, v in pc.items() if k != "require_secure_transport"}
