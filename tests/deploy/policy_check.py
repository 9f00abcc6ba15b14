"""Static checker for the Terraform module: parse the HCL, evaluate its policies.

The module's guarantees are policy text, and policy text is easy to weaken by accident
(a dropped condition, a widened resource). So the checks here do not look for strings:
they load every ``*.tf`` file with python-hcl2, resolve the module's ``locals`` into ARN
patterns, and evaluate each IAM policy document against concrete requests built from the
real key layout (:mod:`s3spill.keys`) — "a PutObject of an artifact key without
If-None-Match" — with a small evaluator for exactly the condition operators the module
uses. :func:`violations` returns one sentence per broken guarantee; the tests assert it is
empty for the real module and non-empty for deliberately weakened copies.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hcl2
from hcl2 import SerializationOptions

from s3spill import keys
from s3spill.store.probes import SCRATCH

REPO = Path(__file__).resolve().parents[2]
MODULE_DIR = REPO / "terraform" / "modules" / "s3spill"
EXAMPLE_DIR = REPO / "terraform" / "examples" / "aws"

BUCKET_ARN = "arn:aws:s3:::s3spill-test-bucket"
KMS_ARN = "arn:aws:kms:eu-west-1:123456789012:key/test"

_OPTIONS = SerializationOptions(with_comments=False, explicit_blocks=False, strip_string_quotes=True)

Module = dict[str, Any]


def load_module(directory: Path) -> Module:
    """Merge every ``*.tf`` file of a directory into one dict of block lists."""
    merged: Module = {}
    files = sorted(directory.glob("*.tf"))
    if not files:
        raise FileNotFoundError(f"no .tf files in {directory}")
    for path in files:
        with path.open(encoding="utf-8") as fh:
            parsed = hcl2.load(fh, serialization_options=_OPTIONS)
        for kind, blocks in parsed.items():
            merged.setdefault(kind, []).extend(blocks)
    return merged


def blocks(module: Module, kind: str, type_: str) -> dict[str, dict[str, Any]]:
    """``resource``/``data`` blocks of one type, by name."""
    found: dict[str, dict[str, Any]] = {}
    for entry in module.get(kind, []):
        for t, by_name in entry.items():
            if t == type_:
                found.update(by_name)
    return found


def named(module: Module, kind: str) -> dict[str, dict[str, Any]]:
    """``variable``/``output`` blocks by name."""
    found: dict[str, dict[str, Any]] = {}
    for entry in module.get(kind, []):
        found.update(entry)
    return found


def local_values(module: Module) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for entry in module.get("locals", []):
        values.update(entry)
    return values


_LOCAL_REF = re.compile(r"\$\{local\.([a-z_0-9]+)\}")


def resolve(text: str, module: Module, root: str = "") -> str:
    """Expand ``${local.x}`` references into text, with the bucket ARN and store root filled in."""
    values = local_values(module)
    probe_prefix = named(module, "variable").get("doctor_probe_prefix", {}).get("default", "")
    replacements = {
        "root": root,
        "bucket_arn": BUCKET_ARN,
        "kms_key_arn": KMS_ARN,
        "doctor_root": str(probe_prefix).strip("/"),
    }
    for _ in range(10):

        def sub(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in replacements:
                return replacements[name]
            value = values.get(name)
            return value if isinstance(value, str) else match.group(0)

        new = _LOCAL_REF.sub(sub, text)
        new = new.replace("${aws_s3_bucket.this.arn}", BUCKET_ARN)
        if new == text:
            break
        text = new
    return text


# --------------------------------------------------------------------------------------
# A tiny IAM evaluator for the operators this module uses.


@dataclass(frozen=True)
class Statement:
    sid: str
    effect: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    conditions: tuple[tuple[str, str, tuple[str, ...]], ...]
    principals: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass
class Request:
    """One API call as IAM sees it: action, resource ARN and the request's context keys."""

    action: str
    resource: str
    context: dict[str, str] = field(default_factory=dict)


