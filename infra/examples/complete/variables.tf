variable "region" {
  description = "AWS region to deploy live-ci into."
  type        = string
  default     = "us-west-2"
}

variable "vpc_id" {
  description = "VPC of the tasks and the metadb."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets (two availability zones) with a NAT route for the tasks and the metadb."
  type        = list(string)
}

variable "security_group_ids" {
  description = "Security groups of the tasks (outbound HTTPS)."
  type        = list(string)
}

variable "lambda_zip_dir" {
  description = "The Lambda zips: make package's target/lambda of this checkout by default, or a release's downloaded assets."
  type        = string
  default     = "../../../target/lambda"
}
