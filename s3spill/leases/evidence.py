"""Evidence of a session's history that does not live in its manifest.

Why: the manifest is one mutable object. Deleted, or rolled back to an older copy, it
would read as a clean (empty, or older) journal, and GC would delete what the lost
records protected. Two kinds of objects outlive it and say how far the history got:

* **owner slots** (``v1/owner/<session>/<txid-hash>.json``): one per transaction that
  ever reached the owner, written create-once after the journal's PREPARED, carrying
  the PREPARED record's sequence number (``journal_sequence``) and, when published,
  the artifact they reference;
* **history segments** (``journal/segments/<first>-<last>-<sha>.json``): immutable,
  and their key names the sequence range they hold.

A manifest is *in doubt* when this evidence runs ahead of it: a slot for a transaction
the journal does not know, a slot or segment whose sequence the manifest has not
reached, or any of them while the manifest is missing altogether. GC then retains the
whole session (``retained_journal_doubt``) and ``journal verify`` fails; neither can tell
a lost manifest from a rolled-back one, and neither needs to.

A *published* slot also protects its artifact directly, whatever the journal says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import ValidationError

from s3spill import keys
from s3spill.errors import NotFound, SourceIdError
from s3spill.leases.owner import OwnerSlot
from s3spill.store.base import ObjectStore

_SEGMENT_LEAF = re.compile(r"^([0-9]{12})-([0-9]{12})(?:-[0-9a-f]{16})?\.json\Z")


@dataclass(frozen=True)
class SlotFact:
    """What one owner slot says, minus the reference content."""

    key: str
    transaction_id: str | None
    state: str
    source_id: str | None
    sha256: str | None
    journal_sequence: int | None


@dataclass(frozen=True)
class HistoryEvidence:
    """Owner slots and segment ranges of one session, as listed now."""

    session_hash: str
    slots: tuple[SlotFact, ...] = ()
    #: ``(first, last)`` sequence ranges of every segment object, referenced or not.
    segments: tuple[tuple[int, int], ...] = ()
    #: Slots that could not be read or parsed (kept as doubt: they may protect something).
    unreadable_slots: tuple[str, ...] = ()
    published: dict[str, set[str]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.slots or self.segments or self.unreadable_slots)

    def published_names(self) -> dict[str, set[str]]:
        """Artifact name -> digests of the references a published slot holds for it."""
        return self.published

    def doubts(self, *, exists: bool, next_sequence: int, known_transactions: set[str] | frozenset[str]
               ) -> list[str]:
        """Why the manifest cannot be trusted to be the whole history (empty: no doubt)."""
        out: list[str] = []
        if self.unreadable_slots:
            out.append(f"{len(self.unreadable_slots)} owner slot(s) could not be read")
        if not exists:
            if self.slots:
                out.append(f"manifest missing while {len(self.slots)} owner slot(s) exist")
            if self.segments:
                out.append(f"manifest missing while {len(self.segments)} history segment(s) exist")
            return out
        ahead = [last for _, last in self.segments if last >= next_sequence]
        if ahead:
            out.append(f"a history segment reaches sequence {max(ahead)} but the manifest ends "
                       f"before {next_sequence} (rolled back)")
        seqs = [s.journal_sequence for s in self.slots
                if s.journal_sequence is not None and s.journal_sequence >= next_sequence]
        if seqs:
            out.append(f"an owner slot names sequence {max(seqs)} but the manifest ends before "
                       f"{next_sequence} (rolled back)")
        unknown = [s for s in self.slots if s.transaction_id not in known_transactions]
        if unknown:
            out.append(f"{len(unknown)} owner slot(s) name transactions the journal does not know "
                       "(history lost or rolled back)")
        return out


def read_history_evidence(store: ObjectStore, shash: str) -> HistoryEvidence:
    """List the session's owner slots (reading each) and segment keys; a few requests."""
    slots: list[SlotFact] = []
    unreadable: list[str] = []
    published: dict[str, set[str]] = {}
    for info in store.list(f"{keys.OWNER}/{keys.check_session_hash(shash)}/"):
        if keys.parse_key(info.key).kind != "owner":
            continue
        try:
            slot = OwnerSlot.model_validate_json(store.get(info.key))
        except NotFound:
            continue  # slots are never deleted by s3spill; a vanished one was never evidence we had
        except (ValidationError, ValueError):
            unreadable.append(info.key)
            continue
        if slot.session_hash != shash or info.key != keys.owner_slot_key(shash, slot.transaction_id):
            unreadable.append(info.key)
            continue
        slots.append(SlotFact(info.key, slot.transaction_id, slot.state, slot.source_id, slot.sha256,
                              slot.journal_sequence))
        if slot.state == "published" and slot.source_id:
            try:
                sid = keys.SourceId.parse(slot.source_id)
            except SourceIdError:
                unreadable.append(info.key)
                continue
            if sid.session_hash == shash:
                published.setdefault(sid.name, set()).add(slot.sha256 or "")
    segments: list[tuple[int, int]] = []
    for info in store.list(keys.session_prefix(shash) + "journal/segments/"):
        match = _SEGMENT_LEAF.match(info.key.rsplit("/", 1)[-1])
        if match:
            segments.append((int(match.group(1)), int(match.group(2))))
    return HistoryEvidence(shash, tuple(slots), tuple(segments), tuple(unreadable), published)
