"""``s3spill demo``: a short tour of every layer against an embedded (or given) S3."""
