"""The acceptance parsers and judge against recorded and synthetic logs (fixtures/README.md)."""

from __future__ import annotations

import shutil
from pathlib import Path
from statistics import mean, median

import pytest

from fmcluster.acceptance import AcceptanceError, build_report
from fmcluster.acceptance.dcgm import parse_dcgm_diag
from fmcluster.acceptance.logs import read_log
from fmcluster.acceptance.nccl import parse_nccl_tests, parse_row, parse_transport
from fmcluster.acceptance.pairs import ring, rounds, slow_nodes

FIXTURES = Path(__file__).parent / "fixtures"
P5_LOG = FIXTURES / "p5-pair/logs/nccl-train-pair-1.log"


def fails(report) -> list[str]:
    return [f"{f.file}: {f.message}" for f in report.findings if f.level == "fail"]


def test_the_published_p5_table_parses_column_by_column():
    log = read_log(P5_LOG)
    run = parse_nccl_tests(log.lines)
    assert run.test == "all_reduce_perf" and run.complete and log.rc == 0
    assert [r.size for r in run.rows] == [8 * 2**i for i in range(32)]
    assert len(run.ranks) == 16 and run.hosts == ("ip-10-1-0-11", "ip-10-1-0-12")
    big = run.row(16 * 2**30)
    # The README's last line: 17179869184 4294967296 float sum -1 66132 259.78 487.09 0 66109 259.87 487.26 0
    assert (big.count, big.dtype, big.redop, big.root) == (4294967296, "float", "sum", -1)
    assert (big.out_of_place.time_us, big.out_of_place.algbw, big.out_of_place.busbw) == (66132, 259.78, 487.09)
    assert (big.in_place.time_us, big.in_place.algbw, big.in_place.busbw, big.in_place.wrong) == (66109, 259.87, 487.26, 0)
    # Hand-computed from nccl-tests' definitions (doc/PERFORMANCE.md): algbw = S / t, busbw = algbw * 2(n-1)/n.
    for row in run.rows[-8:]:
        for res in (row.out_of_place, row.in_place):
            assert res.algbw == pytest.approx(row.size / res.time_us / 1e3, abs=0.01)
            assert res.busbw == pytest.approx(res.algbw * 2 * 15 / 16, abs=0.02)
    assert run.out_of_bounds == 0
    footer = mean(float(line.split()[7]) for line in log.lines if parse_row(line))
    assert run.avg_busbw == pytest.approx(footer, rel=1e-5)


def test_p5_pair_passes_against_the_sourced_figures_and_reports_the_line_rate_fraction():
    report = build_report(FIXTURES / "p5-pair")
    assert not report.failed, fails(report)
    (run,) = report.runs
    assert run["line_rate_fraction"] == round(487.09 / (3200 / 8), 3)  # 1.218 of 400 GB/s
    refs = {r["size"]: (r["busbw"], r["reference"], r["pass"]) for r in run["references"]}
    assert refs == {16 * 2**30: (487.09, 487.0, True), 512 * 2**20: (393.34, 393.0, True)}
    assert {n["host"]: n["efa_fi_info"] for n in report.nodes} == {"ip-10-1-0-11": 32, "ip-10-1-0-12": 32}


def test_a_p5_pair_below_the_reference_fails_naming_the_file(tmp_path: Path):
    slow = tmp_path / "slow.log"
    slow.write_text(P5_LOG.read_text().replace("487.09", "401.00"))
    report = build_report(slow)
    assert report.failed
    (message,) = fails(report)
    assert message.startswith("slow.log: ") and "401.0 GB/s" in message and "487.0 GB/s" in message


def test_without_a_sourced_figure_there_is_no_pass_or_fail_on_bandwidth(tmp_path: Path):
    # The p5en pairs: p5en has no published figure; a slow pair alone (no ring) is no failure.
    single = tmp_path / "pair.log"
    shutil.copy(FIXTURES / "p5en-slow/logs/nccl-train-pair-1.log", single)
    report = build_report(single)
    assert not report.failed and report.runs[0]["references"] == []
    assert report.runs[0]["line_rate_fraction"] == pytest.approx(289.82 / 400, abs=0.001)


def test_the_slow_node_is_caught_and_only_it():
    report = build_report(FIXTURES / "p5en-slow")
    values = [r["rows"][-1]["out_of_place"]["busbw"] for r in report.runs]
    assert len(values) == 6
    assert [s["host"] for s in report.slow] == ["ip-10-1-0-13"]
    assert report.slow[0]["median"] == pytest.approx(median(values))
    assert report.failed and any("slow node ip-10-1-0-13" in m for m in fails(report))


def test_socket_fallback_is_caught():
    report = build_report(FIXTURES / "p6-b200-socket")
    (message,) = fails(report)
    assert message.startswith("logs/nccl-train-all_reduce_perf.log: NCCL fell back to sockets")
    assert report.runs[0]["transport"]["networks"] == ["Socket"]
    notes = [f.message for f in report.findings if f.level == "note"]
    assert any("ibp0" in n for n in notes)


