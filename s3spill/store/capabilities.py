"""What a store honours: the guarantees a backend claims, and what probing it found.

Why records of their own: the journal, the owner and GC must not trust a backend's
claims (S3-compatible stores ignore conditional headers silently), so the same facts
come from two places — :meth:`~s3spill.store.base.ObjectStore.capabilities` (what the
backend claims) and a :class:`CapabilityReport` (what real requests showed, built by
:mod:`s3spill.store.probes`). GC picks its delete method from either as a
:class:`StoreCapabilities`; ``s3spill doctor`` prints the report.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from s3spill.store.claims import StoreCapabilities as StoreCapabilities

#: Who relies on a guarantee: every writer (``all``), GC, large (multipart) writes,
#: integrity checks, or nobody (``info``).
Needed = Literal["gc", "all", "large", "integrity", "info"]


class Probe(BaseModel):
    """One guarantee and what the store did when asked to honour it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    title: str
    #: True honoured, False not honoured, None not applicable / could not be probed.
    honoured: bool | None
    needed_by: Needed
    detail: str


_MARK = {True: "yes", False: "NO", None: "n/a"}


class CapabilityReport(BaseModel):
    """Every probe of one store, and what GC may rely on (the JSON of ``s3spill doctor``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    store_url: str
    kind: Literal["s3", "local"]
    probes: list[Probe]

    def get(self, name: str) -> bool:
        return any(p.name == name and p.honoured for p in self.probes)

    @property
    def gc_delete_mode(self) -> Literal["conditional", "versioned"] | None:
        """How GC may delete safely here: by ETag, else by version id, else not at all."""
        if self.get("conditional_delete"):
            return "conditional"
        if self.get("versioned_delete") and self.get("versioning"):
            return "versioned"
        return None

    @property
    def missing_required(self) -> list[str]:
        """Guarantees without which s3spill must not run (create-once, CAS, a safe GC delete)."""
        missing = [p.title for p in self.probes if p.needed_by == "all" and p.honoured is False]
        if self.gc_delete_mode is None:
            missing.append("conditional delete or delete by version id (needed by GC)")
        return missing

    @property
    def gc_ok(self) -> bool:
        return self.gc_delete_mode is not None

    @property
    def ok(self) -> bool:
        return not self.missing_required

    def capabilities(self) -> StoreCapabilities:
        return StoreCapabilities(
            conditional_create=self.get("create_if_absent"),
            conditional_put=self.get("if_match_put") and self.get("if_match_put_missing"),
            conditional_delete=self.get("conditional_delete"),
            versioned_delete=self.get("versioned_delete"),
            batch_conditional_delete=self.get("batch_delete_etag"),
            verifies_sha256_on_put=self.get("checksum_rejection"),
            versioning=self.get("versioning"),
        )

    def table(self) -> str:
        """The probes as aligned plain-text rows under a title: what a refusal carries
        (:class:`~s3spill.errors.StoreCapabilityError`) and ``s3spill doctor`` prints first."""
        rows = [(p.title, _MARK[p.honoured], p.needed_by, p.detail) for p in self.probes]
        head = ("guarantee", "honoured", "needed by", "detail")
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(3)]
        lines = [f"s3spill doctor: {self.store_url} ({self.kind})", ""]
        for row in [head, *rows]:
            lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3]))
                         + "  " + row[3])
        return "\n".join(lines)