def statements(module: Module, document: str, root: str = "") -> list[Statement]:
    """The statements of ``data.aws_iam_policy_document.<document>``, with ARNs resolved."""
    docs = blocks(module, "data", "aws_iam_policy_document")
    if document not in docs:
        return []
    out = []
    for st in docs[document].get("statement", []):
        conditions = tuple(
            (
                c["test"],
                resolve(c["variable"], module, root),
                tuple(_as_list(c["values"], module, root)),
            )
            for c in st.get("condition", [])
        )
        principals = tuple(
            (p["type"], tuple(_as_list(p["identifiers"], module, root))) for p in st.get("principals", [])
        )
        out.append(
            Statement(
                sid=st.get("sid", ""),
                effect=st.get("effect", "Allow"),
                actions=tuple(st.get("actions", [])),
                resources=tuple(_as_list(st.get("resources", []), module, root)),
                conditions=conditions,
                principals=principals,
            )
        )
    return out


def _as_list(value: Any, module: Module, root: str) -> list[str]:
    if isinstance(value, str):
        # A bare reference to a list-valued local, e.g. values = local.agent_subjects.
        match = re.fullmatch(r"\$\{local\.([a-z_0-9]+)\}", value)
        if match and isinstance(local_values(module).get(match.group(1)), list):
            return _as_list(local_values(module)[match.group(1)], module, root)
        return [resolve(value, module, root)]
    return [resolve(str(v), module, root) for v in value]


def _glob(pattern: str, value: str) -> bool:
    # IAM wildcards: * matches any run of characters including '/', ? one character.
    return fnmatch.fnmatchcase(value, pattern)


def _condition_holds(test: str, variable: str, values: tuple[str, ...], context: Mapping[str, str]) -> bool:
    present = variable in context
    actual = context.get(variable)
    if test == "Null":
        # Null=true: the key is absent; Null=false: it is present.
        return any((v == "true") == (not present) for v in values)
    if test.endswith("IfExists") and not present:
        return True
    base = test.removesuffix("IfExists")
    if not present or actual is None:
        return base.startswith("StringNot") or base.startswith("ArnNot")
    if base == "Bool":
        return actual.lower() in {v.lower() for v in values}
    if base == "StringEquals":
        return actual in values
    if base == "StringNotEquals":
        return actual not in values
    if base == "StringLike":
        return any(_glob(v, actual) for v in values)
    if base == "StringNotLike":
        return not any(_glob(v, actual) for v in values)
    if base == "NumericLessThan":
        return any(float(actual) < float(v) for v in values)
    raise ValueError(f"operator {test} is not modelled by the checker")


def applies(st: Statement, request: Request) -> bool:
    """Whether a statement matches the request (action, resource and every condition)."""
    if not any(_glob(a, request.action) for a in st.actions):
        return False
    if not any(_glob(r, request.resource) for r in st.resources):
        return False
    return all(_condition_holds(t, var, vals, request.context) for t, var, vals in st.conditions)


def denied_by(sts: Iterable[Statement], request: Request) -> list[str]:
    return [st.sid for st in sts if st.effect == "Deny" and applies(st, request)]


def allowed_by(sts: Iterable[Statement], request: Request) -> list[str]:
    return [st.sid for st in sts if st.effect == "Allow" and applies(st, request)]


def identity_allows(sts: list[Statement], request: Request) -> bool:
    """Identity-policy decision: some Allow matches and no Deny does."""
    return bool(allowed_by(sts, request)) and not denied_by(sts, request)


# --------------------------------------------------------------------------------------
# Requests built from the real key layout.

SESSION = keys.session_hash("deploy-check-session")
NAME = keys.new_artifact_name("bash")
LAYOUT_KEYS = {
    "artifact": keys.artifact_key(SESSION, NAME),
    "index": keys.index_key(SESSION, NAME),
    "segment": keys.segment_key(SESSION, 0, 41),
    "manifest": keys.manifest_key(SESSION),
    "owner": keys.owner_slot_key(SESSION, "tx-1"),
}
CREATE_ONCE = ("artifact", "index", "segment")

TLS = {"aws:SecureTransport": "true", "s3:TlsVersion": "1.3"}
IF_NONE_MATCH = {"s3:if-none-match": "*"}
IF_MATCH = {"s3:if-match": '"etag"'}


