"""Shared setup of the hostile-placement suite: five secret kinds and a leak check that
knows what the same view shows without the secret (so our own text is never a "leak")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from s3spill.store.base import ObjectStore
from s3spill.store.local import LocalStore

KEY_LINES = ["MIIEowIBAAKCAQEAvQmZ3kP8sWqL2nR7tY4uE6iO9pA1sD3fG5hJ7kL9zX2cV4bN",
             "6mQ8wE0rT2yU4iO6pA8sD0fG2hJ4kL6zX8cV0bN2mQ4wE6rT8yU0iO2pA4sD6fG",
             "Hq7Wd2Lx9Mz4Nc6Bv8Kj1Fg3Sa5Pz7Ry9Tu2Io4Ue6Yw8Qt0Er3Dg5Fh7Jk9Lm"]


@dataclass(frozen=True)
class Kind:
    """One secret kind: the line that carries it, and the secret itself."""

    name: str
    secret: str
    template: str  # ``{}`` where the secret goes

    def line(self, secret: str | None = None) -> str:
        return self.template.format(self.secret if secret is None else secret)


KINDS = [
    Kind("aws-pair", "q8Jd2LxV9mPzR4tYw7Nc/Bf5Hs3Gk6Ue0Ao9Ti2E",
         "aws_access_key_id = AKIAQZ7V3KX9TYB2WRML\naws_secret_access_key = {}"),
    Kind("private-key", "\n".join(KEY_LINES),
         "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----"),
    Kind("github-token", "ghp_Zk8Qw3Rt6Yu9Io2Pa5Sd7Fg0Hj4Kl1Zx3Cv6B", "remote: token {} accepted"),
    Kind("url-password", "Vx9Kq2Lm7Pz4Rt8W", "fatal: could not read from https://deploy:{}@git.example.com/a.git"),
    Kind("high-entropy", "Jq4Zr8Xw2Nc6Vb0Mk3Lp7Hs1Dg5Ft9Ay2Ue4Io6", "SERVICE_SESSION_TOKEN={}"),
]


def pieces(secret: str) -> set[str]:
    """Every 4-character piece of a secret (a key block's lines each)."""
    out = set()
    for part in secret.split("\n"):
        out.update(part[i:i + 4] for i in range(len(part) - 3))
    return out


def leaks(shown: str, clean: str, secret: str) -> list[str]:
    """The pieces of ``secret`` in ``shown`` that the same view of the output without the
    secret (``clean``) does not show too."""
    return sorted(p for p in pieces(secret) if p in shown and p not in clean)


def placeholder(secret: str) -> str:
    """A stand-in of the same length and line shape that no rule flags."""
    return "\n".join("." * len(part) for part in secret.split("\n"))


@pytest.fixture
def local(tmp_path: Path) -> ObjectStore:
    return LocalStore(tmp_path / "store")


#: What a path shows of an output: ``view(output_text, session) -> every text the model sees``.
View = Callable[[str, str], list[str]]
