variable "name" {
  description = "The function's short name, a key of every map in shared: receiver, trigger-sf, approval-request or approval-response."
  type        = string
}

variable "description" {
  description = "What the function does, shown in the Lambda console."
  type        = string
}

variable "environment" {
  description = "The function's environment: exactly the variables its binary reads (crates/contract checks the names)."
  type        = map(string)
}

variable "shared" {
  description = "What every function takes from the root module: per-function maps keyed by name (function name, role, zip, log group) and the common settings (architecture, memory in MB, timeout in seconds, KMS key, dead-letter queue, tags)."
  type = object({
    function_names  = map(string)
    role_arns       = map(string)
    zip_paths       = map(string)
    log_group_names = map(string)
    architecture    = string
    memory_size     = number
    timeout_seconds = number
    kms_key_arn     = string
    dead_letter_arn = string
    tags            = map(string)
  })
}

variable "reserved_concurrency" {
  description = "Concurrent executions reserved for (and capping) the function; -1 reserves none."
  type        = number
  default     = -1
}
