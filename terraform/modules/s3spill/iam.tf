# Two roles, both assumed from Kubernetes service accounts through IRSA:
#   agent: creates artifacts, CAS-updates manifests, publishes owner slots, reads. It can
#          never delete: losing evidence is not something an agent process may do.
#   gc:    lists, reads, appends to journals (manifest CAS, create-once segments: the
#          condemnation fence), deletes (If-Match or by version id, enforced by the bucket
#          policy), and runs the doctor's probes.

locals {
  agent_subjects = [for sa in var.agent_service_accounts : "system:serviceaccount:${sa.namespace}:${sa.name}"]
  gc_subject     = "system:serviceaccount:${var.gc_namespace}:${var.gc_service_account_name}"
  layout_list_prefixes = [
    "${local.root}v1/*",
  ]
}

data "aws_iam_policy_document" "agent_assume" {
  statement {
    sid     = "AssumeFromAgentServiceAccounts"
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
      values   = local.agent_subjects
    }
  }
}

data "aws_iam_policy_document" "gc_assume" {
  statement {
    sid     = "AssumeFromGcServiceAccount"
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
      values   = [local.gc_subject]
    }
  }
}

data "aws_iam_policy_document" "agent" {
  statement {
    sid     = "CreateArtifactsSegmentsAndOwnerSlots"
    effect  = "Allow"
    actions = ["s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"]
    resources = [
      local.artifact_objects,
      local.segment_objects,
      local.owner_objects,
    ]
  }

  statement {
    sid       = "CompareAndSwapManifestsAndQuotaCounters"
    effect    = "Allow"
    actions   = ["s3:PutObject"]
    resources = [local.manifest_objects, local.usage_objects, local.shard_objects]
  }

  statement {
    sid       = "ReadLayout"
    effect    = "Allow"
    actions   = ["s3:GetObject", "s3:GetObjectVersion", "s3:GetObjectAttributes"]
    resources = [local.layout_objects]
  }

  statement {
    sid       = "ListLayout"
    effect    = "Allow"
    actions   = ["s3:ListBucket"]
    resources = [local.bucket_arn]

    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = local.layout_list_prefixes
    }
  }

  statement {
    sid       = "UseBucketKeyThroughS3"
    effect    = "Allow"
    actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
    resources = [local.kms_key_arn]

    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = [local.s3_via_service]
    }
  }

  # Belt and braces: even if someone later attaches a broader policy to this role, it
  # cannot delete objects, versions, or the guarantees themselves.
  statement {
    sid    = "NeverDeleteOrLoosenGuarantees"
    effect = "Deny"
    actions = [
      "s3:DeleteObject",
      "s3:DeleteObjectVersion",
      "s3:DeleteBucket",
      "s3:DeleteBucketPolicy",
      "s3:PutBucketPolicy",
      "s3:PutLifecycleConfiguration",
      "s3:PutBucketVersioning",
      "s3:PutEncryptionConfiguration",
      "s3:PutBucketPublicAccessBlock",
    ]
    resources = [local.bucket_arn, "${local.bucket_arn}/*"]
  }
}

data "aws_iam_policy_document" "gc" {
  # GC lists the whole store root: objects that are not s3spill's are reported, never touched.
  # The versioning status and pending uploads are read by the doctor's probes and cleanup.
  statement {
    sid    = "ListBucketAndVersions"
    effect = "Allow"
    actions = [
      "s3:ListBucket",
      "s3:ListBucketVersions",
      "s3:ListBucketMultipartUploads",
      "s3:GetBucketVersioning",
    ]
    resources = [local.bucket_arn]
  }

  statement {
    sid       = "ReadLayout"
    effect    = "Allow"
    actions   = ["s3:GetObject", "s3:GetObjectVersion", "s3:GetObjectAttributes"]
    resources = [local.layout_objects, local.tenant_layouts, local.probe_objects]
  }

  # GC fences deletions through the journal (CONDEMNED/DELETED appended by manifest CAS); a
  # journal append may roll history into a new create-once segment.
  statement {
    sid       = "JournalAppends"
    effect    = "Allow"
    actions   = ["s3:PutObject"]
    resources = [local.manifest_objects, local.segment_objects, local.tenant_manifests, local.tenant_segments]
  }

  statement {
    sid       = "ConditionalAndVersionPinnedDeletes"
    effect    = "Allow"
    actions   = ["s3:DeleteObject", "s3:DeleteObjectVersion"]
    resources = [local.layout_objects, local.tenant_layouts]
  }

  statement {
    sid       = "DoctorProbes"
    effect    = "Allow"
    actions   = ["s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion", "s3:AbortMultipartUpload"]
    resources = [local.probe_objects]
  }

  statement {
    sid       = "UseBucketKeyThroughS3"
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

resource "aws_iam_role" "agent" {
  name                 = "${var.name}-agent"
  description          = "s3spill agents: create artifacts, CAS manifests, publish owner slots, read; no delete."
  assume_role_policy   = data.aws_iam_policy_document.agent_assume.json
  permissions_boundary = var.iam_permissions_boundary_arn
  max_session_duration = 3600
  tags                 = var.tags
}

resource "aws_iam_role_policy" "agent" {
  name   = "${var.name}-agent-s3"
  role   = aws_iam_role.agent.id
  policy = data.aws_iam_policy_document.agent.json
}

resource "aws_iam_role" "gc" {
  name                 = "${var.name}-gc"
  description          = "s3spill GC: list, read, CAS manifests, conditional or version-pinned deletes."
  assume_role_policy   = data.aws_iam_policy_document.gc_assume.json
  permissions_boundary = var.iam_permissions_boundary_arn
  max_session_duration = 3600
  tags                 = var.tags
}

resource "aws_iam_role_policy" "gc" {
  name   = "${var.name}-gc-s3"
  role   = aws_iam_role.gc.id
  policy = data.aws_iam_policy_document.gc.json
}
