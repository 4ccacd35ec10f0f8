"""The account checks behind ``fmcluster preflight``: each reads one thing through boto3 and returns
:class:`Result` rows (pass, warn or fail, with one line of advice). :mod:`fmcluster.aws.preflight` runs them.

Where each fact comes from: the zone (``DescribeAvailabilityZones``: a Local Zone must be opted in); each
group's instance type in its zone ID (``DescribeInstanceTypeOfferings`` by ``availability-zone-id``); each
reservation or capacity block (``DescribeCapacityReservations``, and ``DescribeCapacityBlocks`` for an
UltraServer's type); a training plan (SageMaker ``DescribeTrainingPlan``); Service Quotas (found by their
names, never by a guessed code); an existing subnet's free addresses and zone; an existing file system's
security groups (TCP 988 and 1018-1023 from the nodes); IAM Identity Center (``sso-admin ListInstances``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any, Literal

import boto3
from botocore.exceptions import ClientError

from fmcluster import catalog
from fmcluster.aws.session import CLIENT_CONFIG, AwsSession, core_session
from fmcluster.facts import LOCAL_ZONES, LUSTRE_PORTS
from fmcluster.plan import GroupPlan, Plan

Status = Literal["pass", "warn", "fail"]

CHECK_TIMEOUT_S = 30.0
"""The longest one check may take (each request gives up sooner: :data:`fmcluster.aws.session.GIVE_UP_S`)."""


EC2_P_QUOTA = "Running On-Demand P instances"
"""The Service Quotas name of the vCPU quota for on-demand P instances (every type in the catalog is a P type)."""

BAD_STATES = {"expired", "cancelled", "failed", "payment-failed", "unsupported", "unavailable", "cancelling"}
WAIT_STATES = {"pending", "payment-pending", "assessing", "delayed"}


@dataclass(frozen=True)
class Result:
    check: str
    subject: str
    status: Status
    message: str
    advice: str = ""

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def passed(check: str, subject: str, message: str) -> Result:
    return Result(check, subject, "pass", message)


class Clients:
    """boto3 clients for one Region, made on first use through the command's
    :class:`~fmcluster.aws.session.AwsSession` (its bounded waits); tests hand in their own (moto or Stubber-backed)."""

    def __init__(self, region: str, session: AwsSession | None = None, overrides: dict[str, Any] | None = None) -> None:
        self.region = region
        self.session = session
        self.made: dict[str, Any] = dict(overrides or {})

    def __call__(self, service: str) -> Any:
        if service not in self.made:
            if self.session:
                self.made[service] = self.session.client(service)
            else:
                boto = boto3.session.Session(botocore_session=core_session())
                self.made[service] = boto.client(service, region_name=self.region, config=CLIENT_CONFIG)
        return self.made[service]


def check_zone(clients: Clients, zone_id: str) -> list[Result]:
    zones = clients("ec2").describe_availability_zones(ZoneIds=[zone_id], AllAvailabilityZones=True)["AvailabilityZones"]
    if not zones:
        return [Result("zone", zone_id, "fail", f"{zone_id} is not a zone of {clients.region}",
                       "check availability_zone_id (`aws ec2 describe-availability-zones --all-availability-zones`)")]
    zone = zones[0]
    if zone.get("OptInStatus") == "not-opted-in":
        return [Result("zone", zone_id, "fail", f"{zone['ZoneName']} ({zone_id}) is a zone the account has not opted "
                       f"in to", f"aws ec2 modify-availability-zone-group --group-name {zone.get('GroupName', '')} "
                       "--opt-in-status opted-in")]
    return [passed("zone", zone_id, f"{zone['ZoneName']} ({zone.get('ZoneType', 'availability-zone')})")]


def check_offering(clients: Clients, zone_id: str, group: GroupPlan) -> list[Result]:
    ec2 = clients("ec2")
    found = ec2.describe_instance_type_offerings(
        LocationType="availability-zone-id",
        Filters=[{"Name": "location", "Values": [zone_id]}, {"Name": "instance-type", "Values": [group.instance_type]}],
    )["InstanceTypeOfferings"]
    if found:
        return [passed("offered", group.name, f"{group.instance_type} is offered in {zone_id}")]
    elsewhere = ec2.describe_instance_type_offerings(
        LocationType="availability-zone-id", Filters=[{"Name": "instance-type", "Values": [group.instance_type]}],
    )["InstanceTypeOfferings"]
    zones = sorted({o["Location"] for o in elsewhere})
    advice = (f"it is offered in {', '.join(zones)}: set availability_zone_id to one of them" if zones
              else f"no zone of {clients.region} offers it: choose another Region")
    return [Result("offered", group.name, "fail", f"{group.instance_type} is not offered in {zone_id}", advice)]


def check_reservation(clients: Clients, zone_id: str, group: GroupPlan, now: datetime | None = None) -> list[Result]:
    """The group's reservation or capacity block: there, in a usable state, of its type, zone, size and dates."""
    now = now or datetime.now(timezone.utc)
    name, rid = group.name, group.reservation_id
    ec2 = clients("ec2")
    try:
        [res] = ec2.describe_capacity_reservations(CapacityReservationIds=[rid])["CapacityReservations"]
    except ClientError as exc:
        if _code(exc).startswith("InvalidCapacityReservationId"):
            return [Result("capacity", name, "fail", f"{rid} is not a reservation of this account in {clients.region}",
                           "check reservation_id, the account and the Region")]
        raise
    out: list[Result] = []

    def fail(message: str, advice: str, status: Status = "fail") -> None:
        out.append(Result("capacity", name, status, message, advice))

    block = group.capacity == "capacity-block"
    kind = res.get("ReservationType", "default")
    if block != (kind == "capacity-block"):
        fail(f"{rid} is a {'capacity block' if kind == 'capacity-block' else 'capacity reservation'}, the group says "
             f"{group.capacity}", f"set capacity.type: {'capacity-block' if kind == 'capacity-block' else 'reservation'}")
    if res["InstanceType"] != group.instance_type:
        fail(f"{rid} reserves {res['InstanceType']}, the group runs {group.instance_type}",
             f"set instance_type: {res['InstanceType']}, or use a reservation for {group.instance_type}")
    res_zone = res.get("AvailabilityZoneId")
    if res_zone and res_zone != zone_id:
        local = LOCAL_ZONES.get(res_zone)
        advice = (f"it is in the Local Zone {local.name} ({res_zone}): set availability_zone_id: {res_zone} "
                  f"(fmcluster then puts the compute subnet there and the services in {local.parent_zone_id})"
                  if local else f"instances launch only in their reservation's zone: set availability_zone_id: {res_zone}")
        fail(f"{rid} is in {res_zone}, the project's subnet in {zone_id}", advice)
    state, end = res.get("State", ""), res.get("EndDate")
    if state in BAD_STATES or (end is not None and end <= now):
        fail(f"{rid} is {state if state in BAD_STATES else 'past its end'}"
             f"{f' (ended {end:%Y-%m-%d %H:%M} UTC)' if end is not None and end <= now else ''}",
             "buy or reserve new capacity (`fmcluster capacity search`) and put its ID here")
    elif state in WAIT_STATES:
        fail(f"{rid} is {state}", "wait until it is active or scheduled", "warn")
    total = res.get("TotalInstanceCount", 0)
    if total < group.count:
        fail(f"{rid} holds {total} instances, the group wants {group.count}", f"set count: {total}, or reserve more")
    elif not block and state == "active" and res.get("AvailableInstanceCount", total) < group.count:
        fail(f"{rid} has {res.get('AvailableInstanceCount')} of {total} instances free, the group wants {group.count}",
             "stop what runs in the reservation, or lower count", "warn")
    _check_placement(res, group, fail)
    if block and res.get("CapacityBlockId"):
        _check_ultraserver(ec2, res, group, fail)
    if not out:
        start = res.get("StartDate")
        when = f", from {start:%Y-%m-%d %H:%M} UTC" if state == "scheduled" and start is not None else ""
        until = f" until {end:%Y-%m-%d %H:%M} UTC" if end is not None else ""
        out.append(passed("capacity", name, f"{rid}: {state}{when}{until}, {total} x {res['InstanceType']} in {res_zone}"))
    return out


