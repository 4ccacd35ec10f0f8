"""CDK stacks. They take the project and its plan, never raw YAML."""

from __future__ import annotations

from aws_cdk import App, Environment, Stack, Tags, Validations
from cdk_nag import AwsSolutionsChecks

from fmcluster.config import LoadedProject
from fmcluster.plan import Plan

PROJECT_TAG = "fmcluster:project"


def build_project(app: App, loaded: LoadedProject, plan: Plan) -> list[Stack]:
    """Add one project's stacks (network, storage, cluster, observability) to ``app``."""
    from fmcluster.stacks.cluster import ClusterStack
    from fmcluster.stacks.network import NetworkStack
    from fmcluster.stacks.storage import StorageStack, creates_resources, imported_contract

    project = loaded.project
    env = None
    if project.account or project.region:
        env = Environment(account=project.account, region=project.region)
    network = NetworkStack(app, f"{project.name}-network", project=project, plan=plan, env=env)
    stacks: list[Stack] = [network]
    if creates_resources(project):
        storage = StorageStack(app, f"{project.name}-storage", project=project, plan=plan, network=network.contract,
                               env=env)
        stacks.append(storage)
        storage_contract = storage.contract
    else:  # both bucket and file system exist already: nothing to create, nothing to lose
        storage_contract = imported_contract(project)
    metrics = None
    if project.observability.prometheus:
        from fmcluster.observability import rules
        from fmcluster.stacks.observability import ObservabilityStack

        rules_data = rules.rules_yaml(
            fsx=plan.storage.fsx,  # without FSx, FsxMountMissing would fire on every node
            slurm=project.orchestrator.type != "none",
            extra_files=extra_rule_files(loaded),
        )
        observability = ObservabilityStack(app, f"{project.name}-observability", project=project,
                                           rules_data=rules_data, env=env)
        stacks.append(observability)
        metrics = observability.contract
    cluster = ClusterStack(app, f"{project.name}-cluster", project=project, plan=plan, network=network.contract,
                           storage=storage_contract, metrics=metrics, env=env)
    stacks.append(cluster)
    for stack in stacks:
        Tags.of(stack).add(PROJECT_TAG, project.name)
        for key, value in project.tags.items():
            Tags.of(stack).add(key, value)
    return stacks


def extra_rule_files(loaded: LoadedProject) -> list:
    """The project's own rule files, relative to the project file."""
    base = loaded.file.parent if loaded.file else None
    return [(base / f) if base else f for f in loaded.project.observability.extra_rule_files]


def add_nag(app: App, verbose: bool = True) -> None:
    """cdk-nag's AwsSolutions pack on every stack of the app."""
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=verbose))
