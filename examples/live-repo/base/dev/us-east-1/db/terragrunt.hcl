include "root" {
  path = find_in_parent_folders("root.hcl")
}

# Cross-account: the dev database lives in the shared network.
dependency "vpc" {
  config_path = "${get_repo_root()}/shared/us-east-1/network/vpc"

  mock_outputs = {
    id = "mock-vpc"
  }
}

inputs = {
  vpc_id = dependency.vpc.outputs.id
  engine = "postgres"
}
