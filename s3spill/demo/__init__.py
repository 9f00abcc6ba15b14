"""``s3spill demo``: a short tour of every layer against an embedded (or given) S3.

Library demo material lives here (the tour's steps, and :mod:`s3spill.demo.scripted_agent`, the
reference agent loop with its scripted model); the scripts a user runs are in ``examples/``.
"""