def obj(key: str, root: str = "") -> str:
    return f"{BUCKET_ARN}/{root}{key}"


def put(key: str, *, root: str = "", creation: bool = True, **headers: str) -> Request:
    context = dict(TLS)
    context["s3:ObjectCreationOperation"] = "true" if creation else "false"
    context.update(headers)
    return Request("s3:PutObject", obj(key, root), context)


def bucket_policy_violations(module: Module, root: str = "") -> list[str]:
    """Each sentence names a platform guarantee the bucket policy fails to enforce."""
    sts = statements(module, "bucket", root)
    if not sts:
        return ["no bucket policy document (data.aws_iam_policy_document.bucket)"]
    out = [f"deny statement {st.sid} does not apply to every principal" for st in sts
           if st.effect == "Deny" and st.principals != (("*", ("*",)),)]
    return [*out, *_transport(sts, root), *_create_once(sts, root),
            *_conditional_only(sts, root, "owner", "an owner slot"),
            *_conditional_only(sts, root, "manifest", "a manifest"), *_deletes(sts, root)]


def _transport(sts: list[Statement], root: str) -> list[str]:
    """Plain HTTP is denied, on objects and on the bucket."""
    out: list[str] = []
    plain = Request("s3:GetObject", obj(LAYOUT_KEYS["artifact"], root), {"aws:SecureTransport": "false"})
    if not denied_by(sts, plain):
        out.append("a request over plain HTTP (aws:SecureTransport=false) is not denied")
    if not denied_by(sts, Request("s3:ListBucket", BUCKET_ARN, {"aws:SecureTransport": "false"})):
        out.append("a bucket-level request over plain HTTP is not denied")
    return out


def _create_once(sts: list[Statement], root: str) -> list[str]:
    """Create-once classes: only If-None-Match may create; multipart parts stay allowed."""
    out: list[str] = []
    for kind in CREATE_ONCE:
        key = LAYOUT_KEYS[kind]
        if not denied_by(sts, put(key, root=root)):
            out.append(f"PutObject of a {kind} key without If-None-Match is not denied")
        if not denied_by(sts, put(key, root=root, **{"s3:if-match": '"e"'})):
            out.append(f"PutObject of a {kind} key with only If-Match (an overwrite) is not denied")
        if denied_by(sts, put(key, root=root, **IF_NONE_MATCH)):
            out.append(f"PutObject of a {kind} key with If-None-Match is denied")
        if denied_by(sts, put(key, root=root, creation=False)):
            out.append(f"UploadPart for a {kind} key (ObjectCreationOperation=false) is denied")
    return out


def _conditional_only(sts: list[Statement], root: str, slot: str, what: str) -> list[str]:
    """Owner slots and manifests: create with If-None-Match or swap with If-Match; nothing blind."""
    out: list[str] = []
    key = LAYOUT_KEYS[slot]
    if not denied_by(sts, put(key, root=root)):
        out.append(f"PutObject of {what} without If-None-Match or If-Match is not denied")
    for headers in (IF_NONE_MATCH, IF_MATCH):
        if denied_by(sts, put(key, root=root, **headers)):
            out.append(f"PutObject of {what} with {sorted(headers)} is denied")
    return out


def _deletes(sts: list[Statement], root: str) -> list[str]:
    """Deletes: If-Match, or the separate version-pinned action."""
    out: list[str] = []
    for kind, key in LAYOUT_KEYS.items():
        if not denied_by(sts, Request("s3:DeleteObject", obj(key, root), dict(TLS))):
            out.append(f"DeleteObject of a {kind} key without If-Match is not denied")
        if denied_by(sts, Request("s3:DeleteObject", obj(key, root), {**TLS, **IF_MATCH})):
            out.append(f"DeleteObject of a {kind} key with If-Match is denied")
        if denied_by(sts, Request("s3:DeleteObjectVersion", obj(key, root), {**TLS, "s3:versionid": "v1"})):
            out.append(f"a version-pinned delete of a {kind} key is denied by the bucket policy")
    return out


