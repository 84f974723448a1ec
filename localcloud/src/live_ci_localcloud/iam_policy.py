"""IAM policy evaluation as AWS does it within one account: identity policies and
resource policies, explicit Deny first, wildcards, NotAction/NotResource/NotPrincipal,
the condition operators the module's policies use. Pure (no LocalStack import), so its
rules are unit-tested on their own (`localcloud/tests/test_iam_policy.py`).

The logic (AWS's "Policy evaluation logic", same-account case):
1. An explicit Deny in any applicable policy (identity or resource) denies.
2. KMS: the key policy must allow the principal, directly or by delegating to the
   account (the account root as principal) — then an identity policy must allow too.
   Without a key policy statement for the principal nothing else can allow.
3. Other services: an Allow in an identity policy, or in the resource policy naming
   this principal (the role or its session; not the account root, which delegates to
   IAM), allows.
4. Otherwise an implicit deny.
"""

from __future__ import annotations

import fnmatch
import functools
import ipaddress
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

IDENTITY = "identity-based"
RESOURCE = "resource-based"


class PolicyError(ValueError):
    """A policy document the evaluator cannot read (named, with the offending part)."""


@dataclass(frozen=True)
class Statement:
    """One statement, with where it came from (for errors and least-privilege reports)."""

    source: str  # e.g. "role/live-ci-receiver inline receiver", "key-policy <key arn>"
    sid: str
    effect: str
    actions: tuple[str, ...] | None
    not_actions: tuple[str, ...] | None
    resources: tuple[str, ...] | None
    not_resources: tuple[str, ...] | None
    principals: Mapping[str, tuple[str, ...]] | str | None
    not_principals: Mapping[str, tuple[str, ...]] | str | None
    conditions: Mapping[str, Mapping[str, tuple[str, ...]]]
    index: int

    @property
    def label(self) -> str:
        return f"{self.source} statement {self.sid or '#' + str(self.index)}"


@dataclass(frozen=True)
class Request:
    """What is being authorised: who, which action on which resource, in which context."""

    principal_arn: str  # the session: arn:aws:sts::<acct>:assumed-role/<role>/<session>
    role_arn: str  # arn:aws:iam::<acct>:role/<path/><name>
    account_id: str
    action: str
    resource: str
    context: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Decision:
    allowed: bool
    # Why, in AWS's words: "no identity-based policy allows", "an explicit deny in a
    # resource-based policy", ...
    reason: str = ""
    allowing: list[Statement] = field(default_factory=list)
    denying: list[Statement] = field(default_factory=list)

    def message(self, request: Request) -> str:
        # AWS: "... on resource: <arn> because no identity-based policy allows ..."
        # but "... on resource: <arn> with an explicit deny in a ... policy".
        joint = " " if self.reason.startswith("with ") else " because "
        return (
            f"User: {request.principal_arn} is not authorized to perform: {request.action} "
            f"on resource: {request.resource}{joint}{self.reason}"
        )


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, (str, bool, int)) for v in value):
        return tuple(str(v).lower() if isinstance(v, bool) else str(v) for v in value)
    if isinstance(value, bool):
        return (str(value).lower(),)
    raise PolicyError(f"{where}: expected a string or a list of strings, got {value!r}")


def _principals(value: Any, where: str) -> Mapping[str, tuple[str, ...]] | str | None:
    if value is None:
        return None
    if value == "*":
        return "*"
    if isinstance(value, dict):
        return {kind: _strings(v, f"{where}.{kind}") for kind, v in value.items()}
    raise PolicyError(f'{where}: expected "*" or an object, got {value!r}')


def parse_policy(document: str | Mapping[str, Any], source: str) -> list[Statement]:
    """The statements of a policy document (JSON text, possibly URL-quoted, or parsed)."""
    if isinstance(document, str):
        text = document
        if text.lstrip().startswith("%7B") or text.lstrip().startswith("%7b"):
            from urllib.parse import unquote

            text = unquote(text)
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as e:
            raise PolicyError(f"{source}: not JSON: {e}") from e
    else:
        parsed = document
    raw = parsed.get("Statement")
    if raw is None:
        raise PolicyError(f"{source}: no Statement")
    statements = [raw] if isinstance(raw, dict) else raw
    out = []
    for i, st in enumerate(statements):
        where = f"{source} statement {st.get('Sid') or '#' + str(i)}"
        effect = st.get("Effect")
        if effect not in ("Allow", "Deny"):
            raise PolicyError(f"{where}: Effect must be Allow or Deny, got {effect!r}")
        conditions = {
            op: {key: _strings(values, f"{where}.Condition.{op}.{key}") for key, values in block.items()}
            for op, block in (st.get("Condition") or {}).items()
        }
        out.append(
            Statement(
                source=source,
                sid=st.get("Sid", ""),
                effect=effect,
                actions=_strings(st["Action"], f"{where}.Action") if "Action" in st else None,
                not_actions=_strings(st["NotAction"], f"{where}.NotAction") if "NotAction" in st else None,
                resources=_strings(st["Resource"], f"{where}.Resource") if "Resource" in st else None,
                not_resources=_strings(st["NotResource"], f"{where}.NotResource") if "NotResource" in st else None,
                principals=_principals(st.get("Principal"), f"{where}.Principal"),
                not_principals=_principals(st.get("NotPrincipal"), f"{where}.NotPrincipal"),
                conditions=conditions,
                index=i,
            )
        )
    return out


