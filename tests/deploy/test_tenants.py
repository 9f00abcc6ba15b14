"""Per-tenant prefixes of the Terraform module: one tenant's role and key cannot reach another's.

Like tests/deploy/test_terraform.py, nothing talks to AWS: the tenant documents are parsed
from terraform/, their per-tenant references (``each.key``, ``statement.key``) filled in
for two tenants, and the statements evaluated against requests built from the real key
layout under each tenant's store root. The weakened copies show the checks would notice.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from s3spill import keys
from tests.deploy.policy_check import (
    BUCKET_ARN,
    KMS_ARN,
    MODULE_DIR,
    TLS,
    Request,
    Statement,
    blocks,
    denied_by,
    identity_allows,
    load_module,
    resolve,
    statements,
)

TENANT_KMS = {"acme": "arn:aws:kms:eu-west-1:123456789012:key/acme",
              "globex": "arn:aws:kms:eu-west-1:123456789012:key/globex"}
ROLE = "arn:aws:iam::123456789012:role/s3spill-tenant-{}"
GC_ROLE = "arn:aws:iam::123456789012:role/s3spill-gc"
SHASH = keys.session_hash("tenant-session")
NAME = keys.new_artifact_name("bash")
TENANT_KEYS = {
    "artifact": keys.artifact_key(SHASH, NAME), "manifest": keys.manifest_key(SHASH),
    "owner": keys.owner_slot_key(SHASH, "tx-1"), "usage": keys.session_usage_key(SHASH),
    "shard": keys.prefix_usage_key(0),
}


def _fill(text: str, tenant: str, root: str) -> str:
    text = (text.replace("${local.tenant_roots[each.key]}", f"{root}tenants/{tenant}/")
            .replace("${statement.value}", f"{root}tenants/{tenant}/")
            .replace("${local.tenant_kms_arns[each.key]}", TENANT_KMS[tenant])
            .replace("${local.tenant_kms_arns[statement.key]}", TENANT_KMS[tenant])
            .replace("${aws_iam_role.gc.arn}", GC_ROLE)
            .replace("${aws_iam_role.purge.arn}", "arn:aws:iam::123456789012:role/s3spill-purge"))
    text = text.replace("arn:${data.aws_partition.current.partition}:iam::"
                        "${data.aws_caller_identity.current.account_id}:role/${var.name}-tenant-"
                        "${statement.key}", ROLE.format(tenant))
    return text


def _statements(raw: list[dict[str, Any]], module: dict[str, Any], tenant: str, root: str) -> list[Statement]:
    def res(v: Any) -> list[str]:
        return [resolve(_fill(x, tenant, root), module, root) for x in ([v] if isinstance(v, str) else v)]

    out = []
    for st in raw:
        out.append(Statement(
            sid=st.get("sid", ""), effect=st.get("effect", "Allow"), actions=tuple(st.get("actions", [])),
            resources=tuple(res(st.get("resources", []))) if "resources" in st else (),
            conditions=tuple((c["test"], c["variable"], tuple(res(c["values"])))
                             for c in st.get("condition", [])),
        ) if "not_resources" not in st else Statement(
            sid=st["sid"], effect=st["effect"], actions=tuple(st["actions"]),
            resources=("NOT:" + res(st["not_resources"])[0],), conditions=()))
    return out


def _applies_not(st: Statement, request: Request) -> bool:
    """``not_resources`` (encoded as NOT:<pattern>): matches what the pattern does not."""
    import fnmatch

    pattern = st.resources[0].removeprefix("NOT:")
    return any(fnmatch.fnmatchcase(request.action, a) for a in st.actions) and \
        not fnmatch.fnmatchcase(request.resource, pattern)


def _allowed(sts: list[Statement], request: Request) -> bool:
    plain = [s for s in sts if not s.resources or not s.resources[0].startswith("NOT:")]
    negated = [s for s in sts if s.resources and s.resources[0].startswith("NOT:")]
    return identity_allows(plain, request) and not any(_applies_not(s, request) for s in negated)


def tenant_role(module: dict[str, Any], tenant: str, root: str = "") -> list[Statement]:
    doc = blocks(module, "data", "aws_iam_policy_document")["tenant_agent"]
    return _statements(doc["statement"], module, tenant, root)


def tenant_guards(module: dict[str, Any], tenant: str, root: str = "") -> list[Statement]:
    doc = blocks(module, "data", "aws_iam_policy_document")["tenant_guards"]
    raw = [d["statement"]["content"][0] for d in doc["dynamic"]]
    return _statements(raw, module, tenant, root)


def tenant_violations(module: dict[str, Any], root: str = "") -> list[str]:
    """One sentence per broken tenant guarantee, for tenants acme and globex."""
    out = []
    for tenant, other in (("acme", "globex"), ("globex", "acme")):
        role, guards = tenant_role(module, tenant, root), tenant_guards(module, tenant, root)
        out += _reach(role, tenant, other, root)
        out += _listing(role, tenant, other, root)
        out += _tenant_key(role, module, tenant, other, root)
        out += _guarded_writes_and_reads(guards, tenant, other, root)
    return out


def _tenant_arns(tenant: str, root: str) -> dict[str, str]:
    return {k: f"{BUCKET_ARN}/{root}tenants/{tenant}/{v}" for k, v in TENANT_KEYS.items()}


def _reach(role: list[Statement], tenant: str, other: str, root: str) -> list[str]:
    """The role reads and writes its own keys (deletes none), and nobody else's."""
    out = []
    for kind, arn in _tenant_arns(tenant, root).items():
        for action in ("s3:GetObject", "s3:PutObject"):
            if not _allowed(role, Request(action, arn, dict(TLS))):
                out.append(f"{tenant} role cannot {action} its own {kind}")
        if _allowed(role, Request("s3:DeleteObject", arn, dict(TLS))):
            out.append(f"{tenant} role may delete its {kind}")
    shared = {k: f"{BUCKET_ARN}/{root}{v}" for k, v in TENANT_KEYS.items()}
    for where, arns in (("another tenant's", _tenant_arns(other, root)), ("the shared root's", shared)):
        for kind, arn in arns.items():
            for action in ("s3:GetObject", "s3:PutObject"):
                if _allowed(role, Request(action, arn, dict(TLS))):
                    out.append(f"{tenant} role may {action} {where} {kind}")
    return out


