"""``fmcluster preflight`` against moto (STS, EC2 zones, offerings, subnets, security groups) and botocore's Stubber
where moto has no API (capacity reservations and blocks, Service Quotas, training plans, IAM Identity Center).
Every stubbed call checks the parameters it was sent."""

from __future__ import annotations

import importlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws
from rich.console import Console
from support import BASE, ROOT
from typer.testing import CliRunner

from fmcluster import checks, config
from fmcluster.aws import account_checks as ac
from fmcluster.aws import preflight as pf
from fmcluster.cli import app

runner = CliRunner()
NOW = datetime(2026, 11, 3, 12, tzinfo=timezone.utc)
REGION = "us-east-1"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch):
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION,
                        "AWS_EC2_METADATA_DISABLED": "true"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("FMCLUSTER_PROJECTS_DIR", str(ROOT / "projects"))
    with mock_aws():
        yield


def stubbed(service: str) -> tuple[object, Stubber]:
    client = boto3.client(service, region_name=REGION)
    return client, Stubber(client)


def project_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "proj.yaml"
    path.write_text(text)
    return path


def planned(path: Path):
    loaded = config.load(str(path))
    plan, _ = checks.validate(loaded)
    return loaded.project, plan


def quotas(stub: Stubber, service: str, *entries: tuple[str, str, float]) -> None:
    stub.add_response("list_service_quotas", {"Quotas": [
        {"ServiceCode": service, "QuotaCode": code, "QuotaName": name, "Value": value} for code, name, value in entries]},
        {"ServiceCode": service})


def reservation(**over: object) -> dict:
    base = {"CapacityReservationId": "cr-0fedcba9876543210", "InstanceType": "p5en.48xlarge",
            "AvailabilityZoneId": "use1-az4", "AvailabilityZone": "us-east-1a", "State": "active",
            "ReservationType": "capacity-block", "TotalInstanceCount": 32, "AvailableInstanceCount": 32,
            "StartDate": NOW - timedelta(days=1), "EndDate": NOW + timedelta(days=6), "InstancePlatform": "Linux/UNIX"}
    base.update(over)
    return {"CapacityReservations": [base]}


def clients_with(ec2=None, **services) -> ac.Clients:
    made = {"ec2": ec2} if ec2 is not None else {}
    made.update({k.replace("_", "-"): v for k, v in services.items()})
    return ac.Clients(REGION, overrides=made)


# --- the whole command, all pass -----------------------------------------------------------------

def test_all_pass_on_the_default_project(aws, monkeypatch: pytest.MonkeyPatch) -> None:
    sq, sq_stub = stubbed("service-quotas")
    quotas(sq_stub, "ec2", ("L-417A185B", ac.EC2_P_QUOTA, 384.0))  # 2 x p5.48xlarge = 384 vCPUs, just enough
    quotas(sq_stub, "fsx", ("L-TEST0001", "Lustre Persistent_2 storage capacity (test fixture name)", 100800.0))
    sso, sso_stub = stubbed("sso-admin")
    sso_stub.add_response("list_instances", {"Instances": [{"InstanceArn": "arn:aws:sso:::instance/ssoins-1",
                                                            "Status": "ACTIVE"}]}, {})
    monkeypatch.setattr(pf, "make_clients", lambda session: ac.Clients(
        session.region, overrides={"service-quotas": sq, "sso-admin": sso}))
    with sq_stub, sso_stub:
        result = runner.invoke(app, ["preflight", "default", "-o", "json"])
        sq_stub.assert_no_pending_responses()
        sso_stub.assert_no_pending_responses()
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["region"] == REGION
    assert [(r["check"], r["status"]) for r in data["results"]] == [
        ("credentials", "pass"), ("zone", "pass"), ("offered", "pass"), ("quota", "pass"), ("quota", "pass"),
        ("identity center", "pass")]
    assert "384 vCPUs >= 384 needed" in data["results"][3]["message"]


