locals {
  region = "us-east-1"
}