def role_violations(module: Module, root: str = "") -> list[str]:
    """Each sentence names a broken guarantee of the agent or GC role."""
    agent = statements(module, "agent", root)
    gc = statements(module, "gc", root)
    if not agent or not gc:
        return ["agent or gc policy document missing"]
    return [*_agent_role(agent, root), *_gc_role(gc, root), *_scratch_and_outside(agent, gc, root),
            *_inline_policies(module), *_trust(module, root)]


def _agent_role(agent: list[Statement], root: str) -> list[str]:
    """The agent reads and writes every layout key and deletes none, nor changes the bucket."""
    out: list[str] = []
    for st in agent:
        if st.effect != "Allow":
            continue
        for action in st.actions:
            if action in {"*", "s3:*"} or action.startswith("s3:Delete") or action.startswith("s3:PutBucket"):
                out.append(f"agent role statement {st.sid} allows {action}")
    for kind, key in LAYOUT_KEYS.items():
        for action in ("s3:DeleteObject", "s3:DeleteObjectVersion"):
            if identity_allows(agent, Request(action, obj(key, root), {**TLS, **IF_MATCH})):
                out.append(f"agent role may {action} a {kind} key")
        if not identity_allows(agent, Request("s3:GetObject", obj(key, root))):
            out.append(f"agent role cannot read a {kind} key")
        if not identity_allows(agent, Request("s3:PutObject", obj(key, root))):
            out.append(f"agent role cannot write a {kind} key")
    return out


def _gc_role(gc: list[Statement], root: str) -> list[str]:
    """GC reads and deletes every layout key, lists the bucket, and writes only manifests."""
    out: list[str] = []
    for kind, key in LAYOUT_KEYS.items():
        for action in ("s3:DeleteObject", "s3:DeleteObjectVersion", "s3:GetObject"):
            if not identity_allows(gc, Request(action, obj(key, root))):
                out.append(f"gc role cannot {action} a {kind} key")
    if not identity_allows(gc, Request("s3:PutObject", obj(LAYOUT_KEYS["manifest"], root))):
        out.append("gc role cannot compare-and-swap a manifest")
    for kind in ("artifact", "index", "owner"):
        if identity_allows(gc, Request("s3:PutObject", obj(LAYOUT_KEYS[kind], root))):
            out.append(f"gc role may write a {kind} key (it only CASes manifests)")
    for action in (
        "s3:ListBucket",
        "s3:ListBucketVersions",
        "s3:ListBucketMultipartUploads",
        "s3:GetBucketVersioning",
    ):
        if not identity_allows(gc, Request(action, BUCKET_ARN)):
            out.append(f"gc role cannot {action}")
    return out


def _scratch_and_outside(agent: list[Statement], gc: list[Statement], root: str) -> list[str]:
    """The doctor's scratch prefix is GC's alone, and neither role writes outside the layout."""
    out: list[str] = []
    # `s3spill doctor` (run by GC to pick its delete method) writes, reads and removes
    # scratch objects under s3spill.store.probes.SCRATCH; the bucket policy must let it clean up.
    probe = obj(f"{SCRATCH}/0123456789abcdef/object", root)
    for action in ("s3:PutObject", "s3:GetObject", "s3:DeleteObjectVersion", "s3:AbortMultipartUpload"):
        if not identity_allows(gc, Request(action, probe)):
            out.append(f"gc role cannot {action} the doctor's scratch objects")
    if identity_allows(agent, Request("s3:PutObject", probe)):
        out.append("agent role may write the doctor's scratch prefix")
    outside = f"{BUCKET_ARN}/someone-elses/data"
    for name, sts in (("agent", agent), ("gc", gc)):
        if identity_allows(sts, Request("s3:DeleteObject", outside)) or identity_allows(
            sts, Request("s3:PutObject", outside)
        ):
            out.append(f"{name} role may write or delete outside the s3spill layout")
    return out