def test_the_table_for_people_and_exit_1_on_a_fail(aws, monkeypatch: pytest.MonkeyPatch) -> None:
    sq, sq_stub = stubbed("service-quotas")
    quotas(sq_stub, "ec2", ("L-417A185B", ac.EC2_P_QUOTA, 192.0))
    quotas(sq_stub, "fsx")
    sso, sso_stub = stubbed("sso-admin")
    sso_stub.add_response("list_instances", {"Instances": []}, {})
    monkeypatch.setattr(pf, "make_clients", lambda session: ac.Clients(
        session.region, overrides={"service-quotas": sq, "sso-admin": sso}))
    # the command's console is made at import: give it the width, whatever the terminal was then
    monkeypatch.setattr(importlib.import_module("fmcluster.cli.preflight"), "out", Console(width=200, color_system=None))
    with sq_stub, sso_stub:
        result = runner.invoke(app, ["preflight", "default"])
    assert result.exit_code == 1
    out = result.stdout
    assert "the quota is 192 vCPUs, the on-demand groups need 384" in out
    assert "--quota-code L-417A185B --desired-value 384" in out  # the code the account answered, not a guess
    assert "no IAM Identity Center instance in us-east-1" in out and "authentication: SAML" in out
    assert "no single FSx for Lustre storage-capacity quota found (none)" in out
    assert "default in us-east-1: 3 pass, 1 warn, 2 fail" in out


# --- the cases, one check at a time --------------------------------------------------------------

def test_wrong_zone_names_the_zones_that_offer_the_type(aws, tmp_path: Path) -> None:
    _, plan = planned(project_file(tmp_path, "name: wrongzone\navailability_zone_id: use1-az1\ncompute_groups:\n"
                                   "  - {name: train, instance_type: p6-b200.48xlarge, count: 2}\n"))
    [result] = ac.check_offering(ac.Clients(REGION), "use1-az1", plan.groups[0])
    assert result.status == "fail" and result.message == "p6-b200.48xlarge is not offered in use1-az1"
    assert "use1-az6" in result.advice  # moto's offerings: p6-b200 is in use1-az6


def test_an_existing_subnet_in_another_zone_and_too_small(aws, tmp_path: Path) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    vpc = ec2.create_vpc(CidrBlock="10.50.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.50.1.0/28", AvailabilityZoneId="use1-az2")["Subnet"]["SubnetId"]
    _, plan = planned(project_file(tmp_path, f"name: existing\navailability_zone_id: use1-az6\nnetwork:\n  existing:\n"
                                   f"    vpc_id: {vpc}\n    compute_subnet_id: {subnet}\n"  # size unknown offline
                                   "compute_groups:\n  - {name: train, instance_type: p5.48xlarge, count: 2}\n"))
    results = ac.check_existing_subnet(ac.Clients(REGION), plan)
    messages = " | ".join(r.message for r in results)
    assert all(r.status == "fail" for r in results)
    assert f"{subnet} is in use1-az2, the project in use1-az6" in messages
    assert f"{subnet} has 11 free addresses, the plan needs {plan.network.ips_needed:,}" in messages


def test_an_existing_file_system_whose_security_group_misses_the_lustre_ports(aws, tmp_path: Path) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    vpc = ec2.create_vpc(CidrBlock="10.60.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.60.4.0/22", AvailabilityZoneId="use1-az6")["Subnet"]["SubnetId"]
    sg = ec2.create_security_group(GroupName="fsx", Description="fsx", VpcId=vpc)["GroupId"]
    ec2.authorize_security_group_ingress(GroupId=sg, IpPermissions=[
        {"IpProtocol": "tcp", "FromPort": 988, "ToPort": 988, "IpRanges": [{"CidrIp": "10.60.0.0/16"}]}])
    eni = ec2.create_network_interface(SubnetId=subnet, Groups=[sg])["NetworkInterface"]["NetworkInterfaceId"]
    fsx, fsx_stub = stubbed("fsx")
    fsx_stub.add_response("describe_file_systems", {"FileSystems": [{"FileSystemId": "fs-0123456789abcdef0",
                          "VpcId": vpc, "NetworkInterfaceIds": [eni]}]}, {"FileSystemIds": ["fs-0123456789abcdef0"]})
    _, plan = planned(project_file(tmp_path, f"""name: withfs
availability_zone_id: use1-az6
network:
  existing: {{vpc_id: {vpc}, compute_subnet_id: {subnet}, compute_subnet_cidr: 10.60.4.0/22}}
compute_groups:
  - {{name: train, instance_type: p5.48xlarge, count: 2}}
storage:
  fsx:
    existing: {{file_system_id: fs-0123456789abcdef0, dns_name: fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com,
               mount_name: abcdefgh}}
"""))
    with fsx_stub:
        [result] = ac.check_existing_fsx(ac.Clients(REGION, overrides={"fsx": fsx}), plan)
    assert result.status == "fail" and "TCP 1018, 1019, 1020, 1021, 1022, 1023" in result.message
    assert sg in result.message and "from 10.60.4.0/22" in result.advice
    ec2.authorize_security_group_ingress(GroupId=sg, IpPermissions=[
        {"IpProtocol": "tcp", "FromPort": 1018, "ToPort": 1023, "IpRanges": [{"CidrIp": "10.60.0.0/16"}]}])
    fsx_stub.add_response("describe_file_systems", {"FileSystems": [{"FileSystemId": "fs-0123456789abcdef0",
                          "VpcId": vpc, "NetworkInterfaceIds": [eni]}]}, {"FileSystemIds": ["fs-0123456789abcdef0"]})
    with fsx_stub:
        [result] = ac.check_existing_fsx(ac.Clients(REGION, overrides={"fsx": fsx}), plan)
    assert result.status == "pass"