def _check_placement(res: dict, group: GroupPlan, fail: Callable[..., None]) -> None:
    arn = res.get("PlacementGroupArn")
    actual = arn.rsplit("/", 1)[-1] if arn else None
    wanted = group.existing_placement_group
    if group.capacity == "reservation" and actual != wanted:
        if actual is None:
            fail(f"{res['CapacityReservationId']} was made in no placement group, the project names {wanted}",
                 "remove capacity.placement_group")
        else:
            fail(f"{res['CapacityReservationId']} was made in placement group {actual}"
                 f"{f', the project names {wanted}' if wanted else ''}", f"set capacity.placement_group: {actual}")


def _check_ultraserver(ec2: Any, res: dict, group: GroupPlan, fail: Callable[..., None]) -> None:
    blocks = ec2.describe_capacity_blocks(CapacityBlockIds=[res["CapacityBlockId"]])["CapacityBlocks"]
    kind = blocks[0].get("UltraserverType") if blocks else None
    known = {u.name: u.instances for u in catalog.get(group.instance_type).ultraservers}
    if kind is None:
        if known:
            fail(f"{res['CapacityReservationId']} is not an UltraServer block: its {group.instance_type} instances "
                 "share no NVLink domain", f"buy an UltraServer block ({', '.join(known)})", "warn")
        return
    if kind not in known:
        fail(f"{res['CapacityReservationId']} is a {kind} block, which is not an UltraServer of {group.instance_type}",
             f"use a block of {', '.join(known) or 'its own type'}")
    elif group.count % known[kind]:
        fail(f"{group.count} nodes are not whole {kind} UltraServers ({known[kind]} instances each)",
             f"set count to a multiple of {known[kind]}")


