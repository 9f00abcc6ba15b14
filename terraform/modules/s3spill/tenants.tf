# Optional fleet tenants: each gets its own store root (<key_prefix>/tenants/<name>), its own
# KMS key and an agent role scoped to that root, so one tenant's credentials can neither
# read another tenant's artifacts (IAM) nor decrypt them (KMS), and the bucket policy
# refuses a write under a tenant's root that is not encrypted with that tenant's key.
# Tenant agents set S3SPILL_STORE to the tenant_store_urls output and S3SPILL_KMS_KEY_ID
# to tenant_kms_key_arns (TransferConfig.sse_kms_key_id). GC and `s3spill purge` run with
# the GC role, which keeps its bucket-wide grants (and may use every tenant key).

variable "tenants" {
  description = "Fleet tenants by name (lowercase letters, digits, dashes): the agent service accounts of each, and optionally an existing KMS key ARN (else the module creates one, rotation on). {} for none."
  type = map(object({
    agent_service_accounts = list(object({
      namespace = string
      name      = string
    }))
    kms_key_arn = optional(string)
  }))
  default = {}

  validation {
    condition     = alltrue([for name, t in var.tenants : can(regex("^[a-z0-9][a-z0-9-]{0,30}$", name)) && length(t.agent_service_accounts) > 0])
    error_message = "tenant names must be 1-31 lowercase letters, digits or dashes, and each tenant needs at least one agent service account."
  }
}

locals {
  tenant_roots      = { for name, _ in var.tenants : name => "${local.root}tenants/${name}/" }
  tenant_created    = { for name, t in var.tenants : name => t if t.kms_key_arn == null }
  tenant_kms_arns   = { for name, t in var.tenants : name => t.kms_key_arn != null ? t.kms_key_arn : aws_kms_key.tenant[name].arn }
  tenant_store_urls = { for name, root in local.tenant_roots : name => "s3://${aws_s3_bucket.this.id}/${trim(root, "/")}" }
}

data "aws_iam_policy_document" "tenant_kms" {
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

resource "aws_kms_key" "tenant" {
  for_each                = local.tenant_created
  description             = "s3spill tenant ${each.key}: artifacts under ${local.tenant_roots[each.key]}"
  enable_key_rotation     = true
  deletion_window_in_days = var.kms_deletion_window_days
  policy                  = data.aws_iam_policy_document.tenant_kms.json
  tags                    = merge(var.tags, { "s3spill-tenant" = each.key })
}

resource "aws_kms_alias" "tenant" {
  for_each      = local.tenant_created
  name          = "alias/${var.name}-tenant-${each.key}"
  target_key_id = aws_kms_key.tenant[each.key].key_id
}

data "aws_iam_policy_document" "tenant_assume" {
  for_each = var.tenants

  statement {
    sid     = "AssumeFromTenantServiceAccounts"
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
      values   = [for sa in each.value.agent_service_accounts : "system:serviceaccount:${sa.namespace}:${sa.name}"]
    }
  }
}

# The agent role of one tenant: the agent role's grants, each narrowed to the tenant's root.
data "aws_iam_policy_document" "tenant_agent" {
  for_each = var.tenants

  statement {
    sid     = "CreateUnderTenantRoot"
    effect  = "Allow"
    actions = ["s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"]
    resources = [
      "${local.bucket_arn}/${local.tenant_roots[each.key]}v1/sessions/*",
      "${local.bucket_arn}/${local.tenant_roots[each.key]}v1/owner/*",
      "${local.bucket_arn}/${local.tenant_roots[each.key]}v1/usage/*",
    ]
  }

  statement {
    sid       = "ReadTenantRoot"
    effect    = "Allow"
    actions   = ["s3:GetObject", "s3:GetObjectVersion", "s3:GetObjectAttributes"]
    resources = ["${local.bucket_arn}/${local.tenant_roots[each.key]}v1/*"]
  }

  statement {
    sid       = "ListTenantRoot"
    effect    = "Allow"
    actions   = ["s3:ListBucket"]
    resources = [local.bucket_arn]

    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["${local.tenant_roots[each.key]}v1/*"]
    }
  }

  statement {
    sid       = "UseOnlyTheTenantKeyThroughS3"
    effect    = "Allow"
    actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
    resources = [local.tenant_kms_arns[each.key]]

    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = [local.s3_via_service]
    }
  }

  # Belt and braces, as for the shared agent role: whatever else gets attached, this role
  # never touches another root's objects and never deletes.
  statement {
    sid           = "NeverOutsideTheTenantRoot"
    effect        = "Deny"
    actions       = ["s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"]
    not_resources = ["${local.bucket_arn}/${local.tenant_roots[each.key]}*"]
  }

  statement {
    sid       = "NeverDelete"
    effect    = "Deny"
    actions   = ["s3:DeleteObject", "s3:DeleteObjectVersion", "s3:PutBucketPolicy", "s3:DeleteBucketPolicy"]
    resources = [local.bucket_arn, "${local.bucket_arn}/*"]
  }
}

