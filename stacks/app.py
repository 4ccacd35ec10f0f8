"""The CDK app behind ``app.py``, in one pass from top to bottom::

    project file -> config.load -> checks.validate (makes the plan) -> for each project:
        NAME-network -> NAME-storage -> NAME-observability -> NAME-accounting -> bootstrap bundles -> NAME-cluster

(``NAME-storage``, ``NAME-observability`` and ``NAME-accounting`` only when the project needs them.)

``-c project=NAME`` (default ``default``), a comma-separated list, or ``-c project=all``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from dataclasses import replace

from aws_cdk import App, Environment, Fn, Stack, Tags, Validations
from fmcluster.bootstrap import bundles, staging
from fmcluster.stacks.cluster import ClusterStack
from fmcluster.stacks.network import NetworkStack
from fmcluster.stacks.observability import ObservabilityStack
from fmcluster.stacks.storage import StorageStack
from fmcluster.stacks.tokens import is_unresolved

from fmcluster import checks, config
from fmcluster.config.loader import LoadedProject
from fmcluster.contracts import (
    ACCOUNTING_OUTPUTS,
    BUCKET_OUTPUTS,
    DATABASE_SUBNET_OUTPUTS,
    FILE_SYSTEM_OUTPUTS,
    NETWORK_OUTPUTS,
    AccountingContract,
    NetworkContract,
    StorageContract,
    export_name,
    stack_name,
)
from fmcluster.errors import ConfigError
from fmcluster.facts import PROJECT_TAG
from fmcluster.generate import metrics as metrics_table
from fmcluster.generate import rules
from fmcluster.plan import Plan


def project_refs(selector: str) -> list[str]:
    """``all`` means every file under ``projects/``; otherwise a comma-separated list of names or paths."""
    if selector == "all":
        return [str(p) for p in sorted(config.projects_dir().glob("*.yaml"))]
    return [ref.strip() for ref in selector.split(",") if ref.strip()]


def build(app: App, refs: list[str]) -> None:
    """Validate every project first (reporting all errors), then add their stacks."""
    loaded_plans = []
    problems = []
    for ref in refs:
        try:
            loaded = config.load(ref)
            plan, warnings = checks.validate(loaded)
        except ConfigError as exc:
            problems.extend(exc.problems)
            continue
        for warning in warnings:
            print(f"warning: {warning.format()}", file=sys.stderr)
        loaded_plans.append((loaded, plan))
    if problems:
        raise ConfigError(problems)
    protect = _flag(app, "protect", True)
    for loaded, plan in loaded_plans:
        build_project(app, loaded, plan, protect=protect)
    if _flag(app, "nag", True):
        add_nag(app)


def build_project(app: App, loaded: LoadedProject, plan: Plan, *, protect: bool | None = None) -> list[Stack]:
    """Add one project's stacks to ``app``; each takes its plan section and the contracts before it. ``protect``:
    the app's ``protect`` flag (read from its context when not given)."""
    project = loaded.project
    name = plan.project
    env = Environment(account=project.account, region=project.region) if project.account or project.region else None
    # Termination protection on the stacks that hold data (files, metrics) or a running Slurm cluster:
    # `cdk destroy` refuses them until it is turned off (`-c protect=false` when synthesizing, or the console).
    if protect is None:
        protect = _flag(app, "protect", True)

    network = NetworkStack(app, stack_name(name, "network"), plan=plan.network, env=env)
    stacks: list[Stack] = [network]

    if plan.storage.stack_needed:
        storage = StorageStack(app, stack_name(name, "storage"), plan=plan.storage, network=network.contract, env=env,
                               termination_protection=protect)
        stacks.append(storage)
        storage_contract = storage.contract
    else:  # both bucket and file system exist already: nothing to create, nothing to lose
        storage_contract = plan.storage.imported_contract()

    metrics = None
    if plan.observability.enabled:
        rules_data = rules.rules_yaml(
            fsx=plan.observability.fsx,  # without FSx, FsxMountMissing would fire on every node
            slurm=metrics_table.runs_slurm_metrics(plan.cluster),  # no Slurm rules where no node exports Slurm's
            extra_files=extra_rule_files(loaded),
        )
        observability = ObservabilityStack(app, stack_name(name, "observability"), plan=plan.observability,
                                           rules_data=rules_data, env=env, termination_protection=protect)
        stacks.append(observability)
        metrics = observability.contract

    # The accounting and cluster stacks read network, storage and accounting through their exports (strong
    # references).
    network_contract = imported_network(name, network.contract)
    accounting = None
    if plan.cluster.accounting_store == "database":  # records kept in a database fmcluster creates (and retains)
        # imported here, by the projects that have one: aws_rds and aws_secretsmanager cost every synthesis 0.25 s
        from fmcluster.stacks.accounting import AccountingStack

        accounting_stack = AccountingStack(app, stack_name(name, "accounting"), plan=plan.cluster,
                                           network=network_contract, env=env, termination_protection=protect)
        accounting_stack.add_stack_dependency(network)
        stacks.append(accounting_stack)
        accounting = imported_accounting(name, accounting_stack.contract)
    storage_contract = imported_storage(name, storage_contract)
    bundle_dir = Path(app.outdir) / bundles.BUNDLES_DIR / name
    fsx = storage_contract.fsx
    at_boot = fsx is not None and is_unresolved(fsx.file_system_id)  # created in this deployment
    node_bundles = bundles.render_bundles(plan.cluster, bundle_dir, fsx, at_boot,
                                          metrics.remote_write_url if metrics else None)
    runs_slurm = plan.cluster.driver.runs_slurm(plan.cluster)
    cluster = ClusterStack(app, stack_name(name, "cluster"), plan=plan.cluster, bundles=node_bundles,
                           network=network_contract, storage=storage_contract, metrics=metrics,
                           accounting=accounting, staged=staging.from_manifests(bundle_dir), env=env,
                           termination_protection=protect and runs_slurm)
    for producer in stacks:  # imports name no stack: deploy network, storage (observability, accounting) first
        cluster.add_stack_dependency(producer)
    stacks.append(cluster)

    for stack in stacks:
        tags = Tags.of(stack)
        tags.add(PROJECT_TAG, name)
        for key, value in project.tags.items():
            tags.add(key, value)
    return stacks


