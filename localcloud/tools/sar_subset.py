"""Regenerates localcloud/tests/fixtures/sar_subset.json, the part of AWS's Service
Authorization Reference (SAR) that iam_actions.py's table uses, from a local copy of
the SAR's HTML pages ("list_<service>.html", as saved by AWS's documentation site and
mirrored in salesforce/policy_sentry's policy_sentry/shared/data/docs/).

    python3 localcloud/tools/sar_subset.py <directory of list_*.html> \
        --source 'salesforce/policy_sentry policy_sentry/shared/data/docs <commit> <date>' \
        > localcloud/tests/fixtures/sar_subset.json

It reads only the given directory (no download): the test that uses the subset
(localcloud/tests/test_iam_sar.py) runs offline. Add an action to ACTIONS when the
table starts authorising a new one, and regenerate.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

# IAM service prefix -> (SAR page, the actions iam_actions.py authorises).
ACTIONS: dict[str, tuple[str, list[str]]] = {
    "kms": (
        "awskeymanagementservice",
        ["Decrypt", "Encrypt", "GenerateDataKey", "GenerateDataKeyWithoutPlaintext", "DescribeKey"],
    ),
    "ssm": ("awssystemsmanager", ["GetParameter", "GetParameters", "PutParameter"]),
    "s3": ("amazons3", ["PutObject", "GetObject", "GetObjectVersion"]),
    "sqs": (
        "amazonsqs",
        [
            "CreateQueue",
            "GetQueueUrl",
            "SendMessage",
            "ReceiveMessage",
            "DeleteMessage",
            "DeleteQueue",
            "GetQueueAttributes",
            "ChangeMessageVisibility",
        ],
    ),
    "sns": ("amazonsns", ["Publish"]),
    "states": (
        "awsstepfunctions",
        [
            "StartExecution",
            "DescribeExecution",
            "StopExecution",
            "GetExecutionHistory",
            "SendTaskSuccess",
            "SendTaskFailure",
            "SendTaskHeartbeat",
        ],
    ),
    "ecs": ("amazonelasticcontainerservice", ["RunTask", "StopTask", "DescribeTasks"]),
    "iam": ("awsidentityandaccessmanagementiam", ["PassRole"]),
    "lambda": ("awslambda", ["InvokeFunction"]),
    "rds-data": (
        "amazonrdsdataapi",
        ["ExecuteStatement", "BatchExecuteStatement", "BeginTransaction", "CommitTransaction", "RollbackTransaction"],
    ),
    "secretsmanager": ("awssecretsmanager", ["GetSecretValue", "PutSecretValue"]),
    "sts": ("awssecuritytokenservice", ["AssumeRole", "GetCallerIdentity"]),
    "ses": ("amazonsimpleemailservicev2", ["SendEmail"]),
    "logs": ("amazoncloudwatchlogs", ["CreateLogGroup", "CreateLogStream", "PutLogEvents"]),
}


class _Tables(HTMLParser):
    """Every <table> of a page as rows of cells; a cell keeps its id, its rowspan,
    its text and the texts of its <p> children (the SAR puts one item per <p>)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[dict]]] = []
        self._cell: dict | None = None
        self._p: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th") and self.tables and self.tables[-1]:
            a = dict(attrs)
            self._cell = {"id": a.get("id"), "rowspan": int(a.get("rowspan") or 1), "text": [], "items": []}
            self.tables[-1][-1].append(self._cell)
        elif tag == "p" and self._cell is not None:
            self._p = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "p" and self._cell is not None and self._p is not None:
            item = _squash("".join(self._p))
            if item:
                self._cell["items"].append(item)
            self._p = None
        elif tag in ("td", "th"):
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell["text"].append(data)
            if self._p is not None:
                self._p.append(data)


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text) if text.strip().startswith("arn:") else " ".join(text.split())


def _text(cell: dict) -> str:
    return _squash("".join(cell["text"]))


def parse_page(html: str, page: str) -> dict:
    """{actions: {name: {resource_types, condition_keys}}, resource_types: {name:
    {arn, condition_keys}}} of one SAR page."""
    parser = _Tables()
    parser.feed(html)
    prefix_id = page + "-"
    actions: dict[str, dict] = {}
    resource_types: dict[str, dict] = {}
    action_table, resource_table = None, None
    for table in parser.tables:
        header = [_text(c) for c in table[0]] if table else []
        if header[:1] == ["Actions"]:
            action_table = table
        elif header[:1] == ["Resource types"]:
            resource_table = table
    if action_table is None or resource_table is None:
        raise SystemExit(f"no actions or resource types table in page {page!r}")
    current: dict | None = None
    for row in action_table[1:]:
        if row and (row[0]["id"] or "").startswith(prefix_id):
            # The cell's id is "<page>-<Action>"; its text may add "[permission only]".
            name = row[0]["id"][len(prefix_id) :]
            current = actions.setdefault(name, {"resource_types": [], "condition_keys": []})
            rest = row[3:]
        else:
            rest = row
        if current is None or len(rest) < 2:
            continue
        for item in rest[0]["items"]:
            current["resource_types"].append({"name": item.rstrip("*"), "required": item.endswith("*")})
        current["condition_keys"] += [k for k in rest[1]["items"] if k not in current["condition_keys"]]
    for row in resource_table[1:]:
        if len(row) >= 2 and (row[0]["id"] or "").startswith(prefix_id):
            resource_types[row[0]["id"][len(prefix_id) :]] = {
                "arn": _text(row[1]),
                "condition_keys": row[2]["items"] if len(row) > 2 else [],
            }
    return {"actions": actions, "resource_types": resource_types}


def subset(directory: Path, source: str) -> dict:
    services = {}
    for prefix, (page, wanted) in sorted(ACTIONS.items()):
        parsed = parse_page((directory / f"list_{page}.html").read_text(encoding="utf-8"), page)
        missing = [a for a in wanted if a not in parsed["actions"]]
        actions = {a: parsed["actions"][a] for a in wanted if a in parsed["actions"]}
        types = sorted({rt["name"] for a in actions.values() for rt in a["resource_types"]})
        services[prefix] = {
            "page": f"https://docs.aws.amazon.com/service-authorization/latest/reference/list_{page}.html",
            "actions": actions,
            # Listed so the test can say "not in the SAR" rather than "not in the subset".
            "actions_not_in_sar": missing,
            "resource_types": {t: parsed["resource_types"][t] for t in types if t in parsed["resource_types"]},
        }
    return {
        "_source": source,
        "_regenerate": "python3 localcloud/tools/sar_subset.py <dir of list_*.html> --source '<...>'",
        "services": services,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--source", required=True, help="repository, path, commit and date of the pages")
    args = parser.parse_args()
    json.dump(subset(args.directory, args.source), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
