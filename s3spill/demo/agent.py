"""The demo's main act: an agent loop over a 2 MB build log, against the embedded S3.

Listed in :data:`s3spill.demo.runner.STEPS` after the spill step and before the doctor. A
scripted model (:mod:`s3spill.demo.scripted_agent`) runs a failing build, receives a pointer
instead of 2 MB, pages into the middle by following the footers, greps for the error, and
keeps the finding as a memory reference published under a lease; each step is printed with
the size of the model's context before and after it.
"""

from __future__ import annotations

from s3spill.demo.context import DemoContext
from s3spill.demo.scripted_agent import run_agent_example

SESSION = "demo-agent-session"


def agent_demo_step(ctx: DemoContext) -> None:
    session = ctx.session(SESSION)
    ctx.say("the model runs `make`; every tool result passes through the Spiller, the model")
    ctx.say("gets read_artifact/grep_artifact bound to its session, and a finding is published")
    ctx.say("as a memory reference under a lease (LeaseJournal.publish_reference).")
    run = run_agent_example(ctx.store, session, ctx.out, indent="    ")
    ctx.state["agent_run"] = run
    (txid,) = run.published
    ctx.say(f"memory reference {txid} is COMMITTED in the session's lease journal: GC keeps the log.")

