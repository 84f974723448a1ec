include "root" {
  path = find_in_parent_folders("root.hcl")
}

dependency "vpc" {
  config_path = "../vpc"

  mock_outputs = {
    id = "mock-vpc"
  }
}

inputs = {
  vpc_id = dependency.vpc.outputs.id
  zone   = "internal.example.com"
}