def check_training_plan(clients: Clients, zone_id: str, group: GroupPlan, arn: str,
                        now: datetime | None = None) -> list[Result]:
    now = now or datetime.now(timezone.utc)
    try:
        tp = clients("sagemaker").describe_training_plan(TrainingPlanName=arn.rsplit("/", 1)[-1])
    except ClientError as exc:
        if _code(exc) == "ResourceNotFound":
            return [Result("training plan", group.name, "fail", f"no training plan {arn} in {clients.region}",
                           "check capacity.arn")]
        raise
    ml_type = f"ml.{group.instance_type}"
    status = tp.get("Status", "")
    if status in ("Expired", "Failed") or (tp.get("EndTime") and tp["EndTime"] <= now):
        return [Result("training plan", group.name, "fail", f"{tp['TrainingPlanName']} is {status.lower() or 'over'}",
                       "search and buy a new training plan")]
    covered = sum(s.get("TotalInstanceCount", 0) for s in tp.get("ReservedCapacitySummaries", [])
                  if s.get("InstanceType") == ml_type and s.get("AvailabilityZoneId", zone_id) == zone_id)
    servers = tp.get("TotalUltraServerCount") or 0
    if servers and "AvailableSpareInstanceCount" in tp:  # an UltraServer plan: spares are counted apart (FACTS.md 5)
        spares = tp["AvailableSpareInstanceCount"] / servers
        if spares != group.spare_instances_per_ultraserver:
            return [Result("training plan", group.name, "fail",
                           f"{tp['TrainingPlanName']} keeps {tp['AvailableSpareInstanceCount']} spare instances over "
                           f"{servers} UltraServers ({spares:g} each); the project says "
                           f"{group.spare_instances_per_ultraserver}",
                           f"set capacity.spare_instances_per_ultraserver: {spares:g} and count to whole UltraServers "
                           "of the rest")]
        covered = tp.get("AvailableInstanceCount", covered)  # the usable instances, spares held back
    if covered < group.count:
        return [Result("training plan", group.name, "fail", f"{tp['TrainingPlanName']} covers {covered} x {ml_type} "
                       f"in {zone_id}, the group wants {group.count}", "lower count, or extend the plan")]
    return [passed("training plan", group.name, f"{tp['TrainingPlanName']}: {status}, {covered} x {ml_type}")]


def find_quota(clients: Clients, service: str, match: Callable[[str], bool]) -> list[dict]:
    """The quotas of ``service`` whose names ``match`` (Service Quotas ``ListServiceQuotas``, every page)."""
    found, token = [], None
    while True:
        page = clients("service-quotas").list_service_quotas(ServiceCode=service, **({"NextToken": token} if token else {}))
        found += [q for q in page.get("Quotas", []) if match(q.get("QuotaName", ""))]
        token = page.get("NextToken")
        if not token:
            return found


