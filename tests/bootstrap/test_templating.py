"""The bootstrap templates' bytecode cache (:mod:`fmcluster.bootstrap.templating`): a second process loads the
compiled templates instead of compiling them, an edited template or other compile options compile again, and a cache
that cannot be read or written is a miss, never an error."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest
from fmcluster.bootstrap import collector, render, templating
from support.sandbox import context_for, make_project


def environment(templates: Path, cache: Path, **options) -> jinja2.Environment:
    """A fresh environment, as a new process makes one."""
    cache.mkdir(exist_ok=True)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates)), **options)
    env.bytecode_cache = templating._QuietCache(str(cache), templating.compile_options(env))
    return env


def no_compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self, *args, **kwargs):
        raise AssertionError("compiled a template the cache holds")

    monkeypatch.setattr(jinja2.Environment, "compile", refuse)


def test_a_second_environment_loads_the_compiled_template_and_renders_the_same(tmp_path, monkeypatch):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.j2").write_text("hello {{ name }}\n")
    first = environment(tmp_path / "t", tmp_path / "cache").get_template("a.j2").render(name="node")
    assert list((tmp_path / "cache").iterdir()), "nothing was cached"
    no_compiling(monkeypatch)
    assert environment(tmp_path / "t", tmp_path / "cache").get_template("a.j2").render(name="node") == first


def test_an_edited_template_is_compiled_again(tmp_path):
    (tmp_path / "t").mkdir()
    template = tmp_path / "t" / "a.j2"
    template.write_text("old {{ name }}\n")
    environment(tmp_path / "t", tmp_path / "cache").get_template("a.j2").render(name="x")
    template.write_text("new {{ name }}\n")
    assert environment(tmp_path / "t", tmp_path / "cache").get_template("a.j2").render(name="x") == "new x"


def test_other_compile_options_compile_again(tmp_path):
    """The same source compiles to other code under other whitespace control: never the other's cached code."""
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.j2").write_text("{% if on %}\nA\n{% endif %}\n")
    trimmed = environment(tmp_path / "t", tmp_path / "cache", trim_blocks=True).get_template("a.j2")
    assert trimmed.render(on=True) == "A\n"
    assert environment(tmp_path / "t", tmp_path / "cache").get_template("a.j2").render(on=True) == "\nA\n"


def test_a_cache_that_cannot_be_written_is_skipped(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.j2").write_text("hello\n")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(tmp_path / "t")),
                             bytecode_cache=templating._QuietCache(str(tmp_path / "gone")))  # no such folder
    assert env.get_template("a.j2").render() == "hello"


def test_a_corrupt_cache_file_is_a_miss(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.j2").write_text("hello {{ name }}\n")
    environment(tmp_path / "t", tmp_path / "cache").get_template("a.j2").render(name="x")
    for entry in (tmp_path / "cache").iterdir():
        entry.write_bytes(entry.read_bytes()[:20])  # the magic header, then a cut-off pickle
    assert environment(tmp_path / "t", tmp_path / "cache").get_template("a.j2").render(name="x") == "hello x"


def test_the_bootstrap_environments_use_the_cache_keyed_by_their_own_options():
    for env in (render._environment(), collector._environment()):
        assert isinstance(env.bytecode_cache, templating._QuietCache)
        assert env.bytecode_cache.options == templating.compile_options(env)
    assert render._environment().bytecode_cache is not collector._environment().bytecode_cache  # other delimiters


def test_a_bundle_rendered_from_cached_templates_is_the_one_compiled_afresh(tmp_path, monkeypatch):
    """The bootstrap environment's own templates: rendered with fresh compiles, then from the cache alone."""
    ctx = context_for(make_project("p5.48xlarge"), "gpu", "compute")
    (tmp_path / "cache").mkdir()
    monkeypatch.setattr(render, "bytecode_cache",
                        lambda env: templating._QuietCache(str(tmp_path / "cache"), templating.compile_options(env)))
    render._environment.cache_clear()
    try:
        fresh = render.render_files(ctx)
        render._environment.cache_clear()
        no_compiling(monkeypatch)
        assert render.render_files(ctx) == fresh
    finally:
        render._environment.cache_clear()
