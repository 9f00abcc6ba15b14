"""``s3spill ui``: a read-only web view of a store (sessions, what each model saw, GC, purges).

Why read-only and built on the model's own tools: an operator must see what the model
saw, not a privileged rendering of it — pages come from :class:`~s3spill.agent.tools.AgentTools`
bound to the listed session (:class:`~s3spill.keys.HashedSession`), so they are the same
verified ranged reads, under the same budgets and the same masking; nothing in the view
writes to the store, and nothing loads a whole artifact. Starlette and uvicorn come with
the ``mcp`` extra; templates are Jinja2 with autoescaping (the ``ui`` extra).
"""
