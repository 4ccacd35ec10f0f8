"""The ParallelCluster cluster inside ``NAME-cluster``: the bootstrap pointers, the node policy, and
(``create_cluster``) ParallelCluster's CloudFormation provider with a ``Custom::PclusterCluster`` resource.

Used by :class:`fmcluster.stacks.cluster.ClusterStack` when ``orchestrator.type`` is
``parallelcluster``. The configuration is :func:`fmcluster.generate.parallelcluster.cluster_config`
with tokens for the subnet, security groups, file system, policy, launcher and pointers.

Every node's custom action is the launcher, whose URL (its content hash) never changes; what it runs is named by
the node role's pointer, an SSM parameter this stack rewrites on every deploy (CloudFormation updates a parameter's
value in place). A new bundle changes the pointers, and the head node's OnNodeUpdated digest -- never a key
ParallelCluster refuses to update (:func:`fmcluster.generate.parallelcluster.custom_actions`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import (
    Acknowledgment,
    CfnOutput,
    CfnStack,
    CustomResource,
    Fn,
    Stack,
    Validations,
)
from aws_cdk import (
    aws_iam as iam,
)
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_ssm as ssm
from constructs import Construct
from fmcluster.stacks.tokens import AWS
from fmcluster.stacks.staging import staged_of
from fmcluster.bootstrap.parallelcluster import DispatchedBundles

from fmcluster.contracts import (
    BOOTSTRAP_ARGS_OUTPUT,
    BOOTSTRAP_OUTPUT,
    BOOTSTRAP_POINTER_OUTPUTS,
    CLUSTER_NAME_OUTPUT,
    COMPUTE_POINTER_ROLE,
    HEAD_POINTER_ROLE,
    HEAD_NODE_IP_OUTPUT,
    NODE_POLICY_OUTPUT,
    AccountingContract,
    BootstrapContract,
    MetricsContract,
    NetworkContract,
    StorageContract,
    bootstrap_pointer_name,
    export_name,
    node_policy_name,
)
from fmcluster.generate import parallelcluster as generate
from fmcluster.plan import ClusterPlan

PROVIDER_TEMPLATE = ("https://${AWS::Region}-aws-parallelcluster.s3.${AWS::Region}.${AWS::URLSuffix}"
                     "/parallelcluster/%s/templates/custom_resource/cluster.yaml")


@dataclass(frozen=True)
class Pointer:
    """What a node role's launcher runs: a script's S3 URL, its sha256, and its arguments (tokens allowed)."""

    script_uri: str
    sha256: str
    args: Sequence[str] = ()

    def value(self) -> str:
        """The parameter's value, as the launcher reads it: ``<s3 URL> <sha256> [args...]``."""
        return Fn.join(" ", [self.script_uri, self.sha256, *self.args])


POINTER_IDS = {HEAD_POINTER_ROLE: "BootstrapPointerHeadNode", COMPUTE_POINTER_ROLE: "BootstrapPointerCompute"}
POINTER_OUTPUTS_TEXT = {
    "head_pointer_arn": "SSM parameter naming what the head node's launcher runs (its custom actions' argument)",
    "compute_pointer_arn": "SSM parameter naming what compute nodes' launcher runs (the queues' custom action argument)",
    "head_digest": "sha256 of the head node's dispatcher (the argument of its OnNodeUpdated)",
}