@functools.lru_cache(maxsize=4096)
def _glob(pattern: str, case_sensitive: bool) -> re.Pattern[str]:
    # `*` any run of characters (colons and slashes included), `?` one character.
    return re.compile(fnmatch.translate(pattern), 0 if case_sensitive else re.IGNORECASE)


def glob_match(pattern: str, value: str, *, case_sensitive: bool = True) -> bool:
    if pattern == "*":
        return True
    # fnmatch treats [..] as a class; IAM has no classes: escape them.
    escaped = pattern.replace("[", "[[]")
    return _glob(escaped, case_sensitive).match(value) is not None


def _action_matches(patterns: Iterable[str], action: str) -> bool:
    return any(glob_match(p, action, case_sensitive=False) for p in patterns)


def _resource_matches(patterns: Iterable[str], resource: str) -> bool:
    return any(glob_match(p, resource) for p in patterns)


def _arn_like(pattern: str, value: str) -> bool:
    # ArnLike/ArnEquals: the six colon-separated parts, each matched on its own.
    p_parts, v_parts = pattern.split(":", 5), value.split(":", 5)
    if len(p_parts) != 6 or len(v_parts) != 6:
        return False
    return all(glob_match(p, v) for p, v in zip(p_parts, v_parts, strict=True))


def _as_values(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple, set, frozenset)):
        return [str(v).lower() if isinstance(v, bool) else str(v) for v in value]
    if isinstance(value, bool):
        return [str(value).lower()]
    return [str(value)]


def _base_match(base: str, policy_value: str, value: str) -> bool:
    match base:
        case "StringEquals":
            return value == policy_value
        case "StringEqualsIgnoreCase":
            return value.lower() == policy_value.lower()
        case "StringLike":
            return glob_match(policy_value, value)
        case "ArnEquals" | "ArnLike":
            return _arn_like(policy_value, value)
        case "Bool":
            return value.lower() == policy_value.lower()
        case "NumericEquals":
            return float(value) == float(policy_value)
        case "NumericLessThan":
            return float(value) < float(policy_value)
        case "NumericLessThanEquals":
            return float(value) <= float(policy_value)
        case "NumericGreaterThan":
            return float(value) > float(policy_value)
        case "NumericGreaterThanEquals":
            return float(value) >= float(policy_value)
        case "IpAddress":
            return ipaddress.ip_address(value) in ipaddress.ip_network(policy_value, strict=False)
    raise PolicyError(f"condition operator {base!r} is not supported by the local cloud's evaluator")


NEGATED = {
    "StringNotEquals": "StringEquals",
    "StringNotEqualsIgnoreCase": "StringEqualsIgnoreCase",
    "StringNotLike": "StringLike",
    "ArnNotEquals": "ArnEquals",
    "ArnNotLike": "ArnLike",
    "NumericNotEquals": "NumericEquals",
    "NotIpAddress": "IpAddress",
}


def condition_holds(operator: str, key: str, policy_values: Sequence[str], context: Mapping[str, Any]) -> bool:
    """One condition (operator, key, values) against the request context. Keys are
    case-insensitive, as in AWS."""
    lowered = {k.lower(): v for k, v in context.items()}
    present = key.lower() in lowered
    values = _as_values(lowered.get(key.lower()))
    qualifier, _, op = operator.rpartition(":")
    if_exists = op.endswith("IfExists")
    if if_exists:
        op = op.removesuffix("IfExists")
    if op == "Null":
        # "true": the key must be absent; "false": present.
        absent = not present or values == []
        return any((pv.lower() == "true") == absent for pv in policy_values)
    if qualifier == "ForAllValues":
        # Every value in the request matches some policy value (true for no values).
        base = NEGATED.get(op, op)
        matched = all(any(_base_match(base, pv, v) for pv in policy_values) for v in values)
        return (not matched) if op in NEGATED else matched
    if qualifier == "ForAnyValue":
        if not values:
            return False
        base = NEGATED.get(op, op)
        matched = any(any(_base_match(base, pv, v) for pv in policy_values) for v in values)
        return (not matched) if op in NEGATED else matched
    if not present:
        # A missing key: IfExists and the negated operators hold, the others do not.
        return if_exists or op in NEGATED
    if op in NEGATED:
        return not any(_base_match(NEGATED[op], pv, v) for pv in policy_values for v in values)
    return any(_base_match(op, pv, v) for pv in policy_values for v in values)


