# Example root: one s3spill bucket with its roles, and the GC CronJob on an existing EKS
# cluster. Copy terraform.tfvars.example to terraform.tfvars, fill it in, then
#   terraform init && terraform apply

terraform {
  required_version = ">= 1.5.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.40, < 7.0"
    }
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = ">= 2.23, < 3.0"
    }
  }
}

provider "aws" {
  region = var.region

  default_tags {
    tags = var.tags
  }
}

data "aws_eks_cluster" "this" {
  name = var.eks_cluster_name
}

data "aws_eks_cluster_auth" "this" {
  name = var.eks_cluster_name
}

data "aws_iam_openid_connect_provider" "this" {
  url = data.aws_eks_cluster.this.identity[0].oidc[0].issuer
}

provider "kubernetes" {
  host                   = data.aws_eks_cluster.this.endpoint
  cluster_ca_certificate = base64decode(data.aws_eks_cluster.this.certificate_authority[0].data)
  token                  = data.aws_eks_cluster_auth.this.token
}

module "s3spill" {
  source = "../../modules/s3spill"

  name        = var.name
  bucket_name = var.bucket_name
  key_prefix  = var.key_prefix

  undo_window_days  = var.undo_window_days
  access_log_bucket = var.access_log_bucket

  oidc_provider_arn      = data.aws_iam_openid_connect_provider.this.arn
  oidc_provider_url      = data.aws_eks_cluster.this.identity[0].oidc[0].issuer
  agent_service_accounts = var.agent_service_accounts

  gc_namespace      = var.gc_namespace
  enable_gc_cronjob = var.enable_gc_cronjob
  gc_image          = var.gc_image
  gc_schedule       = var.gc_schedule
  gc_shards         = var.gc_shards

  tags = var.tags
}
