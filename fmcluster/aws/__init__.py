"""The side path that talks to AWS, for the CLI's account commands only; synthesis never calls it.

- :mod:`~fmcluster.aws.stacks`: read contracts back from deployed stacks' outputs (boto3);
- :mod:`~fmcluster.aws.grafana`: push dashboards to an Amazon Managed Grafana workspace;
- :mod:`~fmcluster.aws.pricing`: on-demand prices from the AWS Price List API (``plan --prices``).
"""


class StackOutputsError(RuntimeError):
    """A deployed stack is missing, or lacks an output the caller needs."""
