output "store_url" {
  description = "Set S3SPILL_STORE to this in agent pods and on workstations."
  value       = module.s3spill.store_url
}

output "agent_role_arn" {
  description = "Annotate agent service accounts with eks.amazonaws.com/role-arn = this."
  value       = module.s3spill.agent_role_arn
}

output "gc_role_arn" {
  description = "IAM role the GC CronJob runs as."
  value       = module.s3spill.gc_role_arn
}

output "gc_cronjob_name" {
  description = "Name of the GC CronJob (kubectl -n <gc_namespace> get cronjob <name>)."
  value       = module.s3spill.gc_cronjob_name
}