def conditions_hold(statement: Statement, context: Mapping[str, Any]) -> bool:
    return all(
        condition_holds(op, key, values, context)
        for op, block in statement.conditions.items()
        for key, values in block.items()
    )


def _principal_in(principals: Mapping[str, tuple[str, ...]] | str, request: Request) -> str | None:
    """How `principals` names the requester: "direct" (the role, its session, or "*"),
    "account" (the account root or id: a delegation to IAM), or None."""
    if principals == "*":
        return "direct"
    assert not isinstance(principals, str)
    found = None
    for value in principals.get("AWS", ()):
        if value == "*" or value in (request.role_arn, request.principal_arn):
            return "direct"
        if value in (request.account_id, f"arn:aws:iam::{request.account_id}:root"):
            found = "account"
    return found


def statement_applies(statement: Statement, request: Request, *, resource_policy: bool) -> str | None:
    """None if the statement does not apply to the request; else how its principal
    named the requester ("direct"/"account"; "identity" for identity policies)."""
    if statement.actions is not None and not _action_matches(statement.actions, request.action):
        return None
    if statement.not_actions is not None and _action_matches(statement.not_actions, request.action):
        return None
    if statement.resources is not None and not _resource_matches(statement.resources, request.resource):
        return None
    if statement.not_resources is not None and _resource_matches(statement.not_resources, request.resource):
        return None
    how = "identity"
    if resource_policy:
        if statement.principals is not None:
            how = _principal_in(statement.principals, request)
            if how is None:
                return None
        elif statement.not_principals is not None:
            if _principal_in(statement.not_principals, request) is not None:
                return None
            how = "direct"
        else:
            return None
    if not conditions_hold(statement, request.context):
        return None
    return how


def evaluate(
    request: Request,
    identity: Sequence[Statement],
    resource: Sequence[Statement] | None = None,
    *,
    key_policy: bool = False,
    owner_account: str | None = None,
) -> Decision:
    """The decision for `request`. `resource` is the resource's policy (None when it has
    none); `key_policy` marks it a KMS key policy (which must allow). A resource of
    another account (`owner_account`) needs both: the caller's identity policy and
    the resource's policy naming the caller (its role, session or account)."""
    identity_allows: list[Statement] = []
    denies: list[tuple[Statement, str]] = []
    for st in identity:
        if statement_applies(st, request, resource_policy=False) is not None:
            if st.effect == "Deny":
                denies.append((st, IDENTITY))
            else:
                identity_allows.append(st)
    resource_direct: list[Statement] = []
    resource_account: list[Statement] = []
    for st in resource or ():
        how = statement_applies(st, request, resource_policy=True)
        if how is None:
            continue
        if st.effect == "Deny":
            denies.append((st, RESOURCE))
        elif how == "direct":
            resource_direct.append(st)
        else:
            resource_account.append(st)
    if denies:
        kind = denies[0][1]
        article = "an" if kind == IDENTITY else "a"
        return Decision(False, f"with an explicit deny in {article} {kind} policy", denying=[d for d, _ in denies])
    if owner_account is not None and owner_account != request.account_id:
        if not (resource_direct or resource_account):
            return Decision(False, f"no {RESOURCE} policy allows the {request.action} action")
        if not identity_allows:
            return Decision(False, f"no {IDENTITY} policy allows the {request.action} action")
        return Decision(True, allowing=identity_allows + resource_direct + resource_account)
    if key_policy:
        if resource_direct:
            return Decision(True, allowing=resource_direct + (identity_allows if resource_account else []))
        if not resource_account:
            return Decision(False, f"no {RESOURCE} policy allows the {request.action} action")
        if identity_allows:
            return Decision(True, allowing=identity_allows)
        return Decision(False, f"no {IDENTITY} policy allows the {request.action} action")
    allowing = identity_allows + resource_direct
    if allowing:
        return Decision(True, allowing=allowing)
    return Decision(False, f"no {IDENTITY} policy allows the {request.action} action")
