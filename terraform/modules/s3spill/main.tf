# The s3spill bucket. The guarantees the library relies on (create-once artifacts, CAS-only
# manifests, conditional or version-pinned deletes) are enforced here by the platform as well:
# a client that forgets a precondition header gets 403, not a silent overwrite.
#
# Key layout (s3spill/keys.py; changing it is a breaking change, LAYOUT_VERSION v1):
#   <root>v1/sessions/<session_hash>/artifacts/<name>[.idx]         create-once
#   <root>v1/sessions/<session_hash>/journal/manifest.json          If-None-Match / If-Match
#   <root>v1/sessions/<session_hash>/journal/segments/<a>-<b>.json  create-once
#   <root>v1/owner/<session_hash>/<txid_hash>.json                  If-None-Match; removal If-Match

data "aws_caller_identity" "current" {}

data "aws_partition" "current" {}

data "aws_region" "current" {}

locals {
  root = var.key_prefix == "" ? "" : "${trim(var.key_prefix, "/")}/"

  # Object ARN patterns, one per layout class. IAM `*` also matches `/`.
  bucket_arn       = aws_s3_bucket.this.arn
  layout_objects   = "${aws_s3_bucket.this.arn}/${local.root}v1/*"
  artifact_objects = "${aws_s3_bucket.this.arn}/${local.root}v1/sessions/*/artifacts/*"
  segment_objects  = "${aws_s3_bucket.this.arn}/${local.root}v1/sessions/*/journal/segments/*"
  manifest_objects = "${aws_s3_bucket.this.arn}/${local.root}v1/sessions/*/journal/manifest.json"
  owner_objects    = "${aws_s3_bucket.this.arn}/${local.root}v1/owner/*"
  # Quota counters (s3spill.fleet.quota): the session's, next to its manifest, and the
  # store's shards. Changed by compare-and-swap, like manifests.
  usage_objects      = "${aws_s3_bucket.this.arn}/${local.root}v1/sessions/*/journal/usage.json"
  shard_objects      = "${aws_s3_bucket.this.arn}/${local.root}v1/usage/*"
  erasure_objects    = "${aws_s3_bucket.this.arn}/${local.root}v1/erasures/*"
  tenant_layouts     = "${aws_s3_bucket.this.arn}/${local.root}tenants/*/v1/*"
  tenant_manifests   = "${aws_s3_bucket.this.arn}/${local.root}tenants/*/v1/sessions/*/journal/manifest.json"
  tenant_segments    = "${aws_s3_bucket.this.arn}/${local.root}tenants/*/v1/sessions/*/journal/segments/*"
  tenant_owner       = "${aws_s3_bucket.this.arn}/${local.root}tenants/*/v1/owner/*"
  tenant_erasures    = "${aws_s3_bucket.this.arn}/${local.root}tenants/*/v1/erasures/*"
  doctor_root        = trim(var.doctor_probe_prefix, "/")
  probe_objects      = "${aws_s3_bucket.this.arn}/${local.root}${local.doctor_root}/*"
  store_url          = "s3://${aws_s3_bucket.this.id}${local.root == "" ? "" : "/${trim(local.root, "/")}"}"
  kms_key_arn        = var.kms_key_arn != null ? var.kms_key_arn : aws_kms_key.this[0].arn
  s3_via_service     = "s3.${data.aws_region.current.name}.amazonaws.com"
  account_root_arn   = "arn:${data.aws_partition.current.partition}:iam::${data.aws_caller_identity.current.account_id}:root"
  oidc_provider_host = trimprefix(var.oidc_provider_url, "https://")
}

# ---------------------------------------------------------------------------------------------
# Encryption key (only when the caller does not bring one).

data "aws_iam_policy_document" "kms" {
  count = var.kms_key_arn == null ? 1 : 0

  #checkov:skip=CKV_AWS_109:A KMS key policy's Resource "*" is the key itself; the account root must administer its own key or it becomes unmanageable.
  #checkov:skip=CKV_AWS_111:Same statement: key policies name the key as "*"; writes are limited to the owning account root, which delegates use to IAM policies.
  #checkov:skip=CKV_AWS_356:Key policies can only name their key as "*"; the statement is limited to the owning account root.
  statement {
    sid       = "AccountRootAdministersKey"
    effect    = "Allow"
    actions   = ["kms:*"]
    resources = ["*"]

    principals {
      type        = "AWS"
      identifiers = [local.account_root_arn]
    }
  }
}