def capacity_block_plan(tmp_path: Path, zone: str, itype: str, count: int):
    return planned(project_file(tmp_path, f"name: blocks\nregion: us-east-1\navailability_zone_id: {zone}\n"
                                f"compute_groups:\n  - name: train\n    instance_type: {itype}\n    count: {count}\n"
                                "    capacity: {type: capacity-block, reservation_id: cr-0fedcba9876543210}\n"
                                "orchestrator: {type: none}\n"))


def test_a_block_that_matches_passes(tmp_path: Path) -> None:
    _, plan = capacity_block_plan(tmp_path, "use1-az4", "p5en.48xlarge", 32)
    ec2, stub = stubbed("ec2")
    stub.add_response("describe_capacity_reservations", reservation(), {"CapacityReservationIds": ["cr-0fedcba9876543210"]})
    with stub:
        [result] = ac.check_reservation(clients_with(ec2), "use1-az4", plan.groups[0], NOW)
    assert result.status == "pass" and "32 x p5en.48xlarge in use1-az4" in result.message


def test_a_local_zone_block_with_a_regional_subnet(tmp_path: Path) -> None:
    _, plan = capacity_block_plan(tmp_path, "use1-az4", "p6e-gb200.36xlarge", 18)
    ec2, stub = stubbed("ec2")
    stub.add_response("describe_capacity_reservations", reservation(
        InstanceType="p6e-gb200.36xlarge", AvailabilityZoneId="use1-dfw2-az1", AvailabilityZone="us-east-1-dfw-2a",
        TotalInstanceCount=18, CapacityBlockId="cb-0123456789abcdef0"), {"CapacityReservationIds": ["cr-0fedcba9876543210"]})
    stub.add_response("describe_capacity_blocks", {"CapacityBlocks": [
        {"CapacityBlockId": "cb-0123456789abcdef0", "UltraserverType": "u-p6e-gb200x72"}]},
        {"CapacityBlockIds": ["cb-0123456789abcdef0"]})
    with stub:
        [result] = ac.check_reservation(clients_with(ec2), "use1-az4", plan.groups[0], NOW)
        stub.assert_no_pending_responses()
    assert result.status == "fail" and result.message == "cr-0fedcba9876543210 is in use1-dfw2-az1, the project's subnet in use1-az4"
    assert "Local Zone us-east-1-dfw-2a" in result.advice and "set availability_zone_id: use1-dfw2-az1" in result.advice


def test_an_ultraserver_block_of_the_wrong_size(tmp_path: Path) -> None:
    _, plan = capacity_block_plan(tmp_path, "use1-dfw2-az1", "p6e-gb200.36xlarge", 10)
    ec2, stub = stubbed("ec2")
    stub.add_response("describe_capacity_reservations", reservation(
        InstanceType="p6e-gb200.36xlarge", AvailabilityZoneId="use1-dfw2-az1", TotalInstanceCount=18,
        CapacityBlockId="cb-0123456789abcdef0"), {"CapacityReservationIds": ["cr-0fedcba9876543210"]})
    stub.add_response("describe_capacity_blocks", {"CapacityBlocks": [
        {"CapacityBlockId": "cb-0123456789abcdef0", "UltraserverType": "u-p6e-gb200x36"}]},
        {"CapacityBlockIds": ["cb-0123456789abcdef0"]})
    with stub:
        [result] = ac.check_reservation(clients_with(ec2), "use1-dfw2-az1", plan.groups[0], NOW)
    assert result.status == "fail" and "10 nodes are not whole u-p6e-gb200x36 UltraServers (9 instances each)" == result.message


