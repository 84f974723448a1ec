include "root" {
  path = find_in_parent_folders("root.hcl")
}

inputs = {
  cidr = "10.0.0.0/15"
}
