"""``fmcluster parallelcluster config PROJECT``: write cluster.yaml for ``pcluster create-cluster``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
import yaml

from fmcluster.contracts import MountContract, NetworkContract, StorageContract
from fmcluster.parallelcluster import stack_names
from fmcluster.storage.existing import creates_resources, imported_contract

app = typer.Typer(help="AWS ParallelCluster: the cluster configuration fmcluster generates.", no_args_is_help=True)


@app.callback()
def _group() -> None:
    """AWS ParallelCluster: the cluster configuration fmcluster generates."""


class StackOutputsError(RuntimeError):
    """A deployed stack is missing, or lacks an output the configuration needs."""


def stack_outputs(cfn: Any, stack_name: str) -> dict[str, str]:
    """The outputs of one deployed stack, by key (boto3 CloudFormation client ``cfn``)."""
    from botocore.exceptions import ClientError

    try:
        stacks = cfn.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as exc:
        raise StackOutputsError(f"cannot read stack {stack_name}: {exc.response['Error'].get('Message', exc)} "
                                f"(deploy it first: npx cdk deploy {stack_name})") from None
    return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}


def _need(outputs: dict[str, str], stack: str, key: str) -> str:
    if key not in outputs:
        raise StackOutputsError(f"stack {stack} has no output {key}; redeploy it with this version of fmcluster "
                                f"(npx cdk deploy {stack})")
    return outputs[key]


def contracts_from_stacks(cfn: Any, project_name: str, project: Any | None = None,
                          ) -> tuple[NetworkContract, StorageContract, str, list[str], str]:
    """Network and storage contracts, bootstrap URI and arguments, node policy ARN from the deployed stacks."""
    net_stack, sto_stack, clu_stack = (f"{project_name}-{s}" for s in ("network", "storage", "cluster"))
    net = stack_outputs(cfn, net_stack)
    network = NetworkContract(
        vpc_id=_need(net, net_stack, "VpcId"),
        compute_subnet_id=_need(net, net_stack, "ComputeSubnetId"),
        efa_security_group_id=_need(net, net_stack, "EfaSecurityGroupId"),
        node_security_group_id=_need(net, net_stack, "NodeSecurityGroupId"),
        storage_security_group_id=_need(net, net_stack, "StorageSecurityGroupId"),
    )
    if project is not None and not creates_resources(project):
        storage = imported_contract(project)  # bucket and file system exist already: no storage stack
        clu = stack_outputs(cfn, clu_stack)
        return (network, storage, _need(clu, clu_stack, stack_names.BOOTSTRAP_OUTPUT),
                [_need(clu, clu_stack, stack_names.BOOTSTRAP_ARGS_OUTPUT)],
                _need(clu, clu_stack, stack_names.NODE_POLICY_OUTPUT))
    sto = stack_outputs(cfn, sto_stack)
    fsx = None
    if "FileSystemId" in sto:
        fsx = MountContract(
            file_system_id=sto["FileSystemId"],
            dns_name=_need(sto, sto_stack, "FileSystemDnsName"),
            mount_name=_need(sto, sto_stack, "FileSystemMountName"),
            mount_path=_need(sto, sto_stack, "FileSystemMountPath"),
            efa_enabled=_need(sto, sto_stack, "FileSystemEfaEnabled").lower() == "true",
        )
    storage = StorageContract(bucket_name=_need(sto, sto_stack, "BucketName"),
                              bucket_arn=_need(sto, sto_stack, "BucketArn"), fsx=fsx, scratch_path=None)
    clu = stack_outputs(cfn, clu_stack)
    return (network, storage, _need(clu, clu_stack, stack_names.BOOTSTRAP_OUTPUT),
            [_need(clu, clu_stack, stack_names.BOOTSTRAP_ARGS_OUTPUT)],
            _need(clu, clu_stack, stack_names.NODE_POLICY_OUTPUT))


def render(loaded: Any, plan: Any, *, cfn: Any | None = None, region: str | None = None) -> str:
    """cluster.yaml text: placeholders (``cfn`` None) or the deployed stacks' real IDs."""
    from fmcluster.parallelcluster import generate, placeholders

    project = loaded.project
    if cfn is None:
        network, storage = placeholders.NETWORK, placeholders.storage(project, plan)
        bootstrap, policy = placeholders.bootstrap_uri(project), placeholders.node_policy_arn(project)
        args = placeholders.bootstrap_args(project)
        origin = "placeholders (all-zero IDs): run with --from-stacks after `npx cdk deploy` for real ones"
    else:
        network, storage, bootstrap, args, policy = contracts_from_stacks(cfn, project.name, project)
        origin = f"the outputs of the deployed {project.name}-network, -storage and -cluster stacks"
    config = generate.cluster_config(project, plan, network=network, storage=storage, bootstrap_uri=bootstrap,
                                     bootstrap_args=args, node_policy_arns=[policy], region=region or project.region)
    header = (f"# ParallelCluster {generate.settings_of(project).version} configuration for fmcluster project "
              f"{project.name}, generated from {loaded.file or 'the project'}.\n# IDs: {origin}.\n"
              f"# Create: pcluster create-cluster --cluster-name {generate.cluster_name(project)} "
              "--cluster-configuration cluster.yaml\n")
    return header + yaml.safe_dump(config, sort_keys=False, default_flow_style=False)


@app.command("config")
def config_command(
    project: str = typer.Argument(..., help="Project name (under projects/) or path to a project file."),
    out: Path = typer.Option(Path("cluster.yaml"), "--out", "-o", help="Where to write the configuration."),
    from_stacks: bool = typer.Option(False, "--from-stacks",
                                     help="Read real IDs from the deployed stacks' outputs (needs AWS credentials)."),
    region: str | None = typer.Option(None, "--region", help="AWS Region of the stacks (default: the project's)."),
) -> None:
    """Write the cluster configuration for `pcluster create-cluster` (placeholders unless --from-stacks)."""
    from fmcluster import checks, config
    from fmcluster.errors import ConfigError
    from fmcluster.parallelcluster.checks import PARALLELCLUSTER_CHECKS
    from fmcluster.parallelcluster.generate import GenerationError

    try:
        loaded = config.load(project)
        plan, _ = checks.validate(loaded)
        problems = [p for name, (_lvl, fn) in PARALLELCLUSTER_CHECKS.items()
                    if name not in checks.CHECKS for p in fn(loaded, plan)]
        if any(p.level == "error" for p in problems):
            raise ConfigError(problems)
        if loaded.project.orchestrator.type != "parallelcluster":
            line = loaded.line(("orchestrator", "type"))
            where = f"{loaded.file}:{line}" if line else str(loaded.file)
            typer.echo(f"{where}  orchestrator.type  is {loaded.project.orchestrator.type!r}, not 'parallelcluster' "
                       "(hint: set orchestrator.type: parallelcluster)", err=True)
            raise typer.Exit(2)
        cfn = None
        if from_stacks:
            import boto3

            cfn = boto3.client("cloudformation", region_name=region or loaded.project.region)
        text = render(loaded, plan, cfn=cfn, region=region)
    except ConfigError as exc:
        typer.echo(exc.report(), err=True)
        raise typer.Exit(exc.exit_code) from None
    except GenerationError as exc:
        typer.echo(f"{loaded.file}  {exc}", err=True)
        raise typer.Exit(2) from None
    except StackOutputsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    out.write_text(text, encoding="utf-8")
    typer.echo(f"wrote {out}")


if __name__ == "__main__":
    app()
