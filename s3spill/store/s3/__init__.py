"""The S3 backend (boto3; AWS, MinIO, moto).

``store`` implements :class:`~s3spill.store.base.ObjectStore`; ``ops`` holds the client,
retries and error translation that ``multipart`` and ``read`` use; ``errors`` classifies
botocore failures.
"""

from s3spill.store.s3.store import S3Store, make_client

__all__ = ["S3Store", "make_client"]
