"""Live output: a command's output readable while it runs, finished into an ordinary artifact.

``writer`` cuts create-once segments and CASes the ``state`` that lists them; ``segments``
reads the state and its segment tables; ``reader`` pages and greps what is committed (and,
once finished, the artifact it became); ``finish`` turns a run into an artifact, also for
a writer that died; ``run`` starts a command or drains a stream into a live output
(:class:`~s3spill.live.run.LiveHandle`); ``supervisor`` is the detached process behind
``s3spill run --background``. See docs/live-output.md.
"""
