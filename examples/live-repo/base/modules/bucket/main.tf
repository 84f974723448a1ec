# A stand-in for a storage bucket: built-in resources only, no provider download.
variable "name" {
  type = string
}

resource "terraform_data" "bucket" {
  input = { name = var.name, versioning = true }
}

output "name" {
  value = terraform_data.bucket.output.name
}
