# Run directly by terraform (terragrunt would fetch the module itself).
module "bucket" {
  source = "../../../modules/bucket"
  name   = "shared-logs"
}
