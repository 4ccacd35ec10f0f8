"""Data repository associations as they are built: which bucket each links to, whether the project owns it,
and what flows each way. Pure: the storage stack builds from this and ``fmcluster plan`` prints it in words.

Defaults (FACTS.md section 3: an association exports nothing without an ``AutoExportPolicy``; ``DELETED`` in it
makes a deletion under the association delete the S3 object):

- into the project's own bucket: new and changed files are exported, deletions are not;
- into any other bucket (``external_buckets``, a team's datasets): import only, nothing exported.

Exporting deletions, anywhere, needs ``export_events`` written out with ``DELETED`` in it.
"""

from __future__ import annotations

from dataclasses import dataclass

from fmcluster.config.storage import S3_URI, Association, Storage

OWN_BUCKET_EXPORTS = ("NEW", "CHANGED")
"""What an association into the project's own bucket exports unless ``export_events`` says otherwise."""
EXTERNAL_BUCKET_EXPORTS: tuple[str, ...] = ()
"""What an association into a bucket the project does not own exports unless ``export_events`` says otherwise."""


@dataclass(frozen=True)
class AssociationPlan:
    file_system_path: str
    repository: str | None
    """``s3://bucket/prefix/`` as written, or None: the project bucket, prefix = the file-system path."""
    bucket: str | None
    """The bucket's name when it is known before deployment (None: the bucket NAME-storage creates)."""
    owned: bool
    """Whether the bucket is the project's own (created by NAME-storage or named by ``bucket.existing_name``)."""
    import_events: tuple[str, ...]
    export_events: tuple[str, ...]
    source: Association

    @property
    def exports_deletions(self) -> bool:
        return "DELETED" in self.export_events

    def where(self, project: str) -> str:
        if self.repository is not None:
            return self.repository
        return f"s3://<the {project}-storage bucket>{self.file_system_path}/"

    def words(self, project: str) -> list[str]:
        """What the association does, in sentences (``fmcluster plan``)."""
        where = self.where(project)
        owner = "the project's bucket" if self.owned else "a bucket the project does not own"
        lines = [f"{self.file_system_path} <-> {where} ({owner})"]
        imports = ", ".join(e.lower() for e in self.import_events)
        lines.append(f"  from S3: imports {imports} objects" if imports else "  from S3: imports nothing automatically")
        if not self.export_events:
            lines.append("  to S3: exports nothing (import only)")
        else:
            lines.append(f"  to S3: exports {', '.join(e.lower() for e in self.export_events)} files")
        if self.exports_deletions:
            lines.append(f"  deleting a file under {self.file_system_path} deletes it in {where}")
        elif self.export_events:
            lines.append(f"  deleting a file under {self.file_system_path} leaves it in {where}")
        return lines


def plan_associations(storage: Storage) -> tuple[AssociationPlan, ...]:
    own = storage.bucket.existing_name
    planned = []
    for assoc in storage.fsx.associations:
        if assoc.data_repository_path is None:
            bucket, owned = own, True
        else:
            match = S3_URI.match(assoc.data_repository_path)
            bucket = match.group("bucket") if match else None
            owned = bucket is not None and bucket == own
        default = assoc.export_events is None
        exports = (OWN_BUCKET_EXPORTS if owned else EXTERNAL_BUCKET_EXPORTS) if default else tuple(assoc.export_events)
        planned.append(AssociationPlan(
            file_system_path=assoc.file_system_path, repository=assoc.data_repository_path, bucket=bucket,
            owned=owned, import_events=tuple(assoc.import_events), export_events=exports,
            source=assoc,
        ))
    return tuple(planned)
