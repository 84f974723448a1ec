terraform {
  # templatefile, optional object attributes with defaults, and check-free
  # preconditions need 1.3; the checks run with 1.11.
  required_version = ">= 1.5.0"

  required_providers {
    aws = {
      source = "hashicorp/aws"
      # 5.81.0 is the first with Aurora Serverless v2 at minimum capacity 0 and
      # seconds_until_auto_pause (the metadb's default), and it is past the
      # enable_http_endpoint fix that turns the Data API on for Serverless v2
      # (hashicorp/terraform-provider-aws#38997, about 5.64); earlier 5.x would
      # plan a metadb that cannot pause or has no Data API. 5.100.0, the
      # offline mirror's, is validated and tested on the project's machines;
      # the minimum is validated by the provider-range job of
      # .github/workflows/ci.yml (scripts/validate-provider-range.sh min).
      version = ">= 5.81.0, < 7.0.0"
    }
  }
}