resource "aws_kms_key" "this" {
  count = var.kms_key_arn == null ? 1 : 0

  description             = "s3spill bucket ${var.bucket_name} default encryption"
  enable_key_rotation     = true
  deletion_window_in_days = var.kms_deletion_window_days
  policy                  = data.aws_iam_policy_document.kms[0].json
  tags                    = var.tags
}

resource "aws_kms_alias" "this" {
  count = var.kms_key_arn == null ? 1 : 0

  name          = "alias/${var.name}-${var.bucket_name}"
  target_key_id = aws_kms_key.this[0].key_id
}

# ---------------------------------------------------------------------------------------------
# The bucket.

resource "aws_s3_bucket" "this" {
  #checkov:skip=CKV_AWS_144:Cross-region replication is a deployment choice (cost, data residency); durability here comes from versioning plus the undo window, and artifacts are reproducible tool output.
  #checkov:skip=CKV2_AWS_62:No consumer of S3 event notifications exists; s3spill reads its own journals instead of reacting to events.
  #checkov:skip=CKV_AWS_18:Server access logging is optional (var.access_log_bucket) because the target bucket belongs to the account's logging setup, not to this module.
  bucket        = var.bucket_name
  force_destroy = false
  tags          = var.tags
}

resource "aws_s3_bucket_versioning" "this" {
  bucket = aws_s3_bucket.this.id

  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "this" {
  bucket = aws_s3_bucket.this.id

  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = "aws:kms"
      kms_master_key_id = local.kms_key_arn
    }
    bucket_key_enabled = true
  }
}

