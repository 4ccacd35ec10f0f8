"""The key reference, docs/project-file.md: generated from the models, never stale, every key described, and
every link an error hint gives lands on a heading of it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import ROOT

from fmcluster import config
from fmcluster.config.messages import REFERENCE
from fmcluster.errors import ConfigError
from fmcluster.generate import reference

DOC = ROOT / REFERENCE
CORPUS = ROOT / "tests" / "config" / "corpus"


def github_anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: the heading text lowercased, punctuation but '-' and '_' dropped, spaces as '-'."""
    anchors = set()
    for heading in re.findall(r"^#{1,6} (.+)$", markdown, re.M):
        anchors.add("#" + re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return anchors


def test_the_committed_reference_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == reference.render(), f"{REFERENCE} is stale: run `make docs`"


def test_every_key_has_a_description_and_a_section() -> None:
    text = DOC.read_text(encoding="utf-8")
    keys = list(reference.keys())
    assert len(keys) > 100  # every model, every depth
    missing = [k.path for k in keys if not (k.info.description or "").strip()]
    assert missing == []
    anchors = github_anchors(text)
    for key in keys:
        assert f"`{key.path}`" in text and reference.anchor(key.path) in anchors, key.path


def test_datasets_in_other_buckets_are_covered() -> None:
    text = DOC.read_text(encoding="utf-8")
    for path in ("storage.external_buckets", "storage.fsx.associations[].data_repository_path",
                 "storage.fsx.associations[].import_events", "storage.fsx.associations[].export_events"):
        section = text.split(f"`{path}`", 1)[1].split("\n#", 1)[0]
        assert "- example:" in section, path
    assert "## Datasets already in S3" in (ROOT / "docs" / "projects.md").read_text(encoding="utf-8")


def _hints() -> list[str]:
    hints = []
    for path in sorted(CORPUS.glob("*.yaml")):
        if path.name == "expected.yaml":
            continue
        try:
            config.load(path)
        except ConfigError as exc:
            hints += [p.hint for p in exc.problems if p.hint]
    return hints


def test_every_link_in_an_error_hint_lands_on_a_section() -> None:
    anchors = github_anchors(DOC.read_text(encoding="utf-8"))
    links = [m for hint in _hints() for m in re.findall(re.escape(REFERENCE) + r"(#[\w-]*)", hint)]
    assert links  # the corpus's misplaced key, capacity type and mapping errors link here
    assert [a for a in links if a not in anchors] == []


@pytest.mark.parametrize(("text", "section"), [  # misplaced, missing, malformed
    ("    reservation_id: cr-0123456789abcdef0\n    capacity: {type: capacity-block}\n",
     "#compute_groupscapacityreservation_id"),
    ("    capacity: {type: reservation}\n", "#compute_groupscapacityreservation_id"),
    ("    capacity: {type: reservation, reservation_id: cr-XYZ}\n", "#compute_groupscapacityreservation_id"),
])
def test_hints_name_the_key_s_section(tmp_path: Path, text: str, section: str) -> None:
    path = tmp_path / "demo.yaml"
    body = ("name: demo\navailability_zone_id: use1-az6\ncompute_groups:\n  - name: train\n"
            "    instance_type: p5.48xlarge\n    count: 2\n")
    path.write_text(body + text)
    with pytest.raises(ConfigError) as refused:
        config.load(path)
    assert any(f"{REFERENCE}{section}" in (p.hint or "") for p in refused.value.problems), refused.value.report()
