"""CDK stacks, one per file, installed as ``fmcluster.stacks``. Each takes its plan section and the
contracts of the stacks before it, never raw YAML or the whole project; :mod:`fmcluster.stacks.app`
builds a project's stacks in order."""
