include "root" {
  path = find_in_parent_folders("root.hcl")
}

dependency "db" {
  config_path = "../db"

  mock_outputs = {
    id = "mock-db"
  }
}

dependency "dns" {
  config_path = "../../../shared/us-east-1/network/dns"

  mock_outputs = {
    id = "mock-dns"
  }
}

inputs = {
  db_id    = dependency.db.outputs.id
  dns_id   = dependency.dns.outputs.id
  replicas = 2
}
