output "arn" {
  description = "The function's ARN."
  value       = aws_lambda_function.this.arn
}

output "function_name" {
  description = "The function's name."
  value       = aws_lambda_function.this.function_name
}
