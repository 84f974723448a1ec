"""SES v2 (moto-backed): identities by name (the URL-encoding fix), and sent mail
readable back at LocalStack's /_aws/ses, as the approval e-mails will be."""

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