def _imported(project: str, key: str, value: str) -> str:
    """A value the network or storage stack makes, read through its export (``Fn::ImportValue``): a strong reference,
    so CloudFormation refuses to change or delete it while the cluster stack uses it (FACTS.md section 5). cdk.json's
    weak references (``Fn::GetStackOutput``) would leave the cluster on a stale ID and the producer deletable. A value
    known at synthesis (an existing VPC, subnet or file system) stays as it is."""
    return Fn.import_value(export_name(project, key)) if is_unresolved(value) else value


def imported_network(project: str, contract: NetworkContract) -> NetworkContract:
    """The network contract as the cluster stack reads it: each value through the network stack's export. In a regular
    zone the services subnet is the compute subnet: it stays one value, so the cluster sees that too."""
    values = {field: _imported(project, key, getattr(contract, field)) for key, field in NETWORK_OUTPUTS.items()}
    if contract.services_subnet_id == contract.compute_subnet_id:
        values["services_subnet_id"] = values["compute_subnet_id"]
    values["database_subnet_ids"] = tuple(_imported(project, key, subnet_id) for key, subnet_id
                                          in zip(DATABASE_SUBNET_OUTPUTS, contract.database_subnet_ids))
    return NetworkContract(**values)


def imported_accounting(project: str, contract: AccountingContract) -> AccountingContract:
    """The accounting database's contract as the cluster stack reads it: each value it makes through its export
    (the port and user name are constants and stay as they are)."""
    return replace(contract, **{field: _imported(project, key, getattr(contract, field))
                                for key, field in ACCOUNTING_OUTPUTS.items() if field != "port"})


