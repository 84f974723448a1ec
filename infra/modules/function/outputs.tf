output "arn" {
  description = "The function's ARN."
  value       = aws_lambda_function.this.arn
}

output "function_name" {
  description = "The function's name."
  value       = aws_lambda_function.this.function_name
}

output "reserved_concurrency" {
  description = "Concurrent executions reserved for the function (-1: none)."
  value       = aws_lambda_function.this.reserved_concurrent_executions
}
