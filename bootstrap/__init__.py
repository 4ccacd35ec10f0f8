"""Node bootstrap: version-pinned, verified, idempotent scripts rendered into bundles.

- :mod:`~fmcluster.bootstrap.versions`: ``versions.yaml`` (every version, URL, checksum, key) as a schema;
- :mod:`~fmcluster.bootstrap.context`: what one node runs, built from the plan (pure);
- :mod:`~fmcluster.bootstrap.render`: the Jinja renderer, entry script and dispatcher;
- :mod:`~fmcluster.bootstrap.bundles`: a project's bundles, rendered before its stacks are built;
- :mod:`~fmcluster.bootstrap.collector`: the Prometheus agent configuration.

This package imports nothing on its own, so the pure modules stay free of Jinja.
"""
