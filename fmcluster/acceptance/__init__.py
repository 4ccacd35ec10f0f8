"""Acceptance: is the deployed cluster fit to train? Parsers for what the acceptance jobs print
(nccl-tests, NCCL_DEBUG=INFO, dcgmi diag, the node checks), the judge (figures per instance type
from the catalog) and the report. Pure Python: the job scripts are rendered by
:mod:`fmcluster.bootstrap.acceptance`."""

from fmcluster.acceptance.logs import AcceptanceError
from fmcluster.acceptance.pairs import DEFAULT_MARGIN, rounds
from fmcluster.acceptance.report import Report, build_report, to_text

__all__ = ["DEFAULT_MARGIN", "AcceptanceError", "Report", "build_report", "rounds", "to_text"]