def _listing(role: list[Statement], tenant: str, other: str, root: str) -> list[str]:
    """The role lists its own prefix, not another tenant's."""
    out = []
    listing = Request("s3:ListBucket", BUCKET_ARN, {"s3:prefix": f"{root}tenants/{other}/v1/sessions/"})
    if _allowed(role, listing):
        out.append(f"{tenant} role may list another tenant's prefix")
    if not _allowed(role, Request("s3:ListBucket", BUCKET_ARN,
                                  {"s3:prefix": f"{root}tenants/{tenant}/v1/sessions/"})):
        out.append(f"{tenant} role cannot list its own prefix")
    return out


def _tenant_key(role: list[Statement], module: dict[str, Any], tenant: str, other: str,
                root: str) -> list[str]:
    """The role decrypts with its own KMS key through S3, and with no other."""
    out = []
    via = {"kms:ViaService": resolve("${local.s3_via_service}", module, root)}
    if not _allowed(role, Request("kms:Decrypt", TENANT_KMS[tenant], via)):
        out.append(f"{tenant} role cannot use its key")
    for key in (TENANT_KMS[other], KMS_ARN):
        if _allowed(role, Request("kms:Decrypt", key, via)):
            out.append(f"{tenant} role may decrypt with a key not its own")
    return out