def _inline_policies(module: Module) -> list[str]:
    """Each role's inline policy is exactly its document, and nothing else is attached."""
    out: list[str] = []
    inline = blocks(module, "resource", "aws_iam_role_policy")
    for name in ("agent", "gc"):
        pol = inline.get(name, {})
        if (
            pol.get("policy") != f"${{data.aws_iam_policy_document.{name}.json}}"
            or pol.get("role") != f"${{aws_iam_role.{name}.id}}"
        ):
            out.append(f"{name} role's inline policy is not data.aws_iam_policy_document.{name}")
    if blocks(module, "resource", "aws_iam_role_policy_attachment") or blocks(
        module, "resource", "aws_iam_policy_attachment"
    ):
        out.append("a managed policy is attached to a role: its permissions escape these checks")
    return out


def _trust(module: Module, root: str) -> list[str]:
    """Trust: IRSA web identity from the OIDC provider, pinned to service accounts and audience."""
    out: list[str] = []
    roles = blocks(module, "resource", "aws_iam_role")
    for name in ("agent", "gc"):
        trust_doc = f"{name}_assume"
        if (
            roles.get(name, {}).get("assume_role_policy")
            != f"${{data.aws_iam_policy_document.{trust_doc}.json}}"
        ):
            out.append(f"{name} role does not use {trust_doc} as its trust policy")
        trust = statements(module, trust_doc, root)
        ok = [
            st
            for st in trust
            if st.effect == "Allow"
            and st.actions == ("sts:AssumeRoleWithWebIdentity",)
            and st.principals == (("Federated", ("${var.oidc_provider_arn}",)),)
            and {var.rsplit(":", 1)[-1] for test, var, _ in st.conditions if test == "StringEquals"}
            >= {"sub", "aud"}
        ]
        if len(ok) != len(trust) or not ok:
            out.append(f"{name} trust policy is not IRSA pinned to service account subject and audience")
    return out


def bucket_violations(module: Module) -> list[str]:
    """Bucket settings: versioning, SSE-KMS with bucket key, public access, ownership, lifecycle."""
    out: list[str] = []
    bucket = blocks(module, "resource", "aws_s3_bucket").get("this", {})
    if bucket.get("force_destroy") is not False:
        out.append("bucket force_destroy is not explicitly false")
    _versioning_and_encryption(module, out)
    _access(module, out)
    _lifecycle(module, out)
    return out


def _bucket_resource(module: Module, type_: str, out: list[str]) -> dict[str, Any]:
    """The ``type_.this`` resource of the s3spill bucket (``{}`` and a sentence when it is not)."""
    found = blocks(module, "resource", type_)
    if "this" not in found:
        out.append(f"resource {type_}.this is missing")
        return {}
    if found["this"].get("bucket") != "${aws_s3_bucket.this.id}":
        out.append(f"{type_}.this does not apply to the s3spill bucket")
    return found["this"]


def _versioning_and_encryption(module: Module, out: list[str]) -> None:
    versioning = _bucket_resource(module, "aws_s3_bucket_versioning", out)
    if versioning and versioning["versioning_configuration"][0].get("status") != "Enabled":
        out.append("bucket versioning is not Enabled")
    sse = _bucket_resource(module, "aws_s3_bucket_server_side_encryption_configuration", out)
    if sse:
        rule = sse["rule"][0]
        default = rule["apply_server_side_encryption_by_default"][0]
        if default.get("sse_algorithm") != "aws:kms" or not default.get("kms_master_key_id"):
            out.append("default encryption is not SSE-KMS with a key")
        if rule.get("bucket_key_enabled") is not True:
            out.append("S3 bucket key is not enabled")


def _access(module: Module, out: list[str]) -> None:
    """No public access, no ACLs, and the bucket policy is the checked document."""
    pab = _bucket_resource(module, "aws_s3_bucket_public_access_block", out)
    for flag in (
        "block_public_acls",
        "block_public_policy",
        "ignore_public_acls",
        "restrict_public_buckets",
    ):
        if pab and pab.get(flag) is not True:
            out.append(f"public access block {flag} is not true")
    own = _bucket_resource(module, "aws_s3_bucket_ownership_controls", out)
    if own and own["rule"][0].get("object_ownership") != "BucketOwnerEnforced":
        out.append("object ownership is not BucketOwnerEnforced (ACLs stay enabled)")
    policy = _bucket_resource(module, "aws_s3_bucket_policy", out)
    if policy and policy.get("policy") != "${data.aws_iam_policy_document.bucket.json}":
        out.append("the bucket policy is not data.aws_iam_policy_document.bucket")


