variable "region" {
  description = "AWS region of the bucket and the EKS cluster."
  type        = string
}

variable "eks_cluster_name" {
  description = "Name of the existing EKS cluster (with an IAM OIDC provider) that runs the agents and the GC job."
  type        = string
}

variable "name" {
  description = "Base name for roles, the KMS alias and Kubernetes objects."
  type        = string
  default     = "s3spill"
}

variable "bucket_name" {
  description = "Globally unique name of the s3spill bucket."
  type        = string
}

variable "key_prefix" {
  description = "Store root inside the bucket; empty for the bucket root."
  type        = string
  default     = ""
}

variable "undo_window_days" {
  description = "Days a GC-deleted or overwritten object version is kept before it expires."
  type        = number
  default     = 7
}

variable "access_log_bucket" {
  description = "Optional existing bucket for S3 server access logs; null disables them."
  type        = string
  default     = null
}

variable "agent_service_accounts" {
  description = "Kubernetes service accounts (namespace, name) of the agent pods."
  type = list(object({
    namespace = string
    name      = string
  }))
}

variable "gc_namespace" {
  description = "Existing namespace for the GC service account and CronJob."
  type        = string
  default     = "s3spill"
}

variable "enable_gc_cronjob" {
  description = "Create the GC CronJob in the cluster."
  type        = bool
  default     = true
}

variable "gc_image" {
  description = "s3spill image pinned by digest (registry/repo@sha256:...)."
  type        = string
  default     = null
}

variable "gc_schedule" {
  description = "Cron schedule of the GC job."
  type        = string
  default     = "17 3 * * *"
}

variable "gc_shards" {
  description = "Number of GC shards (1 = one pod; N = an indexed job of N pods)."
  type        = number
  default     = 1
}

variable "tags" {
  description = "Tags for every AWS resource (provider default_tags)."
  type        = map(string)
  default = {
    "app" = "s3spill"
  }
}
