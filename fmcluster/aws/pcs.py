"""Preflight for ``orchestrator.type: pcs``: can AWS PCS create the project's cluster in this Region now?

AWS PCS creates one cluster at a time per Region and account: "There can only be 1 cluster in a Creating state
per AWS Region per AWS account. CreateCluster fails with a ServiceQuotaExceededException if there is already a
cluster in a Creating state" (PCS API reference, CreateCluster,
https://docs.aws.amazon.com/pcs/latest/APIReference/API_CreateCluster.html). The quota is not adjustable (PCS
user guide, "Endpoints and service quotas for AWS PCS",
https://docs.aws.amazon.com/pcs/latest/userguide/service-endpoints-quotas.html; FACTS.md section 5). Another
deploy, or another team, creating a cluster makes ours fail (and its stack roll back) until theirs is done.

The same page gives 5 clusters per Region by default (adjustable). fmcluster knows no Service Quotas code for it
(no source gives one, and :mod:`fmcluster.aws.account_checks` finds quotas by name, never by a guessed code), so
the count of clusters is compared with that default only, and said to be the default.

:func:`check_pcs_creating` is a preflight check in the style of :mod:`fmcluster.aws.account_checks`; run it
through :func:`fmcluster.aws.preflight.run_check`, which turns access denied into a "could not check" warning.
"""

from __future__ import annotations

from typing import Any

from fmcluster.aws.account_checks import Clients, Result, passed
from fmcluster.plan import Plan

CHECK = "pcs"
"""The check's name in preflight's table."""

CREATING = "CREATING"
"""The ``ClusterStatus`` of a cluster being created (botocore's pcs model, ``ClusterStatus``)."""

DEFAULT_CLUSTERS_PER_REGION = 5
"""PCS's default quota of clusters per Region (adjustable; PCS user guide, "Endpoints and service quotas")."""


def list_clusters(clients: Clients) -> list[dict[str, Any]]:
    """Every PCS cluster of the account in the Region (``ListClusters``, every page): name, id, status."""
    found: list[dict[str, Any]] = []
    for page in clients("pcs").get_paginator("list_clusters").paginate():
        found.extend(page.get("clusters", []))
    return found


def check_pcs_creating(clients: Clients, plan: Plan, own_prefix: str | None = None) -> list[Result]:
    """Fail when another PCS cluster is being created in the Region (ours would fail to create); warn when the Region
    already holds the default quota's number of clusters.

    ``own_prefix`` is how the name of the project's PCS cluster starts (``PREFIX-<size letter>-``: the stack ends it
    with the compute subnet's ID, which preflight may not know yet); a cluster so named already there means the
    deploy updates it and creates none, so neither limit applies. None: every cluster being created counts.
    """
    region = clients.region
    clusters = list_clusters(clients)
    own = next((c for c in clusters if own_prefix is not None and str(c.get("name", "")).startswith(own_prefix)), None)
    if own is not None:
        cluster_name = own.get("name")
        if own.get("status") == CREATING:
            return [Result(CHECK, region, "warn", f"the project's PCS cluster {cluster_name} ({own.get('id', '?')}) "
                           "is being created now (another deploy of this project?)",
                           f"wait until it is ACTIVE (aws pcs get-cluster --cluster-identifier {cluster_name} "
                           f"--region {region}), then deploy")]
        return [passed(CHECK, region, f"the project's PCS cluster {cluster_name} exists ({own.get('status', '?')}): "
                       "the deploy updates it and creates no cluster")]
    creating = [c for c in clusters if c.get("status") == CREATING]
    if creating:
        names = ", ".join(f"{c.get('name', '?')} ({c.get('id', '?')})" for c in creating)
        first = creating[0].get("name") or creating[0].get("id", "")
        return [Result(CHECK, region, "fail", f"PCS is creating {names} in {region}: PCS creates one cluster at a "
                       f"time per Region, so creating {plan.project}'s cluster now would fail "
                       "(ServiceQuotaExceededException; not adjustable)",
                       f"wait until it is ACTIVE (aws pcs get-cluster --cluster-identifier {first} --region {region}), "
                       "then deploy")]
    count = len(clusters)
    if count >= DEFAULT_CLUSTERS_PER_REGION:
        return [Result(CHECK, region, "warn", f"{count} PCS clusters are already in {region}; PCS's default quota is "
                       f"{DEFAULT_CLUSTERS_PER_REGION} per Region, so a new one fails unless the account's quota was "
                       "raised", "check the AWS PCS quotas in the Service Quotas console (the quota is adjustable), "
                       "or delete a cluster no one uses")]
    return [passed(CHECK, region, f"no PCS cluster is being created in {region}; {count} cluster(s) there "
                   f"(default quota {DEFAULT_CLUSTERS_PER_REGION})")]