def _guarded_writes_and_reads(guards: list[Statement], tenant: str, other: str, root: str) -> list[str]:
    """The bucket policy admits a write under the tenant's root only with its key, and a
    read there by anyone but another tenant's role."""
    out = []
    art = _tenant_arns(tenant, root)["artifact"]
    kms_header = "s3:x-amz-server-side-encryption-aws-kms-key-id"
    for label, headers in (("without a key", {}),
                           ("with another tenant's key", {kms_header: TENANT_KMS[other]}),
                           ("with the bucket key", {kms_header: KMS_ARN})):
        if not denied_by(guards, Request("s3:PutObject", art, {**TLS, **headers})):
            out.append(f"the bucket policy lets a write under {tenant}'s root through {label}")
    if denied_by(guards, Request("s3:PutObject", art, {**TLS, kms_header: TENANT_KMS[tenant]})):
        out.append(f"the bucket policy refuses {tenant}'s own key")
    principals = ((ROLE.format(tenant), False), (GC_ROLE, False), (ROLE.format(other), True))
    for principal, should in principals:
        denied = bool(denied_by(guards, Request("s3:GetObject", art, {"aws:PrincipalArn": principal})))
        if denied != should:
            verdict = "not denied" if should else "denied"
            out.append(f"a read of {tenant}'s artifact by {principal} is {verdict}")
    return out


@pytest.fixture(scope="module")
def module() -> dict[str, Any]:
    return load_module(MODULE_DIR)


@pytest.mark.parametrize("root", ["", "team/a/"])
def test_tenants_are_isolated_by_role_key_and_bucket_policy(module: dict[str, Any], root: str) -> None:
    """Each tenant reaches its own root and key only; writes there need its key."""
    assert tenant_violations(module, root) == []


def test_the_shared_agent_role_cannot_reach_tenant_roots(module: dict[str, Any]) -> None:
    """The shared agent role's grants stop at <root>v1/: tenants' roots are outside them."""
    agent = statements(module, "agent")
    for key in TENANT_KEYS.values():
        for action in ("s3:GetObject", "s3:PutObject"):
            assert not identity_allows(agent, Request(action, f"{BUCKET_ARN}/tenants/acme/{key}", dict(TLS)))


def test_the_bucket_key_list_admits_tenant_keys(module: dict[str, Any]) -> None:
    """DenyOtherKmsKey must accept every tenant's key, or the tenant writes it requires fail."""
    bucket = blocks(module, "data", "aws_iam_policy_document")["bucket"]
    [deny] = [s for s in bucket["statement"] if s.get("sid") == "DenyOtherKmsKey"]
    values = next(c for c in deny["condition"] if c["test"] == "StringNotEquals")["values"]
    assert "local.tenant_kms_arns" in str(values)
    assert bucket["source_policy_documents"] == ["${data.aws_iam_policy_document.tenant_guards.json}"]


@pytest.mark.parametrize("weaken", ["widen_read", "drop_key_condition", "any_key"])
def test_the_checks_notice_a_weakened_tenant_policy(module: dict[str, Any], weaken: str) -> None:
    """A widened resource or a dropped condition is reported: the green run means something."""
    broken = copy.deepcopy(module)
    docs = blocks(broken, "data", "aws_iam_policy_document")
    if weaken == "widen_read":
        read = next(s for s in docs["tenant_agent"]["statement"] if s["sid"] == "ReadTenantRoot")
        read["resources"] = ["${local.bucket_arn}/*"]
        docs["tenant_agent"]["statement"] = [s for s in docs["tenant_agent"]["statement"]
                                             if s["sid"] != "NeverOutsideTheTenantRoot"]
    elif weaken == "drop_key_condition":
        docs["tenant_guards"]["dynamic"][0]["statement"]["content"][0]["condition"] = [
            {"test": "Null", "variable": "s3:x-amz-server-side-encryption-aws-kms-key-id",
             "values": ["true"]}]
    else:
        kms = next(s for s in docs["tenant_agent"]["statement"] if s["sid"] == "UseOnlyTheTenantKeyThroughS3")
        kms["resources"] = ["*"]
    assert tenant_violations(broken) != []
