# Built-in resources only: runs with terraform alone, no provider download.
resource "terraform_data" "this" {
  input = { name = "legacy" }
}

output "id" {
  value = terraform_data.this.id
}