def test_a_reservation_for_the_wrong_type(tmp_path: Path) -> None:
    _, plan = capacity_block_plan(tmp_path, "use1-az4", "p5en.48xlarge", 32)
    ec2, stub = stubbed("ec2")
    stub.add_response("describe_capacity_reservations", reservation(InstanceType="p5.48xlarge"),
                      {"CapacityReservationIds": ["cr-0fedcba9876543210"]})
    with stub:
        [result] = ac.check_reservation(clients_with(ec2), "use1-az4", plan.groups[0], NOW)
    assert result.status == "fail" and result.message == "cr-0fedcba9876543210 reserves p5.48xlarge, the group runs p5en.48xlarge"
    assert result.advice.startswith("set instance_type: p5.48xlarge")


def test_an_expired_block_and_one_too_small(tmp_path: Path) -> None:
    _, plan = capacity_block_plan(tmp_path, "use1-az4", "p5en.48xlarge", 32)
    ec2, stub = stubbed("ec2")
    stub.add_response("describe_capacity_reservations", reservation(
        State="expired", TotalInstanceCount=16, StartDate=NOW - timedelta(days=8), EndDate=NOW - timedelta(days=1)),
        {"CapacityReservationIds": ["cr-0fedcba9876543210"]})
    with stub:
        results = ac.check_reservation(clients_with(ec2), "use1-az4", plan.groups[0], NOW)
    assert [r.status for r in results] == ["fail", "fail"]
    assert results[0].message.startswith("cr-0fedcba9876543210 is expired (ended 2026-11-02 12:00 UTC)")
    assert "fmcluster capacity search" in results[0].advice
    assert results[1].message == "cr-0fedcba9876543210 holds 16 instances, the group wants 32"


def test_a_reservation_that_does_not_exist(tmp_path: Path) -> None:
    _, plan = capacity_block_plan(tmp_path, "use1-az4", "p5en.48xlarge", 32)
    ec2, stub = stubbed("ec2")
    stub.add_client_error("describe_capacity_reservations", "InvalidCapacityReservationId.NotFound", "not found",
                          expected_params={"CapacityReservationIds": ["cr-0fedcba9876543210"]})
    with stub:
        [result] = ac.check_reservation(clients_with(ec2), "use1-az4", plan.groups[0], NOW)
    assert result.status == "fail" and "is not a reservation of this account in us-east-1" in result.message


def test_access_denied_on_one_api_is_a_warning(tmp_path: Path) -> None:
    project, plan = capacity_block_plan(tmp_path, "use1-az4", "p5en.48xlarge", 32)
    ec2, stub = stubbed("ec2")
    stub.add_client_error("describe_capacity_reservations", "UnauthorizedOperation",
                          "You are not authorized to perform: ec2:DescribeCapacityReservations")
    check = next(c for c in pf.checks_for(project, plan, clients_with(ec2)) if c.name == "capacity")
    with stub:
        [result] = pf.run_check(check)
    assert result.status == "warn" and "UnauthorizedOperation" in result.message
    assert "ec2:DescribeCapacityReservations" in result.message and "grant the read permission" in result.advice


def test_a_check_that_hangs_is_a_warning_after_its_timeout() -> None:
    import threading

    release = threading.Event()
    check = pf.Check("zone", "use1-az6", lambda: [release.wait(5), []][1])
    try:
        [result] = pf.run_check(check, timeout=0.2)
    finally:
        release.set()
    assert result.status == "warn" and result.message == "no answer within 0.2 s"


def test_the_training_plan_must_cover_the_group(tmp_path: Path) -> None:
    _, plan = capacity_block_plan(tmp_path, "use1-az4", "p5en.48xlarge", 32)
    sm, stub = stubbed("sagemaker")
    arn = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/tp-one"
    stub.add_response("describe_training_plan", {
        "TrainingPlanArn": arn, "TrainingPlanName": "tp-one", "Status": "Active", "EndTime": NOW + timedelta(days=3),
        "ReservedCapacitySummaries": [{"ReservedCapacityArn": "arn:aws:sagemaker:us-east-1:111122223333:reserved-capacity/r1",
                                       "InstanceType": "ml.p5en.48xlarge", "TotalInstanceCount": 16, "Status": "Active",
                                       "AvailabilityZoneId": "use1-az4"}]}, {"TrainingPlanName": "tp-one"})
    with stub:
        [result] = ac.check_training_plan(clients_with(sagemaker=sm), "use1-az4", plan.groups[0], arn, NOW)
    assert result.status == "fail" and result.message == "tp-one covers 16 x ml.p5en.48xlarge in use1-az4, the group wants 32"


