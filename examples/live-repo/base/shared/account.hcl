locals {
  account_name = "shared"
  account_id   = "111111111111"
}