def test_a_truncated_log_gives_a_clear_message():
    report = build_report(FIXTURES / "truncated")
    (message,) = fails(report)
    assert message == ("logs/nccl-train-all_gather_perf.log: truncated: the all_gather_perf table stops at 64 MiB of "
                       "16 GiB and has no '# Avg bus bandwidth' line nor FMC-END; the job was killed or timed out "
                       "(rerun it; `sacct -j JOBID` says why)")
    assert report.runs[0]["line_rate_fraction"] is None


def test_gb200_dcgm_failure_names_the_gpu_and_the_nvlink_count():
    report = build_report(FIXTURES / "gb200")
    assert fails(report) == [("logs/dcgm-ip-10-1-0-32.log: ip-10-1-0-32: dcgmi diag pcie failed on GPU2: "
                             "Only 16 NvLinks are up out of the expected 18")]
    in_domain = report.runs[0]
    assert in_domain["scope"] == "in-domain" and in_domain["line_rate_fraction"] is None
    assert in_domain["ranks"] == 72


GB200_RUN = FIXTURES / "gb200/logs/nccl-nvl72-in-domain-all_reduce_perf.log"
NET_CHANNEL = ("ip-10-1-0-31:41233:41280 [0] NCCL INFO Channel 00/0 : 4[0] -> 0[0] [receive] via NET/Libfabric/0/GDRDMA")


@pytest.mark.parametrize(("change", "expected"), [
    (lambda t: t.replace("state 3 healthMask 0x0", "state 2 healthMask 0x0", 3),
     "the NVLink fabric is not ready on some GPUs (state 2; 3 = completed)"),
    (lambda t: t.replace("cliqueId 0x7fff state 3", "cliqueId 0x7ffe state 3", 36),
     "the ranks span 2 NVLink domains (fabric UUID, clique): not one UltraServer"),
    (lambda t: t.replace("healthMask 0x0", "healthMask 0x2", 1), "1 GPU(s) report a non-zero NVLink fabric healthMask"),
    (lambda t: t.replace("# nccl-tests version", NET_CHANNEL + "\n# nccl-tests version", 1),
     "1 channel connection(s) of the in-domain run went over the network (Libfabric), not NVLink"),
    (lambda t: "".join(line + "\n" for line in t.splitlines() if " MNNVL " not in line),
     "no 'MNNVL ... fabric UUID' lines: NCCL saw no multi-node NVLink fabric"),
])
def test_an_in_domain_run_must_stay_on_one_healthy_nvlink_fabric(tmp_path: Path, change, expected):
    assert not fails(build_report(GB200_RUN)), "the fixture itself passes"
    (tmp_path / "run.log").write_text(change(GB200_RUN.read_text()))
    found = fails(build_report(tmp_path / "run.log"))
    assert any(expected in m for m in found), found


def test_mnnvl_lines_parse_as_nccl_prints_them():
    tr = parse_transport(GB200_RUN.read_text().splitlines())
    assert len(tr.fabric) == 72 and {f.state for f in tr.fabric} == {3}
    assert {f.domain for f in tr.fabric} == {("8c7e1d2a90b34f51.6a2f0c3e7d914b28", "0x7fff")}
    assert not tr.channel_nets


def test_a_wrapped_dcgm_warning_is_joined():
    lines = ["Successfully ran diagnostic for group.",
             "|-----  Deployment  --------+------------------------------------------------|",
             "| software                  | Fail                                           |",
             "|                           | GPU0: Fail                                     |",
             "| Warning: GPU0             | Persistence mode for GPU 0 is disabled. Enabl  |",
             "|                           | e persistence mode by running nvidia-smi -pm 1 |",
             "+---------------------------+------------------------------------------------+"]
    diag = parse_dcgm_diag(lines)
    assert diag.complete and [t.name for t in diag.failed] == ["software"]
    assert diag.failed[0].warnings == ["Persistence mode for GPU 0 is disabled. Enable persistence mode by running nvidia-smi -pm 1"]


@pytest.mark.parametrize("change, expected", [
    (("fi_info=32 sysfs=32", "fi_info=31 sysfs=32", 1), "ip-10-1-0-11: fi_info -p efa shows 31 EFA devices; p5.48xlarge has 32"),
    (("FMC-NODE ip-10-1-0-12 health healthy", "FMC-NODE ip-10-1-0-12 health unhealthy: gpu: persistence mode is Disabled", 1),
     "ip-10-1-0-12: the bootstrap's health check says unhealthy: gpu: persistence mode is Disabled"),
    (("FMC-END rc=0\n", "", 1), "truncated: no FMC-END line"),
])
def test_node_checks_fail_on_wrong_efa_count_unhealthy_node_or_cut_log(tmp_path: Path, change, expected):
    text = (FIXTURES / "p5-pair/logs/node-train.log").read_text()
    (tmp_path / "node.log").write_text(text.replace(*change))
    report = build_report(tmp_path / "node.log")
    assert any(expected in m for m in fails(report)), fails(report)