def check_vcpu_quota(clients: Clients, plan: Plan) -> list[Result]:
    groups = [g for g in plan.groups if g.capacity == "on-demand"]
    unknown = [g.instance_type for g in groups if catalog.get(g.instance_type).vcpus is None]
    if unknown:
        return [Result("quota", "on-demand P vCPUs", "warn", f"vCPUs of {', '.join(sorted(set(unknown)))} are "
                       "unconfirmed; the quota cannot be compared", f"compare '{EC2_P_QUOTA}' with the nodes' vCPUs by hand")]
    need = sum((catalog.get(g.instance_type).vcpus or 0) * g.count for g in groups)
    quotas = find_quota(clients, "ec2", lambda n: n == EC2_P_QUOTA)
    if not quotas:
        return [Result("quota", "on-demand P vCPUs", "warn", f"no quota named '{EC2_P_QUOTA}' in {clients.region}",
                       "check EC2 quotas in the Service Quotas console")]
    value = int(quotas[0]["Value"])
    if value < need:
        return [Result("quota", "on-demand P vCPUs", "fail", f"the quota is {value:,} vCPUs, the on-demand groups need "
                       f"{need:,}", f"request {need:,}: aws service-quotas request-service-quota-increase --service-code "
                       f"ec2 --quota-code {quotas[0]['QuotaCode']} --desired-value {need}")]
    return [passed("quota", "on-demand P vCPUs", f"{value:,} vCPUs >= {need:,} needed (running instances count too)")]


def check_hyperpod_quota(clients: Clients, plan: Plan) -> list[Result]:
    out = []
    for itype in sorted({g.instance_type for g in plan.groups}):
        need = sum(g.count for g in plan.groups if g.instance_type == itype)
        name = f"ml.{itype} for cluster usage"
        quotas = find_quota(clients, "sagemaker", lambda n, name=name: n == name)
        if not quotas:
            out.append(Result("quota", name, "warn", f"no SageMaker quota named '{name}'", "check the Service Quotas console"))
        elif quotas[0]["Value"] < need:
            out.append(Result("quota", name, "fail", f"the quota is {int(quotas[0]['Value'])}, the groups need {need}",
                              f"request an increase of SageMaker quota {quotas[0]['QuotaCode']} to {need}"))
        else:
            out.append(passed("quota", name, f"{int(quotas[0]['Value'])} >= {need} needed"))
    return out


def check_fsx_quota(clients: Clients, plan: Plan) -> list[Result]:
    """The FSx for Lustre storage-capacity quota, found by name (no quota code is written down here)."""
    gib = plan.storage.capacity_gib or 0
    kind = (plan.storage.deployment_type or "").lower()
    quotas = find_quota(clients, "fsx", lambda n: "lustre" in n.lower() and "storage capacity" in n.lower())
    if len(quotas) > 1:
        quotas = [q for q in quotas if kind.split("_")[0] in q["QuotaName"].lower()] or quotas
    if len(quotas) != 1:
        names = ", ".join(q["QuotaName"] for q in quotas) or "none"
        return [Result("quota", "FSx storage", "warn", f"no single FSx for Lustre storage-capacity quota found ({names})",
                       f"check that the FSx quotas allow {gib:,} GiB more")]
    value = int(quotas[0]["Value"])
    if value < gib:
        return [Result("quota", "FSx storage", "fail", f"'{quotas[0]['QuotaName']}' is {value:,}, the file system needs "
                       f"{gib:,} GiB", f"request an increase of FSx quota {quotas[0]['QuotaCode']}")]
    return [passed("quota", "FSx storage", f"{value:,} >= {gib:,} GiB (file systems already there count too)")]


