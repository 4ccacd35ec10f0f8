"""Where moto 5.2.5's server spends the rehearsal's CPU for nothing (patch 15 of ``moto_patched.py``).

None of these changes an answer; each does once, or more directly, what moto did again on every request. Measured
with a per-request profile of the server during the shared rehearsal's deploys (``cProfile`` around werkzeug's
``process_request_thread``):

a. Templates. moto reads every template with PyYAML's pure-Python ``yaml.Loader`` (``Stack.parse_template``,
   ``ChangeSet._parse_template``, ``responses.get_template_summary`` ...) and falls back to ``json.loads`` only when
   YAML fails. The CDK CLI sends JSON, which is also YAML, so each CreateChangeSet and ExecuteChangeSet scanned a
   template of up to a few hundred kB token by token: the largest share of the server's CPU. JSON first, as
   CloudFormation reads a template whose body is JSON; a template that is not JSON (YAML, with its short-form tags)
   still goes to moto's YAML loader with its tag constructor, as before.
b. Backends by host. ``DomainDispatcherApplication.get_backend_for_host`` asks ``backends.list_of_moto_modules()``
   on every request, up to twice: a ``listdir`` of moto's package and a ``stat`` of each of its ~200 entries. moto's
   installed folders do not change while the server runs; the list is read once.
c. Service models. ``moto.core.utils._load_service_model`` (its serializers' botocore models, once per service) makes
   a new botocore ``Loader`` each time, so each first request to a service lists botocore's ~400 service folders
   again (``list_available_services``: a ``listdir`` and ``isfile`` calls per service). One loader, whose own
   instance cache keeps that list; each service's model is still loaded once (moto caches ``get_service_model``).
d. Imports of an export (patch 7's ``_importers``): each live stack's template walked again for every export of a
   stack being updated or deleted. The set of exports a template imports is kept with that template (a new template,
   after an update, is walked again).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any

import yaml
from moto import backends
from moto.cloudformation import models as cfn_models
from moto.cloudformation import responses as cfn_responses
from moto.core import utils as core_utils


class _JsonFirst:
    """``yaml`` as moto's CloudFormation module sees it, with ``load`` trying JSON first (a)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(yaml, name)

    @staticmethod
    def load(stream: Any, Loader: Any = None) -> Any:
        if isinstance(stream, (str, bytes)):
            try:
                return json.loads(stream)
            except ValueError:
                pass
        return yaml.load(stream, Loader=Loader)


def imports_cached(imports: Callable[[Any], set[str]]) -> Callable[[Any], set[str]]:
    """``imports(template)`` kept per template object (d): the stack holds its template, so an id is not reused while
    the entry is looked up through it; the entry keeps the template it was computed from and is checked with ``is``."""
    seen: dict[int, tuple[Any, frozenset[str]]] = {}

    def cached(template: Any) -> set[str]:
        hit = seen.get(id(template))
        if hit is None or hit[0] is not template:
            hit = seen[id(template)] = (template, frozenset(imports(template)))
        return set(hit[1])
    return cached


def install() -> None:
    """Apply a, b and c (d wraps ``moto_patched._imports`` where it is defined)."""
    cfn_models.yaml = _JsonFirst()  # type: ignore[assignment]
    cfn_responses.yaml = _JsonFirst()  # type: ignore[assignment]
    backends.list_of_moto_modules = cache(lambda: tuple(_list_of_moto_modules()))  # type: ignore[assignment]
    core_utils.create_loader = cache(core_utils.create_loader)  # type: ignore[assignment]


_list_of_moto_modules = backends.list_of_moto_modules
