# Built-in resources only: runs with terraform alone, no provider download.
resource "terraform_data" "this" {
  input = { zone = "internal.example.com" }
}

output "id" {
  value = terraform_data.this.id
}
