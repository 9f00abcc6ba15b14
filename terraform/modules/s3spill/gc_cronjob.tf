# The GC batch job as a Kubernetes CronJob (only when enable_gc_cronjob is true).
#
# One pod runs `s3spill gc run --apply --all`; with gc_shards = N > 1 the job is an indexed
# job of N completions whose pod K runs `--shard K/N` (K = the pod's completion index,
# 0-based, as `s3spill gc` expects). concurrencyPolicy Forbid: a run never overlaps the
# previous one (a manual `kubectl create job --from=cronjob/...` is kept apart by the run
# lock in the store: it exits 8 instead of racing). The JSON report goes to stdout and
# structured JSON logs to stderr, so `kubectl logs` shows both.
#
# The pod failure policy maps s3spill's exit codes (README "Exit codes and errors"):
# a node drain or eviction never counts as a failure; exit codes that a retry a few
# seconds later cannot change (2 usage, 3 races — the next scheduled run takes them up —,
# 4 refused, 5 corrupt, 7 journal doubt, 8 another run holds the lock) end the Job at
# once instead of burning its retries; 6 (store unavailable) and anything else is retried
# up to backoff_limit.

locals {
  gc_labels = merge(var.labels, {
    "app.kubernetes.io/name"      = "s3spill"
    "app.kubernetes.io/component" = "gc"
  })

  gc_base_args  = ["--log-level", "INFO", "gc", "run", "--apply", "--all"]
  gc_shard_args = var.gc_shards > 1 ? ["--shard", "$(S3SPILL_SHARD_INDEX)/${var.gc_shards}"] : []
  gc_push_args  = var.gc_pushgateway != "" ? ["--pushgateway", var.gc_pushgateway] : []
  gc_args       = concat(local.gc_base_args, local.gc_shard_args, local.gc_push_args, var.gc_extra_args)
}

resource "kubernetes_service_account_v1" "gc" {
  count = var.enable_gc_cronjob ? 1 : 0

  metadata {
    name      = var.gc_service_account_name
    namespace = var.gc_namespace
    labels    = local.gc_labels
    annotations = {
      "eks.amazonaws.com/role-arn"               = aws_iam_role.gc.arn
      "eks.amazonaws.com/sts-regional-endpoints" = "true"
    }
  }

  # The IRSA webhook injects its own projected web-identity token; the Kubernetes API token
  # is not needed by s3spill.
  automount_service_account_token = false
}

resource "kubernetes_cron_job_v1" "gc" {
  count = var.enable_gc_cronjob ? 1 : 0

  metadata {
    name      = "${var.name}-gc"
    namespace = var.gc_namespace
    labels    = local.gc_labels
  }

  spec {
    schedule                      = var.gc_schedule
    timezone                      = var.gc_time_zone
    concurrency_policy            = "Forbid"
    starting_deadline_seconds     = 3600
    successful_jobs_history_limit = 3
    failed_jobs_history_limit     = 5

    job_template {
      metadata {
        labels = local.gc_labels
      }

      spec {
        completion_mode         = var.gc_shards > 1 ? "Indexed" : "NonIndexed"
        completions             = var.gc_shards
        parallelism             = min(var.gc_parallelism, var.gc_shards)
        backoff_limit           = 2
        active_deadline_seconds = var.gc_active_deadline_seconds

        pod_failure_policy {
          rule {
            action = "Ignore"
            on_pod_condition {
              type   = "DisruptionTarget"
              status = "True"
            }
          }
          rule {
            action = "FailJob"
            on_exit_codes {
              container_name = "gc"
              operator       = "In"
              values         = [2, 3, 4, 5, 7, 8]
            }
          }
        }
        ttl_seconds_after_finished = 604800

        template {
          metadata {
            labels = local.gc_labels
          }

          spec {
            service_account_name            = kubernetes_service_account_v1.gc[0].metadata[0].name
            automount_service_account_token = false
            restart_policy                  = "Never"

            security_context {
              run_as_non_root = true
              run_as_user     = 10001
              run_as_group    = 10001
              fs_group        = 10001

              seccomp_profile {
                type = "RuntimeDefault"
              }
            }

            container {
              name              = "gc"
              image             = var.gc_image
              image_pull_policy = "Always"
              args              = local.gc_args

              env {
                name  = "S3SPILL_STORE"
                value = local.store_url
              }

              env {
                name  = "AWS_REGION"
                value = data.aws_region.current.name
              }

              # Indexed jobs only: the pod's completion index is its shard K.
              dynamic "env" {
                for_each = var.gc_shards > 1 ? [1] : []
                content {
                  name = "S3SPILL_SHARD_INDEX"
                  value_from {
                    field_ref {
                      field_path = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                    }
                  }
                }
              }

              env {
                name  = "HOME"
                value = "/tmp"
              }

              resources {
                requests = {
                  cpu    = var.gc_resources.requests_cpu
                  memory = var.gc_resources.requests_memory
                }
                limits = {
                  cpu    = var.gc_resources.limits_cpu
                  memory = var.gc_resources.limits_memory
                }
              }

              security_context {
                allow_privilege_escalation = false
                privileged                 = false
                read_only_root_filesystem  = true
                run_as_non_root            = true
                run_as_user                = 10001

                capabilities {
                  drop = ["ALL"]
                }
              }

              volume_mount {
                name       = "tmp"
                mount_path = "/tmp"
              }
            }

            volume {
              name = "tmp"
              empty_dir {
                size_limit = "256Mi"
              }
            }
          }
        }
      }
    }
  }

  lifecycle {
    precondition {
      condition     = var.gc_image != null && can(regex("@sha256:[0-9a-f]{64}$", var.gc_image))
      error_message = "gc_image must be set and pinned by digest (registry/repo@sha256:<64 hex>) when enable_gc_cronjob is true."
    }
  }
}
