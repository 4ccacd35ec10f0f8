"""The IAM actions each command that calls AWS needs: all read-only except the Grafana service account and
token that ``dashboards push`` makes. docs/cli.md's "Commands that call AWS" shows them; ``tests/aws/test_permissions.py``
checks each against botocore's service models and against the calls the code makes.

An IAM action is the service's prefix (botocore's ``signingName``) and the API operation's name (the Service
Authorization Reference, docs.aws.amazon.com/service-authorization/latest/reference/, one page per service).
``sts:GetCallerIdentity`` needs no permission: no policy can deny it (STS API reference, GetCallerIdentity).
"""

from __future__ import annotations

COMMAND_ACTIONS: dict[str, tuple[str, ...]] = {
    "preflight": (
        "sts:GetCallerIdentity",
        "ec2:DescribeAvailabilityZones",
        "ec2:DescribeInstanceTypeOfferings",
        "ec2:DescribeCapacityReservations",   # a group on a reservation or capacity block
        "ec2:DescribeCapacityBlocks",         # a capacity block's UltraServer type
        "sagemaker:DescribeTrainingPlan",     # a group on a training plan
        "servicequotas:ListServiceQuotas",
        "ec2:DescribeSubnets",                # network.existing
        "fsx:DescribeFileSystems",            # storage.fsx.existing
        "ec2:DescribeNetworkInterfaces",      # storage.fsx.existing: its security groups
        "ec2:DescribeSecurityGroups",
        "sso:ListInstances",                  # Grafana with AWS_SSO
        "pcs:ListClusters",                   # orchestrator.type pcs: a cluster being created blocks ours
        "eks:DescribeAddonVersions",          # orchestrator.type hyperpod-eks: each add-on pin is offered
    ),
    "capacity search": (
        "ec2:DescribeCapacityBlockOfferings",
        "ec2:DescribeAvailabilityZones",
    ),
    "plan --prices": (
        "pricing:GetProducts",
    ),
    "dashboards push": (
        "cloudformation:DescribeStacks",      # the workspace ID, unless --workspace-id
        "grafana:DescribeWorkspace",
        "grafana:CreateWorkspaceServiceAccount",
        "grafana:ListWorkspaceServiceAccounts",
        "grafana:CreateWorkspaceServiceAccountToken",
        "grafana:DeleteWorkspaceServiceAccountToken",
        "grafana:DeleteWorkspaceServiceAccount",  # only to replace an EDITOR account an older fmcluster made
    ),
    "deploy": (
        "cloudformation:GetTemplate",  # the deployed templates the replacement guard compares with
        "dynamodb:GetItem",            # ParallelCluster: the compute fleet's status, when a change needs it stopped
        "ec2:DescribeInstances",       # --stop-fleet: the head node, to list its running jobs
        "ssm:SendCommand",             # --stop-fleet: squeue on the head node
        "ssm:GetCommandInvocation",
        "dynamodb:UpdateItem",         # --stop-fleet: STOP_REQUESTED, then START_REQUESTED
    ),
    "destroy": (
        # read what is deployed and what the stacks keep (deleted stacks too: CloudFormation keeps them 90 days)
        "cloudformation:DescribeStacks",
        "cloudformation:GetTemplate",
        "cloudformation:ListStackResources",
        "cloudformation:ListStacks",
        "cloudformation:UpdateTerminationProtection",
        "cloudformation:DeleteStack",          # and what each stack's resources need to be deleted
        "cloudformation:DescribeStackEvents",  # a DELETE_FAILED's reasons
        # describe what is kept (its size and state)
        "s3:ListBucket",                       # HeadBucket (OPERATION_ACTIONS)
        "s3:GetBucketVersioning",
        "logs:DescribeLogGroups",
        "kms:DescribeKey",
        "aps:DescribeWorkspace",
        "fsx:DescribeFileSystems",
        "fsx:DescribeDataRepositoryAssociations",
        "rds:DescribeDBClusters",
        "rds:DescribeDBInstances",
        "rds:DescribeDBSubnetGroups",
        "rds:DescribeDBClusterParameterGroups",
        "ec2:DescribeSecurityGroups",
        "secretsmanager:DescribeSecret",
        # what services left in the project's VPC, swept before the network (fmcluster.aws.enisweep)
        "ec2:DescribeVpcEndpoints",
        "ec2:DeleteVpcEndpoints",             # GuardDuty's endpoint
        "ec2:DescribeNetworkInterfaces",
        "ec2:DeleteNetworkInterface",         # the VPC CNI's and Lambda's, once available
        "ec2:DeleteSecurityGroup",            # GuardDuty's group
    ),
    "destroy --delete-retained": (
        "s3:ListBucketVersions",               # ListObjectVersions (OPERATION_ACTIONS)
        "s3:DeleteObject",                     # DeleteObjects (OPERATION_ACTIONS)
        "s3:DeleteObjectVersion",
        "s3:DeleteBucket",
        "logs:DeleteLogGroup",
        "kms:ScheduleKeyDeletion",
        "aps:DeleteWorkspace",
        "secretsmanager:DeleteSecret",
        "rds:DeleteDBInstance",
        "rds:ModifyDBCluster",                 # deletion protection off
        "rds:DeleteDBCluster",
        "rds:DeleteDBSubnetGroup",
        "rds:DeleteDBClusterParameterGroup",
        "ec2:DeleteSecurityGroup",
        "fsx:DeleteDataRepositoryAssociation",
        "fsx:DeleteFileSystem",
    ),
    "hyperpod status": (
        "cloudformation:DescribeStacks",  # the cluster's name: the NAME-cluster stack's HyperPodClusterArn output
        "sagemaker:DescribeCluster",
        "sagemaker:ListClusterNodes",
    ),
    "parallelcluster config --from-stacks": (
        "cloudformation:DescribeStacks",
    ),
    "status": (
        "cloudformation:DescribeStacks",      # the project's stacks (and a ParallelCluster cluster's own)
        "ec2:DescribeInstances",              # the nodes, by their tags (none, parallelcluster, pcs)
        "ec2:DescribeInstanceStatus",         # their EC2 status checks
        "dynamodb:GetItem",                   # parallelcluster: the compute fleet's status (parallelcluster-<name>)
        "sagemaker:DescribeCluster",          # hyperpod
        "sagemaker:ListClusterNodes",
        "eks:DescribeAddon",                  # hyperpod-eks: each add-on's health
        "pcs:GetCluster",                     # pcs
        "pcs:ListComputeNodeGroups",
        "pcs:ListQueues",
        "pcs:GetComputeNodeGroup",
        "aps:ListAlertManagerAlerts",         # the alerts firing (the alert manager's HTTP API, SigV4)
    ),
    "connect": (
        "cloudformation:DescribeStacks",      # NAME-cluster's outputs
        "ec2:DescribeInstances",              # the head, login or compute node, by its tags
        "sagemaker:ListClusterNodes",         # hyperpod: the controller or a login node
        "pcs:ListComputeNodeGroups",          # pcs: the login node group, for stacks without PcsLoginNodeGroupId
    ),
}
"""Command -> the IAM actions it may call, in the order it calls them. ``connect`` then runs the AWS CLI's ``aws ssm
start-session``, which needs ``ssm:StartSession`` on the target (:data:`CLI_ACTIONS`)."""

SIGNED_HTTP: dict[str, str] = {
    "aps:ListAlertManagerAlerts": "GET /workspaces/{workspaceId}/alertmanager/api/v2/alerts",
}
"""Actions fmcluster calls as signed HTTP requests, not through a botocore operation: the AMP alert manager's API
(AMP user guide, "ListAlertManagerAlerts"; ``fmcluster/aws/alerts.py``)."""

CLI_ACTIONS: dict[str, tuple[str, ...]] = {
    "connect": ("ssm:StartSession",),
}
"""What the AWS CLI a command runs calls with the same credentials (not fmcluster's own calls)."""


OPERATION_ACTIONS: dict[str, tuple[str, ...]] = {
    # "prefix:Operation" -> the IAM actions it needs, where they are not the operation's own name (Amazon S3 API
    # Reference, each operation's "Permissions")
    "s3:HeadBucket": ("s3:ListBucket",),
    "s3:ListObjectVersions": ("s3:ListBucketVersions",),
    "s3:DeleteObjects": ("s3:DeleteObject", "s3:DeleteObjectVersion"),  # versions: s3:DeleteObjectVersion
}
"""Operations whose IAM actions have other names."""