class ParallelClusterCluster(Construct):
    """The bootstrap pointers, the node policy, their outputs, and -- unless ``create_cluster: false`` -- the
    cluster itself.

    ``launcher_uri``: S3 URI of the launcher, every node's custom action. ``pointers``: per node role
    (``HEAD_POINTER_ROLE``, ``COMPUTE_POINTER_ROLE``) what the launcher runs there; each becomes an SSM parameter.
    ``bootstrap_read_arns``: the S3 object ARNs (or ``<bucket-arn>/<prefix>/*``) the nodes must read to run them.
    ``launcher_read_arn``: the launcher's object ARN, which ParallelCluster's provider checks (the only script a
    custom action names).
    """

    def __init__(self, scope: Construct, construct_id: str, *, plan: ClusterPlan,
                 network: NetworkContract, storage: StorageContract | None, launcher_uri: str,
                 pointers: Mapping[str, Pointer], bootstrap_read_arns: Sequence[str],
                 metrics: MetricsContract | None = None, launcher_read_arn: str | None = None,
                 accounting: AccountingContract | None = None) -> None:
        super().__init__(scope, construct_id)
        settings = plan.pcluster
        project = plan.project
        stack = Stack.of(self)
        self.cluster_name = plan.pcluster_name
        self.launcher_read_arn = launcher_read_arn
        self.accounting = accounting
        self.pointers = {role: ssm.StringParameter(
            self, POINTER_IDS[role],
            parameter_name=bootstrap_pointer_name(project, role),
            string_value=pointers[role].value(),
            # names the role alone, never the bundle: the value is what deploys change
            description=f"fmcluster {project}: what the {role} nodes' launcher runs (<s3 URL> <sha256> [args])",
            tier=ssm.ParameterTier.STANDARD,
        ) for role in (HEAD_POINTER_ROLE, COMPUTE_POINTER_ROLE)}
        # Each attribute read (``parameter_arn``, ``managed_policy_arn``) is a jsii round trip returning the same
        # token: each is read once.
        pointer_arns = {role: parameter.parameter_arn for role, parameter in self.pointers.items()}
        self.bootstrap = BootstrapContract(
            launcher_uri=launcher_uri,
            head_pointer_arn=pointer_arns[HEAD_POINTER_ROLE],
            compute_pointer_arn=pointer_arns[COMPUTE_POINTER_ROLE],
            head_digest=pointers[HEAD_POINTER_ROLE].sha256,
        )

        self.node_policy = iam.ManagedPolicy(
            self, "NodePolicy",
            managed_policy_name=node_policy_name(project),
            # Description is create-only and the name is custom: a description that followed the settings (metrics on
            # or off) would make CloudFormation replace a custom-named policy, which it refuses (fmcluster.guard).
            description=f"fmcluster {project}: what ParallelCluster nodes need (bootstrap bundle, metrics)",
            document=iam.PolicyDocument.from_json({
                "Version": "2012-10-17",
                "Statement": generate.node_policy_statements(
                    bootstrap_read_arns, metrics, list(pointer_arns.values())),
            }),
        )
        self.node_policy_arn = self.node_policy.managed_policy_arn
        for text in _nag_texts(stack, bootstrap_read_arns):
            if "*" in text:
                Validations.of(self.node_policy).acknowledge(Acknowledgment(
                    id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{text}]",
                    reason="Read-only s3:GetObject under the bootstrap bundle's own key prefix (files named by the "
                           "renderer); no other prefix, bucket or action.",
                ))
        CfnOutput(stack, NODE_POLICY_OUTPUT, value=self.node_policy_arn,
                  description="Managed policy for ParallelCluster nodes (AdditionalIamPolicies)",
                  export_name=export_name(project, NODE_POLICY_OUTPUT))
        CfnOutput(stack, CLUSTER_NAME_OUTPUT, value=self.cluster_name,
                  description="ParallelCluster cluster name (and its stack's; fmcluster status reads both)")
        for key, field in BOOTSTRAP_POINTER_OUTPUTS.items():
            CfnOutput(stack, key, value=getattr(self.bootstrap, field), description=POINTER_OUTPUTS_TEXT[field])

        self.configuration = generate.cluster_config(
            plan, network=network, storage=storage, bootstrap=self.bootstrap,
            node_policy_arns=[self.node_policy_arn], region=AWS.REGION, partition=AWS.PARTITION,
            accounting=accounting,
        )
        self.provider: CfnStack | None = None
        self.cluster: CustomResource | None = None
        if settings.create_cluster:
            self._add_cluster(project, settings.version, settings.deletion_policy, settings.extra_iam_policy_arns)

    def _add_cluster(self, project: str, version: str, deletion_policy: str, extra_policies: list[str]) -> None:
        # The provider's Lambda creates the cluster stack, which attaches our node policies to the
        # roles it makes under /parallelcluster/<cluster>/: allow exactly that, nothing else.
        roles_pattern = f"arn:${{AWS::Partition}}:iam::${{AWS::AccountId}}:role/parallelcluster/{self.cluster_name}/*"
        roles = Fn.sub(roles_pattern)
        statements = [iam.PolicyStatement(
            actions=["iam:AttachRolePolicy", "iam:DetachRolePolicy"],
            resources=[roles],
            conditions={"ArnEquals": {"iam:PolicyARN": [self.node_policy_arn, *extra_policies]}},
        )]
        if self.launcher_read_arn is not None:
            # The provider's Lambda reads only parallelcluster-* buckets (aws-parallelcluster
            # cloudformation/custom_resource/cluster.yaml, its policies; FACTS.md section 5): without this its check
            # of the custom actions' script URL (the launcher, every action's script) gets a 403 and reports a
            # validation warning.
            statements.append(iam.PolicyStatement(sid="ReadCustomActionScripts", actions=["s3:GetObject"],
                                                  resources=[self.launcher_read_arn]))
        if self.accounting is not None:
            # ParallelCluster validates SlurmSettings.Database.PasswordSecretArn with secretsmanager:DescribeSecret
            # (PasswordSecretArnValidator, pcluster/validators/directory_service_validators.py, 3.16.1); without it
            # the provider reports "Cannot validate secret ... lack of permissions" (validators/common.py). The head
            # node's own GetSecretValue on it ParallelCluster grants itself (AllowGettingSlurmDbSecretValue,
            # pcluster/templates/cdk_builder_utils.py).
            statements.append(iam.PolicyStatement(sid="DescribeAccountingSecret",
                                                  actions=["secretsmanager:DescribeSecret"],
                                                  resources=[self.accounting.secret_arn]))
        attach = iam.ManagedPolicy(
            self, "ProviderAttachPolicy",
            description=f"fmcluster {project}: let the ParallelCluster provider attach the node policies",
            statements=statements,
        )
        Validations.of(attach).acknowledge(Acknowledgment(
            id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{_sub_nag_text(roles_pattern)}]",
            reason="ParallelCluster names the node roles when it creates the cluster; the path is this cluster's "
                   "own and a condition limits the policies to fmcluster's node policy and the project's.",
        ))
        self.provider = CfnStack(
            self, "Provider",
            template_url=Fn.sub(PROVIDER_TEMPLATE % version),
            parameters={"AdditionalIamPolicies": attach.managed_policy_arn},
        )
        self.cluster = CustomResource(
            self, "Cluster",
            resource_type="Custom::PclusterCluster",
            service_token=self.provider.get_att("Outputs.ServiceToken").to_string(),
            properties={
                "ClusterName": self.cluster_name,
                "ClusterConfiguration": self.configuration,
                "DeletionPolicy": deletion_policy,
            },
        )
        # The configuration names the pointers (a Ref each, in their ARNs): CloudFormation writes their new values
        # before ParallelCluster runs the head node's OnNodeUpdated.
        stack = Stack.of(self)
        CfnOutput(stack, HEAD_NODE_IP_OUTPUT, value=self.cluster.get_att_string("headNode.privateIpAddress"),
                  description="Private IP of the ParallelCluster head node; `fmcluster connect PROJECT` starts "
                              "a Session Manager session on it (no key pair, no SSH ingress)")
        CfnOutput(stack, "ParallelClusterValidationMessages",
                  value=self.cluster.get_att_string("validationMessages"),
                  description="Warnings ParallelCluster reported when it created or updated the cluster")