def _lifecycle(module: Module, out: list[str]) -> None:
    """Incomplete uploads are aborted (after a day by default); old versions expire after the undo window."""
    lifecycle = _bucket_resource(module, "aws_s3_bucket_lifecycle_configuration", out)
    rules = lifecycle.get("rule", []) if lifecycle else []
    enabled = [r for r in rules if r.get("status") == "Enabled"]
    if not any(r.get("abort_incomplete_multipart_upload") for r in enabled):
        out.append("no enabled lifecycle rule aborts incomplete multipart uploads")
    noncurrent = [
        r["noncurrent_version_expiration"][0] for r in enabled if r.get("noncurrent_version_expiration")
    ]
    if not any(n.get("noncurrent_days") == "${var.undo_window_days}" for n in noncurrent):
        out.append("noncurrent versions do not expire after var.undo_window_days")
    abort_days = named(module, "variable").get("abort_incomplete_multipart_days", {}).get("default")
    if abort_days != 1:
        out.append("incomplete multipart uploads are not aborted after one day by default")


def cronjob_violations(module: Module) -> list[str]:
    out: list[str] = []
    job = blocks(module, "resource", "kubernetes_cron_job_v1").get("gc")
    if job is None:
        return ["kubernetes_cron_job_v1.gc is missing"]
    if job.get("count") != "${var.enable_gc_cronjob ? 1 : 0}":
        out.append("the CronJob is not behind var.enable_gc_cronjob")
    spec = job["spec"][0]
    if spec.get("concurrency_policy") != "Forbid":
        out.append("concurrency_policy is not Forbid")
    job_spec = spec["job_template"][0]["spec"][0]
    pod = job_spec["template"][0]["spec"][0]
    container = pod["container"][0]
    args = local_values(module).get("gc_base_args", [])
    if container.get("args") != "${local.gc_args}" or args[-4:] != [
        "gc",
        "run",
        "--apply",
        "--all",
    ]:
        out.append("the container does not run `s3spill gc run --apply --all`")
    if "Indexed" not in str(job_spec.get("completion_mode")) or "--shard" not in str(local_values(module)):
        out.append("sharded runs are not an indexed job passing --shard K/N")
    resources = container.get("resources", [{}])[0]
    if not resources.get("limits") or not resources.get("requests"):
        out.append("the GC container has no resource requests and limits")
    csc = container.get("security_context", [{}])[0]
    if csc.get("read_only_root_filesystem") is not True:
        out.append("the GC container's root filesystem is writable")
    if csc.get("allow_privilege_escalation") is not False:
        out.append("the GC container allows privilege escalation")
    if (
        csc.get("run_as_non_root") is not True
        or pod.get("security_context", [{}])[0].get("run_as_non_root") is not True
    ):
        out.append("the GC pod may run as root")
    if pod.get("service_account_name") != "${kubernetes_service_account_v1.gc[0].metadata[0].name}":
        out.append("the GC pod does not use the GC service account")
    sa = blocks(module, "resource", "kubernetes_service_account_v1").get("gc", {})
    annotations = sa.get("metadata", [{}])[0].get("annotations", {})
    if annotations.get("eks.amazonaws.com/role-arn") != "${aws_iam_role.gc.arn}":
        out.append("the GC service account is not bound to the GC role")
    return out


def documentation_violations(module: Module) -> list[str]:
    out = []
    for kind in ("variable", "output"):
        for name, body in named(module, kind).items():
            if len(str(body.get("description", ""))) < 10:
                out.append(f"{kind} {name} has no description")
    return out


def violations(module: Module, root: str = "") -> list[str]:
    """Every broken guarantee of the module, one sentence each (empty when all hold)."""
    return (
        bucket_violations(module)
        + bucket_policy_violations(module, root)
        + role_violations(module, root)
        + cronjob_violations(module)
        + documentation_violations(module)
    )
