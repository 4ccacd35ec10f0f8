"""The AWS PCS preflight check (``fmcluster/aws/pcs.py``) under botocore's Stubber (moto has no PCS): a cluster
being created in the Region fails the check (PCS creates one at a time per Region), none passes, a page after the
first is read, access denied is a "could not check" warning through preflight's ``run_check``."""

from __future__ import annotations

from datetime import datetime, timezone

import boto3
import pytest
from botocore.stub import Stubber
from support import BASE, plan_of

from fmcluster.aws import pcs
from fmcluster.aws import preflight as pf
from fmcluster.aws.account_checks import Clients

REGION = "us-east-1"
WHEN = datetime(2026, 11, 30, 12, tzinfo=timezone.utc)
PLAN = plan_of(BASE + "orchestrator: {type: pcs}\n")


def summary(name: str, status: str) -> dict:
    return {"name": name, "id": f"pcs_{name[:6]}", "arn": f"arn:aws:pcs:{REGION}:123456789012:cluster/pcs_{name[:6]}",
            "createdAt": WHEN, "modifiedAt": WHEN, "status": status}


@pytest.fixture
def stub():
    client = boto3.client("pcs", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing")
    with Stubber(client) as stubber:
        yield Clients(REGION, overrides={"pcs": client}), stubber
        stubber.assert_no_pending_responses()


def pages(stubber: Stubber, *clusters_by_page: list[dict]) -> None:
    """One ListClusters answer per page, each asked with the token the page before gave."""
    for i, clusters in enumerate(clusters_by_page):
        answer: dict = {"clusters": clusters}
        if i + 1 < len(clusters_by_page):
            answer["nextToken"] = f"token-{i + 1}"
        stubber.add_response("list_clusters", answer, {"nextToken": f"token-{i}"} if i else {})


def test_a_cluster_being_created_fails_the_check_and_names_it(stub) -> None:
    clients, stubber = stub
    pages(stubber, [summary("other-team", "ACTIVE"), summary("their-new-one", "CREATING")])
    [result] = pcs.check_pcs_creating(clients, PLAN)
    assert result.status == "fail"
    assert "their-new-one" in result.message and "other-team" not in result.message
    assert "would fail" in result.message and "one cluster at a time" in result.message
    assert result.advice.startswith("wait until it is ACTIVE") and "their-new-one" in result.advice


def test_no_cluster_being_created_passes(stub) -> None:
    clients, stubber = stub
    pages(stubber, [summary("other-team", "ACTIVE"), summary("old", "DELETING")])
    [result] = pcs.check_pcs_creating(clients, PLAN)
    assert result.status == "pass", result
    assert "2 cluster(s)" in result.message


def test_every_page_is_read(stub) -> None:
    clients, stubber = stub
    pages(stubber, [summary("a", "ACTIVE")], [summary("b", "CREATING")])
    [result] = pcs.check_pcs_creating(clients, PLAN)
    assert result.status == "fail" and "b (pcs_b)" in result.message


def test_the_projects_own_cluster_means_an_update(stub) -> None:
    clients, stubber = stub
    pages(stubber, [summary("demo-s-0123456789abcdef0", "ACTIVE"), summary("their-new-one", "CREATING")])
    [result] = pcs.check_pcs_creating(clients, PLAN, own_prefix="demo-s-")
    assert result.status == "pass" and "updates it" in result.message


def test_the_projects_own_cluster_being_created_warns(stub) -> None:
    clients, stubber = stub
    pages(stubber, [summary("demo-s-0123456789abcdef0", "CREATING"), summary("demo-sandbox", "ACTIVE")])
    [result] = pcs.check_pcs_creating(clients, PLAN, own_prefix="demo-s-")
    assert result.status == "warn" and "demo-s-0123456789abcdef0" in result.message


def test_the_default_quota_reached_warns(stub) -> None:
    clients, stubber = stub
    pages(stubber, [summary(f"c{i}", "ACTIVE") for i in range(pcs.DEFAULT_CLUSTERS_PER_REGION)])
    [result] = pcs.check_pcs_creating(clients, PLAN)
    assert result.status == "warn" and "default quota is 5" in result.message


def test_access_denied_is_a_could_not_check_warning(stub) -> None:
    clients, stubber = stub
    stubber.add_client_error("list_clusters", "AccessDeniedException", "User is not authorized to perform: "
                             "pcs:ListClusters", 400, expected_params={})
    check = pf.Check(pcs.CHECK, REGION, lambda: pcs.check_pcs_creating(clients, PLAN))
    [result] = pf.run_check(check)
    assert result.status == "warn" and result.message.startswith("could not check")
    assert "pcs:ListClusters" in result.message
    assert result.advice == "grant the read permission named above"


def test_preflight_of_a_pcs_project_runs_the_check_and_knows_its_own_cluster(stub) -> None:
    """preflight's table gives a PCS project this check, with how the project's own cluster's name starts (the
    compute subnet's ID ends it): that cluster being there means an update, even while another is being created."""
    from fmcluster import config

    clients, stubber = stub
    project = config.parse(BASE + "orchestrator: {type: pcs}\n").project
    [check] = [c for c in pf.checks_for(project, PLAN, clients) if c.name == pcs.CHECK]
    assert check.subject == "clusters being created"
    own = f"{PLAN.cluster.pcs.cluster_name or PLAN.project}-s-0123456789abcdef0"
    pages(stubber, [summary(own, "ACTIVE"), summary("their-new-one", "CREATING")])
    [result] = pf.run_check(check)
    assert result.status == "pass" and own in result.message
