"""SES v2 (moto-backed): identities by name (the URL-encoding fix), sent mail
readable back at LocalStack's /_aws/ses, as the approval e-mails will be, and the
sandbox a new account starts in: only verified recipients, until production access."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any


def test_identity_send_and_read_back(aws: Callable[[str], Any], endpoint: str, unique: str) -> None:
    ses = aws("sesv2")
    sender = f"{unique}@example.com"
    assert ses.create_email_identity(EmailIdentity=sender)["IdentityType"] == "EMAIL_ADDRESS"
    # In the sandbox (the default) the recipients are verified first, as a user would.
    for recipient in ("voter@example.com", "lead@example.com"):
        try:
            ses.create_email_identity(EmailIdentity=recipient)
        except ses.exceptions.AlreadyExistsException:
            pass
    # The SDK sends the name in the path, URL-encoded (sender%40example.com).
    assert ses.get_email_identity(EmailIdentity=sender)["IdentityType"] == "EMAIL_ADDRESS"
    message_id = ses.send_email(
        FromEmailAddress=sender,
        Destination={"ToAddresses": ["voter@example.com"], "CcAddresses": ["lead@example.com"]},
        Content={
            "Simple": {
                "Subject": {"Data": "Approve dev/vpc?"},
                "Body": {"Text": {"Data": "plan: 2 to add"}, "Html": {"Data": "<p>plan: 2 to add</p>"}},
            }
        },
    )["MessageId"]

    query = urllib.parse.urlencode({"email": sender})
    with urllib.request.urlopen(f"{endpoint}/_aws/ses?{query}", timeout=10) as response:
        messages = json.loads(response.read())["messages"]
    assert len(messages) == 1
    mail = messages[0]
    assert mail["Id"] == message_id
    assert mail["Destination"] == {"ToAddresses": ["voter@example.com"], "CcAddresses": ["lead@example.com"]}
    assert mail["Subject"] == "Approve dev/vpc?"
    assert mail["Body"] == {"text_part": "plan: 2 to add", "html_part": "<p>plan: 2 to add</p>"}

    ses.delete_email_identity(EmailIdentity=sender)
    names = [i["IdentityName"] for i in ses.list_email_identities()["EmailIdentities"]]
    assert sender not in names


def test_unverified_sender_is_rejected(aws: Callable[[str], Any], unique: str) -> None:
    ses = aws("sesv2")
    try:
        ses.send_email(
            FromEmailAddress=f"{unique}@unverified.example.com",
            Destination={"ToAddresses": ["voter@example.com"]},
            Content={"Simple": {"Subject": {"Data": "x"}, "Body": {"Text": {"Data": "x"}}}},
        )
    except ses.exceptions.MessageRejected:
        return
    raise AssertionError("an unverified sender was accepted")


def _mail(to: str) -> dict[str, Any]:
    return {"Simple": {"Subject": {"Data": f"to {to}"}, "Body": {"Text": {"Data": "x"}}}}


def test_the_sandbox_refuses_an_unverified_recipient_until_production_access(
    aws: Callable[[str], Any], unique: str
) -> None:
    ses = aws("sesv2")
    sender = f"{unique}@sender.example.com"
    verified = f"{unique}-verified@example.com"
    stranger = f"{unique}-stranger@elsewhere.example.com"
    ses.create_email_identity(EmailIdentity=sender)
    ses.create_email_identity(EmailIdentity=verified)
    assert ses.get_account()["ProductionAccessEnabled"] is False
    try:
        ses.send_email(
            FromEmailAddress=sender,
            Destination={"ToAddresses": [verified], "CcAddresses": [stranger]},
            Content=_mail(stranger),
        )
    except ses.exceptions.MessageRejected as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        # AWS's message, naming the identity that failed.
        assert e.response["Error"]["Message"] == (
            f"Email address is not verified. The following identities failed the check in region US-EAST-1: {stranger}"
        )
    else:
        raise AssertionError("the sandbox mailed an unverified recipient")
    # A verified recipient (address or domain) is mailed.
    assert ses.send_email(FromEmailAddress=sender, Destination={"ToAddresses": [verified]}, Content=_mail(verified))
    domain = f"{unique}.example.org"
    ses.create_email_identity(EmailIdentity=domain)
    assert ses.send_email(
        FromEmailAddress=sender, Destination={"ToAddresses": [f"anyone@{domain}"]}, Content=_mail(domain)
    )
    # Leaving the sandbox (production access) mails anyone; back in for the other tests.
    ses.put_account_details(
        MailType="TRANSACTIONAL", WebsiteURL="https://example.com", UseCaseDescription="x", ProductionAccessEnabled=True
    )
    try:
        assert ses.get_account()["ProductionAccessEnabled"] is True
        assert ses.send_email(FromEmailAddress=sender, Destination={"ToAddresses": [stranger]}, Content=_mail(stranger))
    finally:
        ses.put_account_details(
            MailType="TRANSACTIONAL",
            WebsiteURL="https://example.com",
            UseCaseDescription="x",
            ProductionAccessEnabled=False,
        )
