"""Fleet controls: what an operator of many sessions sets for all of them (docs/fleet.md).

One folder for the limits a fleet imposes on every writer and the erasure it can order:
``cap`` (the stored size of one output), ``quota`` (bytes and objects per session and per
store prefix, as CAS'd counters), ``seal`` (a live writer's side of a purge: check the seal
after each write, undo a late one) and ``purge`` (erasure on request: seal, delete, audit).
Purge is not garbage collection: GC keeps what a reference protects and never deletes in
doubt; a purge deletes everything of one session on an explicit order.

Below ``spill`` and ``gc`` (both obey these controls), above ``leases`` (a purge seals the
journal and the owner slots). The journal's tombstone format stays in
:mod:`s3spill.leases.erased`: the journal reader must recognise it, and ``leases`` may not
import from here.
"""
