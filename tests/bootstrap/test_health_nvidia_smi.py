"""The health check's GPU checks parse what nvidia-smi and the driver really print: the rendered check functions
run against the fixtures of tests/bootstrap/fixtures/nvidia-smi/README.md (each with its source)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from fmcluster.bootstrap import render
from support.sandbox import context_for, make_project

FIXTURES = Path(__file__).parent / "fixtures" / "nvidia-smi"
FUNCTIONS = ("fmc_true", "check_gpu_memory", "check_recovery_action", "check_xid")


def _checks(itype: str) -> str:
    ctx = context_for(make_project(itype, "ubuntu-22.04", "parallelcluster"), "gpu", "compute")
    text = render.render_files(ctx)["steps/99-healthcheck.sh"]
    out = ["FAILURES=()", 'check_failed() { FAILURES+=("$1"); }', "warn() { :; }", "log() { :; }"]
    for name in FUNCTIONS:
        if f"\n{name}() {{\n" in text:  # (a check the template lacks reports nothing: its cases fail)
            start = text.index(f"\n{name}() {{\n") + 1
            out.append(text[start:text.index("\n}\n", start) + 3])
    return "\n".join(out)


def _run(tmp_path: Path, itype: str, *, q: str = "q-h100-565.57.01.txt", remap: str = "csv-remap-healthy.txt",
         kernel: str | None = None) -> list[str]:
    """The failures the four checks report with nvidia-smi and the kernel log answering from fixtures."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "nvidia-smi").write_text(
        "#!/bin/bash\n"
        f'case " $* " in\n'
        f'  *remapped-rows*) cat {FIXTURES / remap} ;;\n'
        f'  *retired_pages*) echo "00000000:18:00.0, [N/A]" ;;\n'
        f'  " -q ") cat {FIXTURES / q} ;;\n'
        "esac\n")
    (bin_dir / "journalctl").write_text(f"#!/bin/bash\ncat {FIXTURES / kernel}\n" if kernel else "#!/bin/bash\n")
    for stub in bin_dir.iterdir():
        stub.chmod(0o755)
    calls = "".join(f"! declare -F {name} >/dev/null || {name}\n" for name in FUNCTIONS[1:])
    code = _checks(itype) + "\n" + calls + "printf '%s\\n' \"${FAILURES[@]}\"\n"
    out = subprocess.run(["bash", "-c", code], env={"PATH": f"{bin_dir}:/usr/bin:/bin"}, capture_output=True,
                         text=True, check=True, timeout=30).stdout
    return [line for line in out.splitlines() if line]


def test_a_healthy_h100_passes(tmp_path):
    assert _run(tmp_path, "p5.48xlarge") == []


@pytest.mark.parametrize("remap", ["csv-remap-yes-no.txt", "csv-remap-1-0.txt"], ids=["yes-no", "1-0"])
def test_remapped_rows_are_judged_in_either_form(tmp_path, remap):
    assert _run(tmp_path, "p5.48xlarge", remap=remap) == [
        "gpu 00000000:2A:00.0: row remap pending (the GPU needs a reset)",
        "gpu 00000000:3A:00.0: a row remap failed (replace the node)",
    ]


def test_a_gpu_whose_recovery_action_is_not_none_fails(tmp_path):
    assert _run(tmp_path, "p5.48xlarge", q="q-h200-570.86.15-reset.txt") == [
        "gpu: the driver's recovery action is not None (00000000:3B:00.0 Reset): reset the GPU or reboot the node"]


def test_xid_154_fails_unless_the_gpu_went_back_to_none(tmp_path):
    (failure,) = _run(tmp_path, "p5.48xlarge", kernel="kernel-xid154.log")
    assert failure == ("xid: NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x0 (None) "
                       "to 0x1 (GPU Reset Required)")
    assert _run(tmp_path, "p5.48xlarge", kernel="kernel-xid154-recovered.log") == []


@pytest.mark.parametrize("itype, fails", [("p6e-gb200.36xlarge", True), ("p5.48xlarge", False)])
def test_xid_46_fails_on_gb200_only(tmp_path, itype, fails):
    got = _run(tmp_path, itype, kernel="kernel-xid46.log")
    assert got == (["xid: NVRM: Xid (PCI:0008:01:00): 46,"] if fails else [])
