"""New boto3 sessions share one loader of botocore's models, and nothing else."""

from __future__ import annotations

from s3spill.store.s3.store import new_session

#: Throwaway credentials, one pair per session.
A = {"aws_access_key_id": "A", "aws_secret_access_key": "a", "region_name": "eu-west-1"}
B = {"aws_access_key_id": "B", "aws_secret_access_key": "b", "region_name": "us-east-2"}


def test_sessions_share_the_models_but_keep_their_own_credentials_and_region() -> None:
    """Two sessions read one cached S3 model; their credentials and regions stay apart."""
    a, b = new_session(**A), new_session(**B)
    loader_a = a._session.get_component("data_loader")
    assert loader_a is b._session.get_component("data_loader")
    paths = list(loader_a.search_paths)
    new_session()  # a third session does not grow the shared search path (boto3 appends to its own)
    assert list(loader_a.search_paths) == paths
    creds_a, creds_b = a.get_credentials(), b.get_credentials()
    assert creds_a is not None and creds_b is not None
    assert (creds_a.access_key, creds_b.access_key) == ("A", "B")
    assert (a.client("s3").meta.region_name, b.client("s3").meta.region_name) == ("eu-west-1", "us-east-2")