resource "aws_s3_bucket_public_access_block" "this" {
  bucket = aws_s3_bucket.this.id

  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "this" {
  bucket = aws_s3_bucket.this.id

  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_logging" "this" {
  count = var.access_log_bucket == null ? 0 : 1

  bucket        = aws_s3_bucket.this.id
  target_bucket = var.access_log_bucket
  target_prefix = var.access_log_prefix
}

resource "aws_s3_bucket_lifecycle_configuration" "this" {
  bucket = aws_s3_bucket.this.id

  # A crashed writer leaves parts that are invisible and billed: abort them.
  rule {
    id     = "abort-incomplete-multipart-uploads"
    status = "Enabled"

    filter {}

    abort_incomplete_multipart_upload {
      days_after_initiation = var.abort_incomplete_multipart_days
    }
  }

  # GC deletes (and any overwrite) leave a noncurrent version: that is the undo window.
  rule {
    id     = "expire-noncurrent-versions-after-undo-window"
    status = "Enabled"

    filter {
      prefix = local.root
    }

    noncurrent_version_expiration {
      noncurrent_days = var.undo_window_days
    }

    expiration {
      expired_object_delete_marker = true
    }
  }

  depends_on = [aws_s3_bucket_versioning.this]
}

# ---------------------------------------------------------------------------------------------
# Bucket policy: transport security and platform-enforced conditional writes and deletes.
# Deny statements apply to every principal, administrators included; lifecycle expiration is
# not subject to bucket policies and keeps working.

data "aws_iam_policy_document" "bucket" {
  # Per-tenant guards (tenants.tf): writes under a tenant's root need its key; reads its role.
  source_policy_documents = [data.aws_iam_policy_document.tenant_guards.json]

  statement {
    sid       = "DenyInsecureTransport"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [local.bucket_arn, "${local.bucket_arn}/*"]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }

  statement {
    sid       = "DenyTLSBelow12"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [local.bucket_arn, "${local.bucket_arn}/*"]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "NumericLessThan"
      variable = "s3:TlsVersion"
      values   = ["1.2"]
    }
  }

  # Artifacts, their .idx sidecars and journal segments are create-once: a PutObject or
  # CompleteMultipartUpload without If-None-Match is refused. s3:ObjectCreationOperation is
  # false for CreateMultipartUpload/UploadPart/UploadPartCopy, which cannot carry the header.
  statement {
    sid       = "DenyCreateOnceWritesWithoutIfNoneMatch"
    effect    = "Deny"
    actions   = ["s3:PutObject"]
    resources = [local.artifact_objects, local.segment_objects]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Null"
      variable = "s3:if-none-match"
      values   = ["true"]
    }

    condition {
      test     = "Bool"
      variable = "s3:ObjectCreationOperation"
      values   = ["true"]
    }
  }

  # Owner publication slots are created with If-None-Match; a slot's removal replaces it
  # with a tombstone under If-Match. Anything without either header is refused.
  statement {
    sid       = "DenyOwnerSlotWritesWithoutPrecondition"
    effect    = "Deny"
    actions   = ["s3:PutObject"]
    resources = [local.owner_objects]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Null"
      variable = "s3:if-none-match"
      values   = ["true"]
    }

    condition {
      test     = "Null"
      variable = "s3:if-match"
      values   = ["true"]
    }

    condition {
      test     = "Bool"
      variable = "s3:ObjectCreationOperation"
      values   = ["true"]
    }
  }

  # Manifests are compare-and-swap only: If-None-Match to create, If-Match to update.
  statement {
    sid       = "DenyManifestWritesWithoutPrecondition"
    effect    = "Deny"
    actions   = ["s3:PutObject"]
    resources = [local.manifest_objects]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Null"
      variable = "s3:if-none-match"
      values   = ["true"]
    }

    condition {
      test     = "Null"
      variable = "s3:if-match"
      values   = ["true"]
    }

    condition {
      test     = "Bool"
      variable = "s3:ObjectCreationOperation"
      values   = ["true"]
    }
  }

  # Defence in depth: nothing anywhere under the layout is ever written blindly, including
  # object classes a future layout adds.
  statement {
    sid       = "DenyLayoutWritesWithoutPrecondition"
    effect    = "Deny"
    actions   = ["s3:PutObject"]
    resources = [local.layout_objects]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Null"
      variable = "s3:if-none-match"
      values   = ["true"]
    }

    condition {
      test     = "Null"
      variable = "s3:if-match"
      values   = ["true"]
    }

    condition {
      test     = "Bool"
      variable = "s3:ObjectCreationOperation"
      values   = ["true"]
    }
  }

  # A DeleteObject must name the ETag it saw (If-Match). A version-pinned delete is the
  # separate action s3:DeleteObjectVersion, which only the GC role is granted.
  statement {
    sid       = "DenyDeletesWithoutIfMatch"
    effect    = "Deny"
    actions   = ["s3:DeleteObject"]
    resources = ["${local.bucket_arn}/${local.root}*"]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Null"
      variable = "s3:if-match"
      values   = ["true"]
    }
  }

  # Objects may only be encrypted with this bucket's key (or by default encryption).
  statement {
    sid       = "DenyOtherEncryption"
    effect    = "Deny"
    actions   = ["s3:PutObject"]
    resources = ["${local.bucket_arn}/*"]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    # Only when the request names an encryption setting at all (absent = default encryption);
    # a negated operator alone would also match requests without the header.
    condition {
      test     = "Null"
      variable = "s3:x-amz-server-side-encryption"
      values   = ["false"]
    }

    condition {
      test     = "StringNotEquals"
      variable = "s3:x-amz-server-side-encryption"
      values   = ["aws:kms"]
    }
  }

  statement {
    sid       = "DenyOtherKmsKey"
    effect    = "Deny"
    actions   = ["s3:PutObject"]
    resources = ["${local.bucket_arn}/*"]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    # Only when the request names an encryption setting at all (absent = default encryption);
    # a negated operator alone would also match requests without the header.
    condition {
      test     = "Null"
      variable = "s3:x-amz-server-side-encryption-aws-kms-key-id"
      values   = ["false"]
    }

    condition {
      test     = "StringNotEquals"
      variable = "s3:x-amz-server-side-encryption-aws-kms-key-id"
      values   = concat([local.kms_key_arn], values(local.tenant_kms_arns))
    }
  }
}

resource "aws_s3_bucket_policy" "this" {
  bucket = aws_s3_bucket.this.id
  policy = data.aws_iam_policy_document.bucket.json

  # The policy denies public access anyway; applying the block first avoids a window in
  # which a public policy could be accepted.
  depends_on = [aws_s3_bucket_public_access_block.this]
}
