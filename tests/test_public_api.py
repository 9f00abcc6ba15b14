"""The public API surface: sorted, complete, importable."""

import s3spill


def test_all_is_sorted_and_unique() -> None:
    """`__all__` is kept sorted so additions are reviewed in one obvious place."""
    assert list(s3spill.__all__) == sorted(set(s3spill.__all__))


def test_every_exported_name_exists() -> None:
    """Every name in `__all__` resolves on the package."""
    missing = [name for name in s3spill.__all__ if not hasattr(s3spill, name)]
    assert missing == []


def test_every_error_derives_from_the_root() -> None:
    """All exported exception classes share the S3SpillError root."""
    errors = [getattr(s3spill, n) for n in s3spill.__all__ if isinstance(getattr(s3spill, n), type)]
    excs = [e for e in errors if issubclass(e, BaseException)]
    assert excs and all(issubclass(e, s3spill.S3SpillError) for e in excs)