def check_existing_subnet(clients: Clients, plan: Plan) -> list[Result]:
    net, spec = plan.network, plan.network.spec.existing
    assert spec is not None
    try:
        [subnet] = clients("ec2").describe_subnets(SubnetIds=[spec.compute_subnet_id])["Subnets"]
    except ClientError as exc:
        if _code(exc).startswith("InvalidSubnetID"):
            return [Result("subnet", spec.compute_subnet_id, "fail", f"no subnet {spec.compute_subnet_id} in "
                           f"{clients.region}", "check network.existing.compute_subnet_id")]
        raise
    out = []
    sid = spec.compute_subnet_id
    if subnet["VpcId"] != spec.vpc_id:
        out.append(Result("subnet", sid, "fail", f"{sid} is in {subnet['VpcId']}, not {spec.vpc_id}", "fix network.existing"))
    if subnet.get("AvailabilityZoneId") != plan.availability_zone_id:
        out.append(Result("subnet", sid, "fail", f"{sid} is in {subnet.get('AvailabilityZoneId')}, the project in "
                          f"{plan.availability_zone_id}", "use a subnet in the project's zone (EFA stays in one subnet)"))
    if spec.compute_subnet_cidr and subnet["CidrBlock"] != spec.compute_subnet_cidr:
        out.append(Result("subnet", sid, "fail", f"{sid} is {subnet['CidrBlock']}, the project says "
                          f"{spec.compute_subnet_cidr}", f"set compute_subnet_cidr: {subnet['CidrBlock']}"))
    free = subnet["AvailableIpAddressCount"]
    if free < net.ips_needed:
        out.append(Result("subnet", sid, "fail", f"{sid} has {free:,} free addresses, the plan needs {net.ips_needed:,}",
                          "free addresses, use a larger subnet, or fewer nodes"))
    return out or [passed("subnet", sid, f"{free:,} free addresses >= {net.ips_needed:,} needed, in "
                          f"{plan.availability_zone_id}")]


def check_existing_fsx(clients: Clients, plan: Plan) -> list[Result]:
    spec = plan.storage.spec.fsx.existing
    assert spec is not None
    fid = spec.file_system_id
    [fs] = clients("fsx").describe_file_systems(FileSystemIds=[fid])["FileSystems"]
    ec2 = clients("ec2")
    enis = fs.get("NetworkInterfaceIds", [])[:1]
    groups = ec2.describe_network_interfaces(NetworkInterfaceIds=enis)["NetworkInterfaces"][0]["Groups"] if enis else []
    rules = [r for sg in ec2.describe_security_groups(GroupIds=[g["GroupId"] for g in groups])["SecurityGroups"]
             for r in sg.get("IpPermissions", [])] if groups else []
    nodes = plan.network.compute_subnet_cidr
    by_cidr = {p for p in LUSTRE_PORTS for r in rules if _admits_port(r, p) and nodes and _covers(r, nodes)}
    by_group = {p for p in LUSTRE_PORTS for r in rules if _admits_port(r, p) and r.get("UserIdGroupPairs")}
    sgs = ", ".join(g["GroupId"] for g in groups) or "none"
    if by_cidr == set(LUSTRE_PORTS):
        return [passed("fsx", fid, f"its security groups ({sgs}) admit {nodes} on TCP 988 and 1018-1023")]
    if by_cidr | by_group == set(LUSTRE_PORTS):
        return [Result("fsx", fid, "warn", f"its security groups ({sgs}) admit other security groups on the Lustre "
                       "ports, not the nodes' subnet", "after deploying, make sure the nodes' security group is one "
                       "of them")]
    missing = sorted(set(LUSTRE_PORTS) - by_cidr - by_group)
    return [Result("fsx", fid, "fail", f"its security groups ({sgs}) do not admit the nodes on TCP "
                   f"{', '.join(map(str, missing))}", f"add inbound TCP 988 and 1018-1023 from {nodes or 'the nodes'} "
                   "(or their security group); else the mount hangs")]


def _admits_port(rule: dict, port: int) -> bool:
    if rule.get("IpProtocol") == "-1":
        return True
    return rule.get("IpProtocol") in ("tcp", "6") and rule.get("FromPort", 0) <= port <= rule.get("ToPort", -1)


def _covers(rule: dict, cidr: str) -> bool:
    net = ipaddress.IPv4Network(cidr)
    return any(net.subnet_of(ipaddress.IPv4Network(r["CidrIp"])) for r in rule.get("IpRanges", []))


def check_identity_center(clients: Clients) -> list[Result]:
    instances = clients("sso-admin").list_instances().get("Instances", [])
    if not instances:
        return [Result("identity center", "grafana", "fail", f"no IAM Identity Center instance in {clients.region}; "
                       "Grafana's AWS_SSO sign-in needs one", "enable IAM Identity Center, or set "
                       "observability.grafana.authentication: SAML")]
    return [passed("identity center", "grafana", f"{instances[0].get('InstanceArn', 'an instance')} "
                   f"({instances[0].get('Status', 'ACTIVE')})")]


def _code(exc: ClientError) -> str:
    return exc.response.get("Error", {}).get("Code", "")


def _error(exc: ClientError) -> str:
    err = exc.response.get("Error", {})
    return f"{err.get('Code', 'error')}: {err.get('Message', '')}".rstrip(": ")

