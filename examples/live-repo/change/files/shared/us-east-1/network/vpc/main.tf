# Built-in resources only: runs with terraform alone, no provider download.
resource "terraform_data" "this" {
  input = { cidr = "10.0.0.0/15" }
}

output "id" {
  value = terraform_data.this.id
}
