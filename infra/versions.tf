terraform {
  # templatefile, optional object attributes with defaults, and check-free
  # preconditions need 1.3; the checks run with 1.11.
  required_version = ">= 1.5.0"

  required_providers {
    aws = {
      source = "hashicorp/aws"
      # sesv2 email identities, Aurora Serverless v2 with the Data API and
      # manage_master_user_password are all in 5.x.
      version = ">= 5.31.0, < 7.0.0"
    }
  }
}
