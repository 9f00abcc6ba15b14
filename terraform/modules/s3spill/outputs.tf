output "bucket_name" {
  description = "Name of the s3spill bucket."
  value       = aws_s3_bucket.this.id
}

output "bucket_arn" {
  description = "ARN of the s3spill bucket."
  value       = aws_s3_bucket.this.arn
}

output "store_url" {
  description = "Value for S3SPILL_STORE (or --store): s3://bucket[/prefix]."
  value       = local.store_url
}

output "kms_key_arn" {
  description = "ARN of the KMS key used for default bucket encryption (created here or passed in)."
  value       = local.kms_key_arn
}

output "agent_role_arn" {
  description = "IAM role for agent pods: annotate their service accounts with eks.amazonaws.com/role-arn = this."
  value       = aws_iam_role.agent.arn
}

output "gc_role_arn" {
  description = "IAM role for the GC job (bound to the GC service account)."
  value       = aws_iam_role.gc.arn
}

output "gc_service_account" {
  description = "Namespace/name of the GC service account the GC role trusts."
  value       = "${var.gc_namespace}/${var.gc_service_account_name}"
}

output "gc_cronjob_name" {
  description = "Name of the GC CronJob, or null when enable_gc_cronjob is false."
  value       = var.enable_gc_cronjob ? kubernetes_cron_job_v1.gc[0].metadata[0].name : null
}

output "bucket_policy_json" {
  description = "The rendered bucket policy (for review and for IAM policy simulation)."
  value       = data.aws_iam_policy_document.bucket.json
}