def info(msg: str) -> str:
    return f"ip-10-1-0-11:4101:4150 [3] NCCL INFO {msg}"


def test_transport_lines_as_nccl_and_aws_ofi_nccl_print_them():
    tr = parse_transport([
        info("NET/Plugin: Loaded net plugin AWS Libfabric (v10)"),
        info("NET/OFI Initializing aws-ofi-nccl 1.22.0"),
        info("NET/OFI Selected provider is efa, fabric is efa-direct (found 16 nics)"),
        info("Using network AWS Libfabric"),
        info("Channel 03/0 : 8[3] -> 0[3] [receive] via NET/AWS Libfabric/3/GDRDMA"),
        info("Channel 03/0 : 0[3] -> 8[3] [send] via NET/AWS Libfabric/3(1)/GDRDMA/Shared"),
    ])
    assert tr.libfabric and not tr.fell_back_to_socket and not tr.used_ib
    assert tr.providers == {"efa"} and tr.nics == {16} and tr.ofi_version == "aws-ofi-nccl 1.22.0"
    assert tr.channel_nets == {"AWS Libfabric": 2} and tr.gdrdma_channels == 2


def test_ib_transport_on_nvlink_devices_is_a_failure(tmp_path: Path):
    text = P5_LOG.read_text()
    text = text.replace("Using network Libfabric", "Using network IB").replace("NET/Libfabric/0/GDRDMA", "NET/IB/0/GDRDMA")
    text = text.replace("NET/OFI Selected provider is efa", "NET/OFI skipped")
    (tmp_path / "ib.log").write_text(text)
    report = build_report(tmp_path / "ib.log")
    assert any("InfiniBand transport (IB), not EFA" in m for m in fails(report)), fails(report)


def test_no_nccl_debug_lines_cannot_prove_the_transport(tmp_path: Path):
    text = "".join(line + "\n" for line in P5_LOG.read_text().splitlines() if "NCCL INFO" not in line)
    (tmp_path / "quiet.log").write_text(text)
    assert any("no NCCL_DEBUG=INFO lines" in m for m in fails(build_report(tmp_path / "quiet.log")))


def test_launcher_prefixes_are_stripped(tmp_path: Path):
    labelled = "".join(f"0: {line}\n" for line in P5_LOG.read_text().splitlines())
    (tmp_path / "labelled.log").write_text(labelled)
    report = build_report(tmp_path / "labelled.log")
    assert not report.failed and len(report.runs[0]["rows"]) == 32


def test_what_is_not_an_acceptance_log_is_refused_by_name(tmp_path: Path):
    other = tmp_path / "slurm-1234.out"
    other.write_text("hello\n")
    with pytest.raises(AcceptanceError, match=r"slurm-1234.out: no FMC-ACCEPTANCE line"):
        build_report(other)
    with pytest.raises(AcceptanceError, match="no such file or directory"):
        build_report(tmp_path / "absent")


@pytest.mark.parametrize("n", range(2, 10))
def test_the_ring_puts_every_node_in_two_pairs_and_rounds_share_no_node(n: int):
    hosts = [f"n{i}" for i in range(n)]
    pairs = ring(hosts)
    every = [h for p in pairs for h in p]
    assert {every.count(h) for h in hosts} == ({1} if n == 2 else {2})
    assert len({frozenset(p) for p in pairs}) == len(pairs)  # no pair twice
    done = []
    for rnd in rounds(hosts):
        in_round = [h for p in rnd for h in p]
        assert len(in_round) == len(set(in_round))
        done += rnd
    assert sorted(done) == sorted(pairs)
    assert len(rounds(hosts)) == (1 if n == 2 else 2 if n % 2 == 0 else 3)


def test_slow_node_detection_limits_and_margin():
    values = {("a", "b"): 100.0, ("b", "c"): 60.0, ("c", "d"): 60.0, ("d", "e"): 100.0, ("e", "a"): 101.0}
    flagged, note = slow_nodes(values, 0.10)
    assert [f.host for f in flagged] == ["c"] and note is None
    assert slow_nodes(values, 0.45)[0] == []  # 60 is 40% below 100: within a 45% margin
    assert slow_nodes({("a", "b"): 10.0}, 0.1)[1].startswith("2 nodes in 1 pair(s)")
    with pytest.raises(ValueError, match="between 0 and 1"):
        slow_nodes(values, 10)


def test_a_log_cut_before_the_table_says_so(tmp_path: Path):
    text = P5_LOG.read_text()
    (tmp_path / "early.log").write_text(text[:text.index("# nccl-tests version")])
    (message,) = fails(build_report(tmp_path / "early.log"))
    assert message.startswith("early.log: no nccl-tests results (all_reduce_perf): truncated before the first result")
