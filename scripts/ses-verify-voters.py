"""Verifies the voters' addresses as SES identities in the local cloud, as a team
whose SES account is still in the sandbox must (infra/README.md "SES sandbox"):
there SES refuses mail to an address that is not a verified identity
(MessageRejected), and the local cloud starts every account in the sandbox
(localcloud/README.md "SES v2").

    python ses-verify-voters.py <endpoint> <accounts.json>

Run by scripts/deploy-local.sh with LocalStack's venv (boto3). Idempotent.
"""

from __future__ import annotations

import json
import sys

import boto3


def main(endpoint: str, accounts_file: str) -> None:
    with open(accounts_file) as f:
        accounts = json.load(f)
    voters = sorted({v for account in accounts for v in account["voters"]})
    ses = boto3.client("sesv2", endpoint_url=endpoint, region_name="us-east-1")
    for voter in voters:
        try:
            ses.create_email_identity(EmailIdentity=voter)
        except ses.exceptions.AlreadyExistsException:
            pass
    print(f"ses-verify-voters: {len(voters)} voter address(es) verified: {', '.join(voters)}", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: ses-verify-voters.py <endpoint> <accounts.json>")
    main(sys.argv[1], sys.argv[2])
