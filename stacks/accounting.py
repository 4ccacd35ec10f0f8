"""The Slurm accounting database: Aurora MySQL Serverless v2, encrypted, retained, reachable from one group only.

Why Aurora Serverless v2 rather than a small RDS for MySQL instance: accounting is a trickle of inserts and the
occasional ``sreport`` over months, which a 0.5 ACU floor serves without choosing (and outgrowing) an instance
class; storage grows by itself; and it is what AWS's own samples give ParallelCluster (aws-samples/
awsome-distributed-training ``1.architectures/8.accounting-database/cf_database-accounting.yaml`` and
aws-samples/aws-hpc-recipes ``recipes/db/slurm_accounting_db/assets/serverless-database.yaml``), so a reader
can compare. Both engines need a DB subnet group in two Availability Zones.

Everything stateful is retained (``DeletionPolicy``/``UpdateReplacePolicy: Retain``) and the cluster has deletion
protection: job history is the record of who used what, and a stack delete must not take it. What the retained
cluster still uses is retained with it (its DB subnet group, cluster parameter group and security group: RDS and EC2
refuse to delete them under it); the client group and the ingress rules go. No physical name is
set (``DBClusterIdentifier`` is create-only; a custom name would wedge a replacement).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from aws_cdk import Acknowledgment, CfnOutput, Fn, RemovalPolicy, Stack, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_rds as rds
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct
from fmcluster.stacks.tokens import is_unresolved

from fmcluster.config.accounting import AccountingDatabase as DatabaseSettings
from fmcluster.contracts import ACCOUNTING_OUTPUTS, ACCOUNTING_USER, AccountingContract, NetworkContract, export_name
from fmcluster.plan.cluster import ClusterPlan

PORT = 3306
"""MySQL's port; ParallelCluster's ``Database.Uri`` defaults to it (``DatabaseUriValidator``), HyperPod's
``AccountingDatabase.Port`` too (botocore: "The default is 3306")."""
ENGINE = "aurora-mysql"
ENGINE_VERSION = "8.0.mysql_aurora.3.13.0"
"""Aurora MySQL 3 (MySQL 8.0 compatible): the newest version cfn-lint 1.58's RDS data lists. AWS's samples pin
3.07.1 and 3.03.0, which cfn-lint now reports deprecated (W3690: "cannot be used to create new RDS DB clusters");
the cfn-lint test fails again when this one is."""
PARAMETER_FAMILY = "aurora-mysql8.0"
PARAMETERS = {
    # TLS only: both AWS samples set it and ParallelCluster's slurmdbd connects under it (an orchestrator whose
    # slurmdbd is not known to: OFF, trait accounting_tls; a MySQL 8 client still asks for TLS by default,
    # ssl-mode PREFERRED, MySQL reference manual "Command Options for Encrypted Connections")
    "require_secure_transport": "ON",
    # SchedMD's accounting guide ("MySQL Configuration") asks for at least 900 seconds so long purges/rollups
    # are not killed half way
    "innodb_lock_wait_timeout": "900",
    # the slowquery log the cluster exports to CloudWatch Logs exists only with these, set in the DB cluster
    # parameter group (Aurora User Guide, "Configuring your database to monitor slow SQL queries with Database
    # Insights": slow_query_log 1, long_query_time, log_output FILE); 10 s, not the guide's 1.0: slurmdbd's hourly
    # rollups are long by nature, and what is worth seeing here is a query that holds slurmctld's RPCs up
    "slow_query_log": "1",
    "long_query_time": "10",
    "log_output": "FILE",
}
ADMIN_USER = ACCOUNTING_USER
"""The master user slurmdbd logs in as: it creates its own schema (HyperPod: "The database user must be able to
create the schema and to read from and write to it")."""
PASSWORD_LENGTH = 32
SECRET_FORMATS = ("password", "credentials")


class SlurmAccountingDatabase(Construct):
    """An Aurora MySQL Serverless v2 cluster with one ``db.serverless`` writer, its generated secret, a DB subnet
    group and two security groups: the database's (port 3306 from the client group and ``clients`` only, no
    egress) and a client group to put on slurmdbd's host.

    ``secret_format``: ``password`` (the secret is the password itself: ParallelCluster) or ``credentials``
    (JSON ``{"username", "password"}``: HyperPod; the key names are the RDS convention, unconfirmed for
    HyperPod).
    """

    def __init__(self, scope: Construct, construct_id: str, *, settings: DatabaseSettings, vpc_id: str,
                 subnet_ids: Sequence[str], clients: Sequence[str] = (), secret_format: str = "password",
                 require_tls: bool = True) -> None:
        super().__init__(scope, construct_id)
        if secret_format not in SECRET_FORMATS:
            raise ValueError(f"secret_format {secret_format!r}: one of {', '.join(SECRET_FORMATS)}")
        literal = [s for s in subnet_ids if not is_unresolved(s)]
        if len(subnet_ids) < 2 or len(set(literal)) < len(literal):
            # an RDS DB subnet group spans at least two Availability Zones (RDS User Guide, "Working with a DB
            # instance in a VPC": "each DB subnet group should have subnets in at least two Availability Zones")
            raise ValueError(f"the accounting database needs subnets in two Availability Zones, got {list(subnet_ids)}")

        self.security_group = ec2.CfnSecurityGroup(
            self, "SecurityGroup", vpc_id=vpc_id,
            group_description="Slurm accounting database: MySQL from the accounting clients only",
            # no egress: a database opens no connections (the rule CDK writes for allowAllOutbound: false)
            security_group_egress=[ec2.CfnSecurityGroup.EgressProperty(
                ip_protocol="icmp", from_port=252, to_port=86, cidr_ip="255.255.255.255/32",
                description="Disallow all traffic")])
        self.client_security_group = ec2.CfnSecurityGroup(
            self, "ClientSecurityGroup", vpc_id=vpc_id,
            group_description="Slurm accounting clients (the slurmdbd host): MySQL to the accounting database",
            security_group_egress=[ec2.CfnSecurityGroup.EgressProperty(
                ip_protocol="tcp", from_port=PORT, to_port=PORT,
                destination_security_group_id=self.security_group.attr_group_id,
                description="MySQL to the accounting database")])
        sources = [self.client_security_group.attr_group_id, *clients]
        for i, source in enumerate(sources):
            ec2.CfnSecurityGroupIngress(
                self, "FromClient" if i == 0 else f"FromClient{i}", group_id=self.security_group.attr_group_id,
                ip_protocol="tcp", from_port=PORT, to_port=PORT, source_security_group_id=source,
                description="MySQL from an accounting client")

        if secret_format == "password":
            generate = secretsmanager.CfnSecret.GenerateSecretStringProperty(
                password_length=PASSWORD_LENGTH, exclude_punctuation=True)
            password = "{{resolve:secretsmanager:${Secret}}}"
        else:
            generate = secretsmanager.CfnSecret.GenerateSecretStringProperty(
                password_length=PASSWORD_LENGTH, exclude_punctuation=True,
                secret_string_template=json.dumps({"username": ADMIN_USER}), generate_string_key="password")
            password = "{{resolve:secretsmanager:${Secret}:SecretString:password}}"
        # letters and digits only: the value is written verbatim into slurmdbd.conf (StoragePass=...)
        self.secret = secretsmanager.CfnSecret(
            self, "Secret", description="Slurm accounting database password", generate_secret_string=generate)

        self.subnet_group = subnet_group = rds.CfnDBSubnetGroup(
            self, "SubnetGroup", db_subnet_group_description="Slurm accounting database",
            subnet_ids=list(subnet_ids))
        self.parameters = parameters = rds.CfnDBClusterParameterGroup(
            self, "Parameters", description="Slurm accounting database", family=PARAMETER_FAMILY,
            parameters=PARAMETERS | ({} if require_tls else {"require_secure_transport": "OFF"}))
        self.cluster = rds.CfnDBCluster(
            self, "Cluster", engine=ENGINE, engine_version=ENGINE_VERSION, port=PORT,
            master_username=ADMIN_USER,
            # a dynamic reference: CloudFormation resolves it at deploy time, the template never holds the password
            master_user_password=Fn.sub(password, {"Secret": self.secret.ref}),
            db_subnet_group_name=subnet_group.ref, db_cluster_parameter_group_name=parameters.ref,
            vpc_security_group_ids=[self.security_group.attr_group_id],
            storage_encrypted=True, deletion_protection=True, copy_tags_to_snapshot=True,
            backup_retention_period=settings.backup_retention_days,
            enable_cloudwatch_logs_exports=["error", "slowquery"],
            serverless_v2_scaling_configuration=rds.CfnDBCluster.ServerlessV2ScalingConfigurationProperty(
                min_capacity=settings.min_capacity_acu, max_capacity=settings.max_capacity_acu))
        self.writer = rds.CfnDBInstance(
            self, "Writer", db_cluster_identifier=self.cluster.ref, db_instance_class="db.serverless",
            engine=ENGINE, publicly_accessible=False, auto_minor_version_upgrade=True)
        # Retained with the database: what it still uses. RDS refuses to delete a subnet group or cluster parameter
        # group a cluster uses (DeleteDBSubnetGroup, DeleteDBClusterParameterGroup) and EC2 a security group its
        # network interfaces carry, so deleting them under a retained cluster left the stack DELETE_FAILED (FACTS.md
        # section 5). Retained, they keep the database in the network's VPC: `fmcluster destroy` keeps NAME-network
        # until the database is deleted (fmcluster/aws/teardown.py).
        for resource in (self.cluster, self.writer, self.secret, self.subnet_group, self.parameters,
                         self.security_group):
            resource.apply_removal_policy(RemovalPolicy.RETAIN)

        self.contract = AccountingContract(
            endpoint=self.cluster.attr_endpoint_address, port=PORT, user_name=ADMIN_USER,
            secret_arn=self.secret.ref, client_security_group_id=self.client_security_group.attr_group_id)
        self._acknowledge()

    def _acknowledge(self) -> None:
        reasons = {
            self.cluster: {
                "RDS6": "slurmdbd logs in with a user name and password (StoragePass); it cannot use IAM database "
                        "authentication",
                "RDS11": "ParallelCluster and HyperPod default to 3306; the security group admits the accounting "
                         "clients alone, whatever the port",
                "RDS14": "Backtrack is not available on Aurora Serverless v2; point-in-time restore from the "
                         "retained backups covers the same need",
            },
            self.secret: {
                "SMG4": "ParallelCluster copies the password into slurmdbd.conf once (a rotation needs "
                        "update_slurm_database_password.sh on the head node); rotating it behind slurmdbd's back "
                        "stops accounting",
            },
        }
        for resource, rules in reasons.items():
            for rule, reason in rules.items():
                Validations.of(resource).acknowledge(Acknowledgment(id=f"AwsSolutions::AwsSolutions-{rule}",
                                                                    reason=reason))


class AccountingStack(Stack):
    """``NAME-accounting``: the Slurm accounting database of a project whose records live in one
    (``plan.cluster.accounting_store == "database"``), in the network's two database subnets. A stack of its own,
    not the storage stack: its lifetime and replacement rules are its own, and the guard compares it alone. Its
    contract goes to the cluster stack through exports (:data:`fmcluster.contracts.ACCOUNTING_OUTPUTS`).

    How the secret holds the credentials and who else may connect are the orchestrator's traits
    (``accounting_secret``, ``accounting_node_clients``)."""

    def __init__(self, scope: Construct, construct_id: str, *, plan: ClusterPlan, network: NetworkContract,
                 **kwargs) -> None:
        super().__init__(scope, construct_id, description=f"fmcluster {plan.project}: Slurm accounting database",
                         **kwargs)
        driver = plan.driver
        clients = (network.node_security_group_id,) if driver.accounting_node_clients else ()
        self.database = SlurmAccountingDatabase(
            self, "Database", settings=plan.accounting.database, vpc_id=network.vpc_id,
            subnet_ids=network.database_subnet_ids, clients=clients, secret_format=driver.accounting_secret,
            require_tls=driver.accounting_tls)
        self.contract = self.database.contract
        what = {"endpoint": "The Slurm accounting database's writer endpoint",
                "port": "The Slurm accounting database's MySQL port",
                "secret_arn": "The secret holding the Slurm accounting database's password",
                "client_security_group_id": "The security group of slurmdbd's host (the database admits it)"}
        for key, field in ACCOUNTING_OUTPUTS.items():
            CfnOutput(self, key, value=str(getattr(self.contract, field)), description=what[field],
                      export_name=export_name(plan.project, key))
