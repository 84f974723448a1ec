include "root" {
  path = find_in_parent_folders("root.hcl")
}

dependency "db" {
  config_path = "../db"

  mock_outputs = {
    id = "mock-db"
  }
}

inputs = {
  db_id = dependency.db.outputs.id
  queue = "jobs"
}
