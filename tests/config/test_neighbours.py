"""The VPCs of a projects folder (:mod:`fmcluster.config.neighbours`): each project of a folder checks every other, so
a synthesis of N projects reads each file N times; each file's text is parsed once per process, an edited file again."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
import yaml

from fmcluster.config import neighbours


def project(name: str, cidr: str) -> str:
    return f"name: {name}\nnetwork: {{vpc_cidr: {cidr}}}\n"


def test_every_file_of_the_folder_is_parsed_once_however_many_projects_ask(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch):
    for i in range(5):
        (tmp_path / f"p{i}.yaml").write_text(project(f"p{i}", f"10.{i + 200}.0.0/16"))
    parsed = []
    load = yaml.load
    monkeypatch.setattr(yaml, "load", lambda text, Loader: parsed.append(text) or load(text, Loader=Loader))
    for path in sorted(tmp_path.glob("*.yaml")):
        others = neighbours.vpc_cidrs(tmp_path, path)
        assert [name for name, _ in others] == [p.stem for p in sorted(tmp_path.glob("*.yaml")) if p != path]
    assert len(parsed) == 5  # not 5 x 4


def test_an_edited_file_is_read_again(tmp_path: Path):
    (tmp_path / "a.yaml").write_text(project("a", "10.201.0.0/16"))
    assert neighbours.vpc_cidrs(tmp_path) == [("a", ipaddress.IPv4Network("10.201.0.0/16"))]
    (tmp_path / "a.yaml").write_text(project("a", "10.202.0.0/16"))  # same size, same second
    assert neighbours.vpc_cidrs(tmp_path) == [("a", ipaddress.IPv4Network("10.202.0.0/16"))]


def test_imported_broken_and_unreadable_neighbours_name_no_vpc(tmp_path: Path):
    (tmp_path / "imported.yaml").write_text("name: imported\nnetwork: {existing: {vpc_id: vpc-1}}\n")
    (tmp_path / "broken.yaml").write_text("name: [unclosed\n")
    (tmp_path / "cidr.yaml").write_text(project("cidr", "not-a-cidr"))
    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "default.yaml").write_text("name: default\n")
    [(name, cidr)] = neighbours.vpc_cidrs(tmp_path)
    assert name == "default" and isinstance(cidr, ipaddress.IPv4Network)  # the default range