def test_no_credentials_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("FMCLUSTER_PROJECTS_DIR", str(ROOT / "projects"))
    result = runner.invoke(app, ["preflight", "default"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "error: no AWS credentials found" in result.stderr and "`aws configure`" in result.stderr


def test_a_region_outside_the_zone_is_refused_as_bad_input(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The default project is in use1-az6: AWS_REGION=eu-west-1 cannot be its Region (exit 2, before any call)."""
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("FMCLUSTER_PROJECTS_DIR", str(ROOT / "projects"))
    result = runner.invoke(app, ["preflight", "default", "-o", "json"])
    assert result.exit_code == 2 and json.loads(result.stdout) == {"ok": False, "exit_code": 2, "error": (
        "Region eu-west-1 (from AWS_REGION) does not contain the project's availability_zone_id use1-az6, which is in "
        "us-east-1 (hint: unset AWS_REGION or use --region us-east-1)")}


def _ultraserver_plan_response(arn: str, available: int, spares: int, servers: int = 1) -> dict:
    return {"TrainingPlanArn": arn, "TrainingPlanName": "gb200", "Status": "Active", "EndTime": NOW + timedelta(days=3),
            "TotalInstanceCount": 18 * servers, "AvailableInstanceCount": available,
            "AvailableSpareInstanceCount": spares, "TotalUltraServerCount": servers,
            "ReservedCapacitySummaries": [{
                "ReservedCapacityArn": "arn:aws:sagemaker:us-east-1:111122223333:reserved-capacity/r1",
                "ReservedCapacityType": "UltraServer", "UltraServerType": "ml.u-p6e-gb200x72", "UltraServerCount": servers,
                "InstanceType": "ml.p6e-gb200.36xlarge", "TotalInstanceCount": 18 * servers, "Status": "Active",
                "AvailabilityZoneId": "use1-dfw2-az1"}]}


def _gb200_group(count: int, spares: int):
    from fmcluster.plan import make_plan

    text = (BASE.replace("p5.48xlarge", "p6e-gb200.36xlarge").replace("count: 2", f"count: {count}")
            + "    capacity: {type: training-plan, arn: arn:aws:sagemaker:us-east-1:111122223333:training-plan/gb200, "
            + f"spare_instances_per_ultraserver: {spares}}}\norchestrator: {{type: hyperpod}}\n")
    return make_plan(config.parse(text).project).groups[0]


def test_an_ultraserver_plan_is_read_in_usable_instances() -> None:
    """A default x72 plan: 17 available, 1 spare. 17 fits; 18 (the whole UltraServer) does not."""
    arn = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/gb200"
    for count, status in ((17, "pass"), (18, "fail")):
        sm, stub = stubbed("sagemaker")
        stub.add_response("describe_training_plan", _ultraserver_plan_response(arn, 17, 1), {"TrainingPlanName": "gb200"})
        with stub:
            [result] = ac.check_training_plan(clients_with(sagemaker=sm), "use1-dfw2-az1", _gb200_group(count, 1), arn,
                                              NOW)
        assert result.status == status, result
    assert result.message == "gb200 covers 17 x ml.p6e-gb200.36xlarge in use1-dfw2-az1, the group wants 18"


def test_spares_that_differ_from_the_plans_are_a_failure_naming_the_setting() -> None:
    arn = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/gb200"
    sm, stub = stubbed("sagemaker")
    stub.add_response("describe_training_plan", _ultraserver_plan_response(arn, 16, 2), {"TrainingPlanName": "gb200"})
    with stub:
        [result] = ac.check_training_plan(clients_with(sagemaker=sm), "use1-dfw2-az1", _gb200_group(17, 1), arn, NOW)
    assert result.status == "fail" and "keeps 2 spare instances over 1 UltraServers (2 each)" in result.message
    assert "spare_instances_per_ultraserver: 2" in result.advice


def test_hyperpod_eks_checks_its_control_plane_zones_exist_in_the_region(aws) -> None:
    """The second control-plane zone is chosen by zone ID offline (issue 41 item 4): preflight asks EC2 that it is
    a zone of the account's Region (moto's us-east-1 has use1-az1)."""
    loaded = config.load(ROOT / "examples" / "p5en-hyperpod-eks.yaml")
    plan, _ = checks.validate(loaded)
    ec2 = boto3.client("ec2", region_name=REGION)
    zones = [c for c in pf.checks_for(loaded.project, plan, clients_with(ec2)) if c.name == "zone"]
    assert [c.subject for c in zones] == ["use1-az6", "use1-az1"]
    [result] = zones[1].run()
    assert result.status == "pass"
    assert [r.status for r in ac.check_zone(clients_with(ec2), "use1-az9")] == ["fail"]