resource "aws_iam_role" "tenant_agent" {
  for_each             = var.tenants
  name                 = "${var.name}-tenant-${each.key}"
  description          = "s3spill agents of tenant ${each.key}: their own root and KMS key only; no delete."
  assume_role_policy   = data.aws_iam_policy_document.tenant_assume[each.key].json
  permissions_boundary = var.iam_permissions_boundary_arn
  max_session_duration = 3600
  tags                 = merge(var.tags, { "s3spill-tenant" = each.key })
}

resource "aws_iam_role_policy" "tenant_agent" {
  for_each = var.tenants
  name     = "${var.name}-tenant-${each.key}-s3"
  role     = aws_iam_role.tenant_agent[each.key].id
  policy   = data.aws_iam_policy_document.tenant_agent[each.key].json
}

# Merged into the bucket policy: under a tenant's root, a write must name that tenant's key,
# and only that tenant's role (and GC, and purge) may read.
data "aws_iam_policy_document" "tenant_guards" {
  dynamic "statement" {
    for_each = local.tenant_roots
    content {
      sid       = "DenyTenantWritesWithoutItsKey${replace(title(replace(statement.key, "-", " ")), " ", "")}"
      effect    = "Deny"
      actions   = ["s3:PutObject"]
      resources = ["${local.bucket_arn}/${statement.value}*"]

      principals {
        type        = "*"
        identifiers = ["*"]
      }

      condition {
        test     = "StringNotEquals"
        variable = "s3:x-amz-server-side-encryption-aws-kms-key-id"
        values   = [local.tenant_kms_arns[statement.key]]
      }
    }
  }

  dynamic "statement" {
    for_each = local.tenant_roots
    content {
      sid       = "DenyTenantReadsByOthers${replace(title(replace(statement.key, "-", " ")), " ", "")}"
      effect    = "Deny"
      actions   = ["s3:GetObject", "s3:GetObjectVersion"]
      resources = ["${local.bucket_arn}/${statement.value}*"]

      principals {
        type        = "*"
        identifiers = ["*"]
      }

      condition {
        test     = "StringNotLike"
        variable = "aws:PrincipalArn"
        values   = ["arn:${data.aws_partition.current.partition}:iam::${data.aws_caller_identity.current.account_id}:role/${var.name}-tenant-${statement.key}", aws_iam_role.gc.arn, aws_iam_role.purge.arn]
      }
    }
  }
}

output "tenant_store_urls" {
  description = "S3SPILL_STORE of each tenant's agents: s3://bucket/<key_prefix>/tenants/<name>."
  value       = local.tenant_store_urls
}

output "tenant_kms_key_arns" {
  description = "S3SPILL_KMS_KEY_ID of each tenant's agents: the key its objects must be written with."
  value       = local.tenant_kms_arns
}

output "tenant_role_arns" {
  description = "IAM role of each tenant's agents (annotate their service accounts with it, IRSA)."
  value       = { for name, role in aws_iam_role.tenant_agent : name => role.arn }
}
