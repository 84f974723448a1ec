locals {
  account_name = "dev"
  account_id   = "222222222222"
}
