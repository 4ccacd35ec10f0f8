"""Contracts read back from the outputs of a project's deployed stacks (boto3 CloudFormation).

The output keys are :mod:`fmcluster.contracts`'s, the same the stacks write.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from fmcluster.aws import StackOutputsError
from fmcluster.aws.session import is_account_problem
from fmcluster.contracts import (
    ACCOUNTING_OUTPUTS,
    ACCOUNTING_USER,
    BOOTSTRAP_ARGS_OUTPUT,
    BOOTSTRAP_OUTPUT,
    BUCKET_OUTPUTS,
    FILE_SYSTEM_OUTPUTS,
    GRAFANA_WORKSPACE_OUTPUT,
    NETWORK_OUTPUTS,
    NODE_POLICY_OUTPUT,
    PROMETHEUS_WORKSPACE_OUTPUT,
    AccountingContract,
    MountContract,
    NetworkContract,
    StorageContract,
    stack_name,
)
from fmcluster.plan import StoragePlan


def stack_outputs(cfn: Any, name: str) -> dict[str, str]:
    """The outputs of one deployed stack, by key (boto3 CloudFormation client ``cfn``)."""
    try:
        stacks = cfn.describe_stacks(StackName=name)["Stacks"]
    except ClientError as exc:
        if is_account_problem(exc):
            raise  # credentials, permissions, throttling: the session's translation words it
        raise StackOutputsError(f"cannot read stack {name}: {exc.response['Error'].get('Message', exc)} "
                                f"(deploy it first: npx cdk deploy {name})") from None
    return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}


def _need(outputs: dict[str, str], stack: str, key: str) -> str:
    if key not in outputs:
        raise StackOutputsError(f"stack {stack} has no output {key}; redeploy it with this version of fmcluster "
                                f"(npx cdk deploy {stack})")
    return outputs[key]


def network_contract(cfn: Any, project: str) -> NetworkContract:
    name = stack_name(project, "network")
    outputs = stack_outputs(cfn, name)
    # Network stacks deployed before Local Zone support have no ServicesSubnetId: their services
    # (FSx, endpoints, head node) share the compute subnet.
    outputs.setdefault("ServicesSubnetId", outputs.get("ComputeSubnetId", ""))
    return NetworkContract(**{field: _need(outputs, name, key) for key, field in NETWORK_OUTPUTS.items()})


def storage_contract(cfn: Any, project: str, plan: StoragePlan | None = None) -> StorageContract:
    """From ``NAME-storage``; from the project file when the plan makes no storage stack."""
    if plan is not None and not plan.stack_needed:
        return plan.imported_contract()  # bucket and file system exist already: no storage stack
    name = stack_name(project, "storage")
    outputs = stack_outputs(cfn, name)
    fsx = None
    if "FileSystemId" in outputs:
        values: dict[str, Any] = {field: _need(outputs, name, key) for key, field in FILE_SYSTEM_OUTPUTS.items()}
        values["efa_enabled"] = values["efa_enabled"].lower() == "true"
        fsx = MountContract(**values)
    bucket = {field: _need(outputs, name, key) for key, field in BUCKET_OUTPUTS.items()}
    return StorageContract(**bucket, fsx=fsx, scratch_path=None)


def accounting_contract(cfn: Any, project: str) -> AccountingContract:
    """From ``NAME-accounting`` (``stacks/accounting.py``): the Slurm accounting database."""
    name = stack_name(project, "accounting")
    outputs = stack_outputs(cfn, name)
    values: dict[str, Any] = {field: _need(outputs, name, key) for key, field in ACCOUNTING_OUTPUTS.items()}
    values["port"] = int(values["port"])
    return AccountingContract(user_name=ACCOUNTING_USER, **values)


def contracts_from_stacks(cfn: Any, project: str, storage: StoragePlan | None = None,
                          ) -> tuple[NetworkContract, StorageContract, str, list[str], str]:
    """Network and storage contracts, bootstrap URI and arguments, node policy ARN from the deployed stacks."""
    network = network_contract(cfn, project)
    contract = storage_contract(cfn, project, storage)
    name = stack_name(project, "cluster")
    clu = stack_outputs(cfn, name)
    return (network, contract, _need(clu, name, BOOTSTRAP_OUTPUT), [_need(clu, name, BOOTSTRAP_ARGS_OUTPUT)],
            _need(clu, name, NODE_POLICY_OUTPUT))


def grafana_workspace_id(cfn: Any, project: str) -> str:
    return observability_workspace_ids(cfn, project, grafana=True)[0] or ""


def observability_workspace_ids(cfn: Any, project: str, *, grafana: bool = True, prometheus: bool = False,
                                ) -> tuple[str | None, str | None]:
    """``(Grafana workspace ID, Prometheus workspace ID)`` from ``NAME-observability``, in one call; each asked-for
    one missing is a :class:`StackOutputsError`."""
    name = stack_name(project, "observability")
    outputs = stack_outputs(cfn, name)
    if grafana and GRAFANA_WORKSPACE_OUTPUT not in outputs:
        raise StackOutputsError(f"stack {name} has no output {GRAFANA_WORKSPACE_OUTPUT} (is Grafana enabled? "
                                "or pass --workspace-id)")
    if prometheus and PROMETHEUS_WORKSPACE_OUTPUT not in outputs:
        raise StackOutputsError(f"stack {name} has no output {PROMETHEUS_WORKSPACE_OUTPUT} (is Prometheus enabled? "
                                "or pass --prometheus-workspace-id)")
    return outputs.get(GRAFANA_WORKSPACE_OUTPUT), outputs.get(PROMETHEUS_WORKSPACE_OUTPUT)


def deployed_templates(cfn: Any, stack_names: list[str]) -> dict[str, dict]:
    """The templates CloudFormation holds for those of ``stack_names`` that are deployed (``GetTemplate``; a stack
    not deployed yet is left out: a first deploy compares with nothing)."""
    found: dict[str, dict] = {}
    for name in stack_names:
        try:
            body = cfn.get_template(StackName=name, TemplateStage="Original")["TemplateBody"]
        except ClientError as exc:
            if is_account_problem(exc):
                raise
            if "does not exist" in str(exc.response.get("Error", {}).get("Message", "")):
                continue  # not deployed yet
            raise
        found[name] = json.loads(body) if isinstance(body, str) else dict(body)
    return found