def imported_storage(project: str, contract: StorageContract) -> StorageContract:
    """The storage contract as the cluster stack reads it: each value through the storage stack's export."""
    bucket = {field: _imported(project, key, getattr(contract, field)) for key, field in BUCKET_OUTPUTS.items()}
    fsx = contract.fsx
    if fsx is not None:  # mount path and EFA are settings (literals), the rest comes from the file system
        fsx = replace(fsx, **{field: _imported(project, key, getattr(fsx, field))
                              for key, field in FILE_SYSTEM_OUTPUTS.items() if field not in ("mount_path", "efa_enabled")})
    return replace(contract, fsx=fsx, **bucket)


def extra_rule_files(loaded: LoadedProject) -> list:
    """The project's own rule files, relative to the project file."""
    base = loaded.file.parent if loaded.file else None
    return [(base / f) if base else f for f in loaded.project.observability.extra_rule_files]


def add_nag(app: App, verbose: bool = True) -> None:
    """cdk-nag's AwsSolutions pack on every stack of the app."""
    # imported here, where it runs: loading cdk-nag's jsii assembly costs a synthesis with ``-c nag=false`` (the
    # replacement guard's) about 0.4 s
    from cdk_nag import AwsSolutionsChecks

    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=verbose))


def _flag(app: App, key: str, default: bool) -> bool:
    value = app.node.try_get_context(key)
    return default if value is None else str(value).lower() not in ("false", "0", "no", "off")


def cdk_json_context() -> dict:
    """The ``context`` of the project's ``cdk.json`` (feature flags, reference style), as `cdk synth` passes it.

    The CDK CLI hands cdk.json's context to the app; an App built outside the CLI (the replacement
    guard, the tests) reads it here so both build the same templates. The working directory's
    cdk.json wins, then the one beside this checkout's ``app.py``.
    """
    for base in (Path.cwd(), Path(__file__).resolve().parents[1]):
        path = base / "cdk.json"
        if path.is_file():
            return dict(json.loads(path.read_text(encoding="utf-8")).get("context", {}))
    return {}


def new_app(**kwargs) -> App:
    """An App with cdk.json's context (the CLI's own context, ``-c`` included, overrides it) and CDK's built-in
    CloudFormation validation off unless ``-c cfn-validate=true``.

    That engine costs about a second per synth; cfn-lint checks every template of every
    project in the test suite instead, and cdk-nag still runs on every synth.
    """
    kwargs["context"] = {**cdk_json_context(), **kwargs.get("context", {})}
    probe = App(auto_synth=False, **kwargs)  # reads cdk.json and -c context, never synthesized
    return App(builtin_cloud_formation_validation=_flag(probe, "cfn-validate", False), **kwargs)


def synthesize(ref: str | Path, outdir: Path, context: dict[str, str] | None = None) -> dict[str, dict]:
    """Templates of one project by stack name, cdk-nag off (the replacement guard's synthesis).

    The same app as `cdk synth -c project=REF` builds (:func:`new_app`: cdk.json's context and
    feature flags, weak cross-stack references, and ``context``: the ``-c`` values a deploy passes),
    so the guard judges the templates a deploy sends.
    Raises :class:`ConfigError` for a bad file.
    """
    loaded = config.load(ref)
    plan, _ = checks.validate(loaded)
    app = new_app(outdir=str(outdir), context={**(context or {}), "nag": "false"})
    build_project(app, loaded, plan)
    assembly = app.synth()
    return {stack.stack_name: stack.template for stack in assembly.stacks}


def main() -> None:
    app = new_app()
    try:
        build(app, project_refs(str(app.node.try_get_context("project") or "default")))
    except ConfigError as exc:
        print(exc.report(), file=sys.stderr)
        sys.exit(exc.exit_code)
    try:
        app.synth()
    except RuntimeError as exc:  # a validation plugin (cdk-nag) refused the templates; its report is above
        if "ValidationFailed" not in str(exc):
            raise
        print(f"synthesis stopped: {str(exc).splitlines()[0]}", file=sys.stderr)
        sys.exit(1)
