"""``fmcluster preflight``: ask the account, before any money is spent, whether the project can deploy there.

The checks themselves are in :mod:`fmcluster.aws.account_checks`. Each runs under a time limit; one that
cannot run (access denied, throttled, the API absent in the Region, a timeout) is a warning, never a
traceback. What keeps every check from running -- no credentials, an SSO sign-in without a token, an
unreachable endpoint -- stops the run with one line (:class:`fmcluster.aws.AwsError`, from
:func:`fmcluster.aws.session.translate`).
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from botocore.exceptions import BotoCoreError, ClientError

from fmcluster.aws import account_checks as ac
from fmcluster.aws import hyperpod_eks, pcs
from fmcluster.aws.account_checks import CHECK_TIMEOUT_S, Clients, Result
from fmcluster.aws.session import DENIED, THROTTLED, AwsSession, is_account_problem, translate
from fmcluster.config.project import Project
from fmcluster.plan import Plan
from fmcluster.plan import pcs as pcs_plan

__all__ = ["CHECK_TIMEOUT_S", "Check", "Clients", "Result", "checks_for", "failed", "identity", "make_clients",
           "preflight", "run_check"]

CANNOT_RUN = DENIED | {"UnauthorizedException", "OptInRequired", "InvalidAction", "UnsupportedOperation",
                       "UnknownOperationException", "UnrecognizedClientException", "NoSuchResourceException"}
"""Error codes that mean "this check cannot run here", not "the project is wrong": a denied read (the session's
:data:`DENIED` codes) or an API the Region or account does not offer."""


def identity(clients: Clients, project: Project) -> Result:
    """Who is asking (STS ``GetCallerIdentity``); anything that stops it stops the run with one line."""
    try:
        me = clients("sts").get_caller_identity()
    except (BotoCoreError, ClientError) as exc:
        raise translate(exc, clients.session) from None
    account = me["Account"]
    if project.account and project.account != account:
        return Result("credentials", account, "fail", f"the credentials are for account {account}, the project "
                      f"names {project.account}", "use credentials for the project's account, or fix `account:`")
    return ac.passed("credentials", account, f"{me['Arn']} in {clients.region}")


@dataclass(frozen=True)
class Check:
    name: str
    subject: str
    run: Callable[[], list[Result]]


def checks_for(project: Project, plan: Plan, clients: Clients) -> list[Check]:
    """The checks this project needs, in the order they are shown."""
    zone = plan.availability_zone_id
    out = [Check("zone", zone, lambda: ac.check_zone(clients, zone))]
    for g in plan.groups:
        out.append(Check("offered", g.name, lambda g=g: ac.check_offering(clients, zone, g)))
        if g.reservation_id:
            out.append(Check("capacity", g.name, lambda g=g: ac.check_reservation(clients, zone, g)))
        spec = next(c.capacity for c in project.compute_groups if c.name == g.name)
        if spec.type == "training-plan":
            out.append(Check("training plan", g.name, lambda g=g, a=spec.arn: ac.check_training_plan(clients, zone, g, a)))
    if any(g.capacity == "on-demand" for g in plan.groups):
        out.append(Check("quota", "on-demand P vCPUs", lambda: ac.check_vcpu_quota(clients, plan)))
    out += ORCHESTRATOR_CHECKS[plan.cluster.orchestrator](project, plan, clients)
    if plan.storage.created:
        out.append(Check("quota", "FSx storage", lambda: ac.check_fsx_quota(clients, plan)))
    if plan.network.existing:
        out.append(Check("subnet", plan.network.existing_subnet_id or "", lambda: ac.check_existing_subnet(clients, plan)))
    if plan.storage.spec.fsx.enabled and plan.storage.spec.fsx.existing is not None:
        out.append(Check("fsx", plan.storage.spec.fsx.existing.file_system_id, lambda: ac.check_existing_fsx(clients, plan)))
    grafana = project.observability.grafana
    if grafana.enabled and grafana.authentication == "AWS_SSO":
        out.append(Check("identity center", "grafana", lambda: ac.check_identity_center(clients)))
    return out


ORCHESTRATOR_CHECKS: dict[str, Callable[[Project, Plan, Clients], list[Check]]] = {
    "none": lambda project, plan, clients: [],
    "parallelcluster": lambda project, plan, clients: [],
    "hyperpod": lambda project, plan, clients: [
        Check("quota", "HyperPod instances", lambda: ac.check_hyperpod_quota(clients, plan))],
    "pcs": lambda project, plan, clients: [
        Check(pcs.CHECK, "clusters being created", lambda: pcs.check_pcs_creating(
            clients, plan, pcs_plan.name_start(plan.cluster)))],
    "hyperpod-eks": lambda project, plan, clients: [
        Check("quota", "HyperPod instances", lambda: ac.check_hyperpod_quota(clients, plan)),
        Check(hyperpod_eks.CHECK, plan.cluster.hyperpod_eks.kubernetes_version,
              lambda: hyperpod_eks.check_addon_versions(clients, plan)),
        Check(hyperpod_eks.CHART_CHECK, "cache", hyperpod_eks.check_chart),
        *(Check("zone", zone, lambda zone=zone: ac.check_zone(clients, zone))  # the control plane's, by zone ID
          for zone in plan.cluster.control_plane_zone_ids if zone != plan.availability_zone_id)],
}
"""The aws stage's table of orchestrators (:mod:`fmcluster.orchestrators`): each one's own account checks."""


def run_check(check: Check, timeout: float = CHECK_TIMEOUT_S) -> list[Result]:
    """Run one check under ``timeout`` seconds; what keeps it from running becomes a warning."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(check.run).result(timeout=timeout)
    except concurrent.futures.TimeoutError:
        return [Result(check.name, check.subject, "warn", f"no answer within {timeout:g} s", "run preflight again")]
    except ClientError as exc:
        code = ac._code(exc)
        if is_account_problem(exc) and code not in THROTTLED | CANNOT_RUN:
            raise  # expired or refused credentials: no other check can run either
        what = "not allowed" if code in CANNOT_RUN else "failed"
        return [Result(check.name, check.subject, "warn", f"could not check: {ac._error(exc)}",
                       "grant the read permission named above" if what == "not allowed" else "run preflight again")]
    except BotoCoreError:
        raise  # no credentials, no network: no other check can run either
    except (ValueError, KeyError, IndexError) as exc:
        return [Result(check.name, check.subject, "warn", f"could not check: {exc}", "run preflight again")]
    finally:
        pool.shutdown(wait=False)


def preflight(project: Project, plan: Plan, clients: Clients, *, timeout: float = CHECK_TIMEOUT_S,
              on_check: Callable[[Check], None] | None = None) -> list[Result]:
    """Every check's results, credentials first. Raises :class:`fmcluster.aws.AwsError` when none can run."""
    results = [identity(clients, project)]
    for check in checks_for(project, plan, clients):
        if on_check:
            on_check(check)
        results += run_check(check, timeout)
    return results


def failed(results: Iterable[Result]) -> bool:
    return any(r.status == "fail" for r in results)


def make_clients(session: AwsSession) -> Clients:
    """The clients ``fmcluster preflight`` asks through (tests replace this with moto- or Stubber-backed ones)."""
    return Clients(session.region, session)
