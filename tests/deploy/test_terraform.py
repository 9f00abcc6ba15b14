"""The Terraform module enforces the storage guarantees on the platform, checked statically.

Nothing here talks to AWS: the HCL is parsed (python-hcl2) and its policy documents are
evaluated against requests built from the real key layout (see deploy_policy_check). The
weakened-copy tests prove the checker would notice a regression, so a green run means
something.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.deploy.policy_check import (
    EXAMPLE_DIR,
    LAYOUT_KEYS,
    MODULE_DIR,
    REPO,
    TLS,
    Request,
    blocks,
    bucket_policy_violations,
    denied_by,
    load_module,
    obj,
    put,
    role_violations,
    statements,
    violations,
)

TERRAFORM_DIR = REPO / "terraform"


@pytest.fixture(scope="module")
def module() -> dict[str, object]:
    return load_module(MODULE_DIR)


def test_module_holds_every_guarantee(module: dict[str, object]) -> None:
    """The real module passes every check: bucket settings, bucket policy, roles, CronJob, docs."""
    assert violations(module) == []


def test_guarantees_hold_under_a_key_prefix(module: dict[str, object]) -> None:
    """With a store prefix (s3://bucket/team/a) the denials and grants cover the prefixed keys."""
    assert bucket_policy_violations(module, root="team/a/") == []
    assert role_violations(module, root="team/a/") == []


def test_create_once_denial_names_if_none_match_and_multipart_exemption(
    module: dict[str, object],
) -> None:
    """An artifact PutObject without If-None-Match hits the create-once denial; parts do not."""
    sts = statements(module, "bucket")
    key = LAYOUT_KEYS["artifact"]
    assert "DenyCreateOnceWritesWithoutIfNoneMatch" in denied_by(sts, put(key))
    assert denied_by(sts, put(key, **{"s3:if-none-match": "*"})) == []
    assert denied_by(sts, put(key, creation=False)) == []


def _drop_statement(text: str, sid: str) -> str:
    """Remove the ``statement { ... sid = "<sid>" ... }`` block from HCL text."""
    start = text.index(f'sid       = "{sid}"')
    open_at = text.rindex("statement {", 0, start)
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[:open_at] + text[i + 1 :]
    raise AssertionError("unbalanced braces")


def _weakened_copy(tmp_path: Path, edit: dict[str, tuple[str, str]]) -> Path:
    target = tmp_path / "module"
    shutil.copytree(MODULE_DIR, target)
    for name, (old, new) in edit.items():
        path = target / name
        text = path.read_text(encoding="utf-8")
        assert old in text, f"{old!r} not in {name}"
        path.write_text(text.replace(old, new), encoding="utf-8")
    return target


def test_dropping_the_if_none_match_denial_fails_the_check(tmp_path: Path) -> None:
    """A module copy without the create-once statement is reported as letting overwrites through."""
    target = tmp_path / "module"
    shutil.copytree(MODULE_DIR, target)
    main = target / "main.tf"
    main.write_text(
        _drop_statement(main.read_text(encoding="utf-8"), "DenyCreateOnceWritesWithoutIfNoneMatch")
    )
    found = violations(load_module(target))
    assert "PutObject of a artifact key with only If-Match (an overwrite) is not denied" in found
    assert "PutObject of a index key with only If-Match (an overwrite) is not denied" in found
    assert "PutObject of a segment key with only If-Match (an overwrite) is not denied" in found


def test_dropping_the_if_none_match_condition_in_the_parsed_module_fails_the_check(
    module: dict[str, object],
) -> None:
    """Dropping the s3:if-none-match condition from the parsed statement is reported."""
    weakened = copy.deepcopy(module)
    for st in blocks(weakened, "data", "aws_iam_policy_document")["bucket"]["statement"]:
        if st["sid"] == "DenyCreateOnceWritesWithoutIfNoneMatch":
            st["condition"] = [c for c in st["condition"] if c["variable"] != "s3:if-none-match"]
    found = violations(weakened)
    assert "PutObject of a artifact key with If-None-Match is denied" in found


_CREATION_OP = 'variable = "s3:ObjectCreationOperation"\n      values   = ["{}"]\n    }}\n  }}\n\n  # Owner'

_ONE_LINE_WEAKENINGS = {
    "tls": (
        "main.tf",
        'variable = "aws:SecureTransport"',
        'variable = "aws:SecureTransportTypo"',
        "a request over plain HTTP (aws:SecureTransport=false) is not denied",
    ),
    "multipart-exemption-inverted": (
        "main.tf",
        _CREATION_OP.format("true"),
        _CREATION_OP.format("false"),
        "UploadPart for a artifact key (ObjectCreationOperation=false) is denied",
    ),
    "delete-deny": (
        "main.tf",
        'effect    = "Deny"\n    actions   = ["s3:DeleteObject"]',
        'effect    = "Deny"\n    actions   = ["s3:DeleteObjectTagging"]',
        "DeleteObject of a artifact key without If-Match is not denied",
    ),
    "agent-delete": (
        "iam.tf",
        '"s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"',
        '"s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"',
        "agent role statement CreateArtifactsSegmentsAndOwnerSlots allows s3:DeleteObject",
    ),
    "public": (
        "main.tf",
        "block_public_policy     = true",
        "block_public_policy     = false",
        "public access block block_public_policy is not true",
    ),
    "bucket-key": (
        "main.tf",
        "bucket_key_enabled = true",
        "bucket_key_enabled = false",
        "S3 bucket key is not enabled",
    ),
    "versioning": (
        "main.tf",
        'status = "Enabled"\n  }',
        'status = "Suspended"\n  }',
        "bucket versioning is not Enabled",
    ),
    "forbid": (
        "gc_cronjob.tf",
        'concurrency_policy            = "Forbid"',
        'concurrency_policy            = "Allow"',
        "concurrency_policy is not Forbid",
    ),
    "rootfs": (
        "gc_cronjob.tf",
        "read_only_root_filesystem  = true",
        "read_only_root_filesystem  = false",
        "the GC container's root filesystem is writable",
    ),
}


@pytest.mark.parametrize("case", sorted(_ONE_LINE_WEAKENINGS))
def test_each_weakening_is_reported(tmp_path: Path, case: str) -> None:
    """Each one-line weakening (TLS, conditions, deletes, roles, bucket, CronJob) is named."""
    name, old, new, expected = _ONE_LINE_WEAKENINGS[case]
    assert expected in violations(load_module(_weakened_copy(tmp_path, {name: (old, new)})))


def test_version_pinned_delete_is_the_only_unconditional_delete_path(
    module: dict[str, object],
) -> None:
    """DeleteObjectVersion (GC on MinIO) passes the bucket policy; a bare DeleteObject does not."""
    sts = statements(module, "bucket")
    key = obj(LAYOUT_KEYS["artifact"])
    assert denied_by(sts, Request("s3:DeleteObjectVersion", key, {**TLS, "s3:versionid": "3HL4kqtJ"})) == []
    assert "DenyDeletesWithoutIfMatch" in denied_by(sts, Request("s3:DeleteObject", key, dict(TLS)))


def test_example_root_uses_the_module() -> None:
    """The example root calls the module with IRSA inputs from the EKS cluster's OIDC provider."""
    example = load_module(EXAMPLE_DIR)
    calls = {name: body for entry in example["module"] for name, body in entry.items()}
    call = calls["s3spill"]
    assert call["source"] == "../../modules/s3spill"
    assert "oidc_provider_arn" in call and "oidc_provider_url" in call
    assert (EXAMPLE_DIR / "terraform.tfvars.example").is_file()


_SKIP = re.compile(r"#\s*checkov:skip=(CKV2?_[A-Z0-9_]+)(?::(.*))?")


def test_every_checkov_skip_is_justified() -> None:
    """Each inline checkov skip in terraform/ names a check and gives a reason."""
    skips = []
    for path in TERRAFORM_DIR.rglob("*.tf"):
        for line in path.read_text(encoding="utf-8").splitlines():
            match = _SKIP.search(line)
            if match:
                skips.append((path.name, match.group(1), (match.group(2) or "").strip()))
    assert skips, "expected the documented skips"
    unjustified = [(f, c) for f, c, reason in skips if len(reason) < 30]
    assert unjustified == []


def test_terraform_files_are_canonically_formatted() -> None:
    """`terraform fmt -check -recursive terraform/` passes (terraform is on the machine image)."""
    binary = shutil.which("terraform")
    assert binary, "terraform is not on PATH: the README says where the fmt check runs"
    result = subprocess.run(
        [binary, "fmt", "-check", "-recursive", "-diff", str(TERRAFORM_DIR)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout
