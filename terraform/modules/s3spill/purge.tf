# The role `s3spill purge` runs with (erasure on request, s3spill.fleet.purge). Not GC's: a
# purge writes what GC never may — sealed owner-slot tombstones, the manifest tombstone and
# the audit record under v1/erasures/ — and deletes referenced artifacts. Bound to its own
# service account, so running it is a separate, deliberate grant.

variable "purge_service_account_name" {
  description = "Name of the Kubernetes service account (in gc_namespace) bound to the purge role; the role exists either way, unused until something assumes it."
  type        = string
  default     = "s3spill-purge"
}

data "aws_iam_policy_document" "purge_assume" {
  statement {
    sid     = "AssumeFromPurgeServiceAccount"
    effect  = "Allow"
    actions = ["sts:AssumeRoleWithWebIdentity"]

    principals {
      type        = "Federated"
      identifiers = [var.oidc_provider_arn]
    }

    condition {
      test     = "StringEquals"
      variable = "${local.oidc_provider_host}:aud"
      values   = ["sts.amazonaws.com"]
    }

    condition {
      test     = "StringEquals"
      variable = "${local.oidc_provider_host}:sub"
      values   = ["system:serviceaccount:${var.gc_namespace}:${var.purge_service_account_name}"]
    }
  }
}

data "aws_iam_policy_document" "purge" {
  statement {
    sid       = "ListBucketAndVersions"
    effect    = "Allow"
    actions   = ["s3:ListBucket", "s3:ListBucketVersions"]
    resources = [local.bucket_arn]
  }

  statement {
    sid       = "ReadLayout"
    effect    = "Allow"
    actions   = ["s3:GetObject", "s3:GetObjectVersion", "s3:GetObjectAttributes"]
    resources = [local.layout_objects, local.tenant_layouts]
  }

  statement {
    sid     = "SealsAndAuditRecords"
    effect  = "Allow"
    actions = ["s3:PutObject"]
    resources = [
      local.manifest_objects, local.owner_objects, local.erasure_objects,
      local.tenant_manifests, local.tenant_owner, local.tenant_erasures,
    ]
  }

  statement {
    sid       = "ConditionalAndVersionPinnedDeletes"
    effect    = "Allow"
    actions   = ["s3:DeleteObject", "s3:DeleteObjectVersion"]
    resources = [local.layout_objects, local.tenant_layouts]
  }

  statement {
    sid       = "UseBucketAndTenantKeysThroughS3"
    effect    = "Allow"
    actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
    resources = concat([local.kms_key_arn], values(local.tenant_kms_arns))

    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = [local.s3_via_service]
    }
  }

  statement {
    sid    = "NeverLoosenGuarantees"
    effect = "Deny"
    actions = [
      "s3:DeleteBucket",
      "s3:DeleteBucketPolicy",
      "s3:PutBucketPolicy",
      "s3:PutLifecycleConfiguration",
      "s3:PutBucketVersioning",
      "s3:PutEncryptionConfiguration",
      "s3:PutBucketPublicAccessBlock",
    ]
    resources = [local.bucket_arn]
  }
}

resource "aws_iam_role" "purge" {
  name                 = "${var.name}-purge"
  description          = "s3spill purge: seal a session (tombstones, audit record) and delete everything of it."
  assume_role_policy   = data.aws_iam_policy_document.purge_assume.json
  permissions_boundary = var.iam_permissions_boundary_arn
  max_session_duration = 3600
  tags                 = var.tags
}

resource "aws_iam_role_policy" "purge" {
  name   = "${var.name}-purge-s3"
  role   = aws_iam_role.purge.id
  policy = data.aws_iam_policy_document.purge.json
}

output "purge_role_arn" {
  description = "IAM role for `s3spill purge` (bound to the purge service account)."
  value       = aws_iam_role.purge.arn
}
