# Built-in resources only: runs with terraform alone, no provider download.
resource "terraform_data" "this" {
  input = { queue = "jobs" }
}

output "id" {
  value = terraform_data.this.id
}