def _sub_nag_text(pattern: str) -> str:
    """``Fn.sub(pattern)`` (no tokens in ``pattern``) as cdk-nag names it in a finding: ``<AWS::Partition>``..."""
    return re.sub(r"\$\{([^}]+)\}", lambda m: f"<{m.group(1)}>", pattern)


def _nag_texts(stack: Stack, values: Sequence[str]) -> list[str]:
    """Values as cdk-nag names them in a finding: ``<AWS::Partition>``, ``<Logical.Attr>`` for tokens (all resolved in
    one jsii round trip)."""
    resolved = stack.resolve(list(values))

    def text(part: object) -> str:
        if isinstance(part, str):
            return part
        if isinstance(part, dict) and "Ref" in part:
            return f"<{part['Ref']}>"
        if isinstance(part, dict) and "Fn::GetAtt" in part:
            return f"<{'.'.join(part['Fn::GetAtt'])}>"
        if isinstance(part, dict) and "Fn::ImportValue" in part:
            return text(part["Fn::ImportValue"])
        if isinstance(part, dict) and "Fn::Join" in part:
            sep, parts = part["Fn::Join"]
            return sep.join(text(p) for p in parts)
        if isinstance(part, dict) and "Fn::Sub" in part and isinstance(part["Fn::Sub"], str):
            return _sub_nag_text(part["Fn::Sub"])
        return json.dumps(part)

    return [text(part) for part in resolved]


def build(stack: Any, bundles: DispatchedBundles, metrics: MetricsContract | None) -> None:
    """The archive of per-instance-type bundles, a dispatcher per node role, and the launcher every node runs as its
    custom action, in ``stack`` (:data:`fmcluster.stacks.cluster.BUILDERS`)."""
    archive = s3_assets.Asset(stack, "BootstrapBundles", path=str(bundles.bundles))
    launcher = s3_assets.Asset(stack, "BootstrapLauncher", path=str(bundles.launcher))
    dispatchers = {role: s3_assets.Asset(stack, POINTER_IDS[role].replace("Pointer", "Dispatcher"), path=str(path))
                   for role, path in bundles.dispatchers.items()}
    # the archive of bundles, and the metrics workspace the nodes' agents remote-write to
    # Each asset attribute read is a jsii round trip returning the same token: each URL and ARN is read once.
    launcher_url, archive_url = launcher.s3_object_url, archive.s3_object_url
    args = [archive_url, *([metrics.remote_write_url] if metrics else [])]
    reads = [a.bucket.arn_for_objects(a.s3_object_key) for a in (launcher, *dispatchers.values(), archive)]
    reads += staged_of(stack).read_arns  # the monitoring artefacts staged at deploy, beside the archive (staging.py)
    ParallelClusterCluster(
        stack, "ParallelCluster", plan=stack.plan, network=stack.network, storage=stack.storage,
        launcher_uri=launcher_url,
        pointers={role: Pointer(a.s3_object_url, bundles.digests[role], args) for role, a in dispatchers.items()},
        bootstrap_read_arns=reads, metrics=metrics, accounting=stack.accounting,
        launcher_read_arn=reads[0],
    )
    CfnOutput(stack, BOOTSTRAP_OUTPUT, value=launcher_url,
              description="The custom actions' script (the launcher); its arguments are the Bootstrap*Pointer outputs")
    CfnOutput(stack, BOOTSTRAP_ARGS_OUTPUT, value=archive_url,
              description="Archive of the bootstrap bundles, one per instance type (the pointers name it)")
