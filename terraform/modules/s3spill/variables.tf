# Inputs of the s3spill module. Every name and tag is a parameter; nothing is hard-coded
# to one account, region or cluster.

variable "name" {
  description = "Base name for the IAM roles, the KMS alias and the Kubernetes objects (lowercase letters, digits and dashes)."
  type        = string
  default     = "s3spill"

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9-]{0,38}$", var.name))
    error_message = "name must be 1-39 lowercase letters, digits or dashes, starting with a letter or digit."
  }
}

variable "bucket_name" {
  description = "Name of the S3 bucket that holds s3spill artifacts, journals and owner slots (globally unique)."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.bucket_name))
    error_message = "bucket_name must be a valid S3 bucket name."
  }
}

variable "key_prefix" {
  description = "Store root inside the bucket (the `prefix` of S3SPILL_STORE=s3://bucket/prefix); empty for the bucket root. No leading or trailing slash."
  type        = string
  default     = ""

  validation {
    condition     = var.key_prefix == "" || can(regex("^[A-Za-z0-9][A-Za-z0-9._=/-]*[A-Za-z0-9]$", var.key_prefix))
    error_message = "key_prefix must be empty or a slash-separated path without leading or trailing slash."
  }
}

variable "kms_key_arn" {
  description = "ARN of an existing KMS key for default bucket encryption. When null the module creates a key (rotation on)."
  type        = string
  default     = null
}

variable "kms_deletion_window_days" {
  description = "Waiting period before a KMS key created by this module is deleted after `terraform destroy`."
  type        = number
  default     = 30
}

variable "undo_window_days" {
  description = "Days a noncurrent object version (an overwritten or GC-deleted object) is kept before S3 expires it: the window in which a GC deletion can be undone."
  type        = number
  default     = 7

  validation {
    condition     = var.undo_window_days >= 1
    error_message = "undo_window_days must be at least 1."
  }
}

variable "abort_incomplete_multipart_days" {
  description = "Days after which S3 aborts an incomplete multipart upload (a crashed writer's parts)."
  type        = number
  default     = 1
}

variable "access_log_bucket" {
  description = "Optional bucket that receives S3 server access logs for the s3spill bucket; null disables access logging."
  type        = string
  default     = null
}

variable "access_log_prefix" {
  description = "Key prefix for the server access logs in access_log_bucket."
  type        = string
  default     = "s3spill-access/"
}

variable "doctor_probe_prefix" {
  description = "Key prefix (relative to key_prefix) where `s3spill doctor` writes and deletes its scratch objects (s3spill.doctor.SCRATCH); only the GC role may use it."
  type        = string
  default     = "s3spill-doctor/"
}

variable "oidc_provider_arn" {
  description = "ARN of the cluster's IAM OIDC provider (IRSA), e.g. arn:aws:iam::123456789012:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC."
  type        = string
}

variable "oidc_provider_url" {
  description = "Issuer URL of the cluster's OIDC provider, with or without https:// (e.g. https://oidc.eks.eu-west-1.amazonaws.com/id/ABC)."
  type        = string
}

variable "agent_service_accounts" {
  description = "Kubernetes service accounts (namespace and name) allowed to assume the agent role."
  type = list(object({
    namespace = string
    name      = string
  }))

  validation {
    condition     = length(var.agent_service_accounts) > 0
    error_message = "At least one agent service account is needed (an empty list would make an invalid trust policy)."
  }
}

variable "gc_namespace" {
  description = "Kubernetes namespace of the GC service account (and of the CronJob when enabled)."
  type        = string
  default     = "s3spill"
}

variable "gc_service_account_name" {
  description = "Name of the Kubernetes service account bound to the GC role."
  type        = string
  default     = "s3spill-gc"
}

variable "iam_permissions_boundary_arn" {
  description = "Optional permissions boundary attached to both IAM roles."
  type        = string
  default     = null
}

variable "enable_gc_cronjob" {
  description = "Create the GC service account and CronJob through the kubernetes provider (the provider must be configured by the caller)."
  type        = bool
  default     = false
}

variable "gc_image" {
  description = "Container image of s3spill for the GC job, pinned by digest (registry/repo@sha256:...); required when enable_gc_cronjob is true."
  type        = string
  default     = null
}

variable "gc_schedule" {
  description = "Cron schedule of the GC job (UTC unless gc_time_zone is set)."
  type        = string
  default     = "17 3 * * *"
}

variable "gc_time_zone" {
  description = "IANA time zone for gc_schedule (Kubernetes >= 1.27); null means the controller's default (UTC)."
  type        = string
  default     = null
}

variable "gc_shards" {
  description = "Number of shards: 1 runs `gc run --apply --all` in one pod; N > 1 runs an indexed job whose pod K runs `--shard K/N`."
  type        = number
  default     = 1

  validation {
    condition     = var.gc_shards >= 1 && var.gc_shards <= 256
    error_message = "gc_shards must be between 1 and 256."
  }
}

variable "gc_parallelism" {
  description = "How many shard pods may run at once (at most gc_shards)."
  type        = number
  default     = 4
}

variable "gc_extra_args" {
  description = "Extra arguments appended to `s3spill gc run --apply --all` (e.g. [\"--orphan-ttl\", \"48h\", \"--max-deletions\", \"50000\"])."
  type        = list(string)
  default     = []
}

variable "gc_pushgateway" {
  description = "Prometheus Pushgateway (host:port) the GC job pushes its metrics to; empty: no push. Example alert rules: deploy/prometheus/s3spill-gc-alerts.yml."
  type        = string
  default     = ""
}

variable "gc_active_deadline_seconds" {
  description = "Hard time limit of one GC job run; a killed run is finished or undone by the next one."
  type        = number
  default     = 10800
}

variable "gc_resources" {
  description = "CPU and memory requests and limits of the GC container."
  type = object({
    requests_cpu    = string
    requests_memory = string
    limits_cpu      = string
    limits_memory   = string
  })
  default = {
    requests_cpu    = "250m"
    requests_memory = "256Mi"
    limits_cpu      = "1"
    limits_memory   = "1Gi"
  }
}

variable "tags" {
  description = "Tags applied to every AWS resource the module creates."
  type        = map(string)
  default     = {}
}

variable "labels" {
  description = "Labels applied to every Kubernetes object the module creates."
  type        = map(string)
  default     = {}
}
