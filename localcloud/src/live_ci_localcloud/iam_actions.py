"""The one mapping from each AWS operation live-ci calls (and the local cloud's own
integrations call with issued credentials) to what IAM authorises: the action, the
resource ARN, the request's condition keys, the resource's policy, and the dependent
authorisations the service makes on the caller's behalf (KMS for an encrypted queue,
topic, bucket or SecureString; iam:PassRole for RunTask; the Data API's secret).

Every entry cites the Service Authorization Reference page ("SAR <page>",
https://docs.aws.amazon.com/service-authorization/latest/reference/<page>.html) it
follows, and tests/test_iam_sar.py checks each against a committed subset of those
pages (tests/fixtures/sar_subset.json): the action, the resource ARN's format and
the condition keys. An operation that is not here is authorised as `<prefix>:<Operation>` on
"*" (iam_enforce.py), which only a statement granting every resource allows; such
calls are counted at /_live_ci/iam/stats ("unmapped").

Resource lookups read LocalStack's own stores (imported when first needed): they are
internals of the pinned localstack-core, like the rest of the plugin.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

LOG = logging.getLogger(__name__)


@dataclass
class Check:
    """One authorisation: action on resource, with its context and resource policy."""

    action: str
    resource: str
    context: dict[str, Any] = field(default_factory=dict)
    # The resource's policy document (JSON text), if it has one.
    resource_policy: str | None = None
    # KMS key policies and role trust policies must allow (see iam_policy.evaluate).
    must_allow: bool = False
    policy_source: str = ""
    # The account owning the resource, when it may differ from the caller's (a role
    # of a target account): then both accounts' policies must allow.
    owner_account: str | None = None


@dataclass
class Call:
    """The request being mapped."""

    account: str
    region: str
    operation: str
    params: dict[str, Any]
    # Keys every request carries (aws:SecureTransport, aws:SourceOwner, ...).
    global_context: dict[str, Any]


class Unmapped(Exception):
    """An operation the table does not know."""


def _arn(service: str, call: Call, resource: str, *, region: bool = True, account: bool = True) -> str:
    return f"arn:aws:{service}:{call.region if region else ''}:{call.account if account else ''}:{resource}"


# ---------------------------------------------------------------- KMS (SAR list_awskeymanagementservice)


def kms_key(account: str, region: str, key_ref: str) -> tuple[str, str | None]:
    """(key ARN, key policy) for a key id, key ARN, alias name or alias ARN."""
    from localstack.services.kms.models import kms_stores

    if key_ref.startswith("arn:"):
        parts = key_ref.split(":", 5)
        account, region, resource = parts[4], parts[3], parts[5]
        key_ref = resource.removeprefix("key/")
    store = kms_stores[account][region]
    if key_ref.startswith("alias/"):
        alias = store.aliases.get(key_ref)
        if alias is None:
            return _arn_kms(account, region, key_ref), None
        key_ref = alias.metadata["TargetKeyId"]
    key = store.keys.get(key_ref)
    if key is None:
        return f"arn:aws:kms:{region}:{account}:key/{key_ref}", None
    return key.metadata["Arn"], key.policy


def _arn_kms(account: str, region: str, alias: str) -> str:
    return f"arn:aws:kms:{region}:{account}:{alias}"


def kms_check(call: Call, action: str, key_ref: str, context: dict[str, str] | None) -> Check:
    arn, policy = kms_key(call.account, call.region, key_ref)
    keys: dict[str, Any] = {"kms:CallerAccount": call.account}
    if context is not None:
        keys["kms:EncryptionContextKeys"] = sorted(context)
        keys.update({f"kms:EncryptionContext:{k}": v for k, v in context.items()})
    return Check(action, arn, {**call.global_context, **keys}, policy, True, f"key-policy {arn}")


def _ciphertext_key(blob: Any) -> str:
    from localstack.services.kms.models import deserialize_ciphertext_blob

    raw = blob if isinstance(blob, bytes) else base64.b64decode(blob)
    return deserialize_ciphertext_blob(raw).key_id


def kms_ops(call: Call) -> list[Check]:
    p = call.params
    context = p.get("EncryptionContext")
    match call.operation:
        case "Decrypt":
            # SAR: Decrypt — key*; kms:EncryptionContextKeys, kms:EncryptionContext:${Key}.
            key = p.get("KeyId") or _ciphertext_key(p["CiphertextBlob"])
            return [kms_check(call, "kms:Decrypt", key, context)]
        case "Encrypt" | "GenerateDataKey" | "GenerateDataKeyWithoutPlaintext" | "DescribeKey":
            # SAR: Encrypt / GenerateDataKey / GenerateDataKeyWithoutPlaintext / DescribeKey — key*.
            return [kms_check(call, f"kms:{call.operation}", p["KeyId"], context)]
    raise Unmapped


# ---------------------------------------------------------------- SSM (SAR list_awssystemsmanager)


def ssm_parameter_arn(call: Call, name: str) -> str:
    if name.startswith("arn:"):
        return name
    return _arn("ssm", call, "parameter" + (name if name.startswith("/") else "/" + name))


def _ssm_parameter(call: Call, name: str) -> Any:
    from moto.ssm.models import ssm_backends

    try:
        return ssm_backends[call.account][call.region].get_parameter(
            name.split(":parameter", 1)[-1] if name.startswith("arn:") else name
        )
    except Exception:  # noqa: BLE001 - a missing parameter: the service answers that itself
        return None


def ssm_ops(call: Call) -> list[Check]:
    p = call.params
    match call.operation:
        case "GetParameter" | "GetParameters":
            # SAR: GetParameter / GetParameters — parameter*. A SecureString read with
            # decryption is decrypted by SSM with the caller's kms:Decrypt, encryption
            # context {"PARAMETER_ARN": <arn>} (SSM "How Parameter Store uses KMS").
            names = [p["Name"]] if call.operation == "GetParameter" else list(p.get("Names") or [])
            checks = []
            for name in names:
                arn = ssm_parameter_arn(call, name)
                checks.append(Check(f"ssm:{call.operation}", arn, dict(call.global_context)))
                param = _ssm_parameter(call, name)
                if p.get("WithDecryption") and param is not None and param.parameter_type == "SecureString":
                    checks.append(
                        kms_check(call, "kms:Decrypt", param.keyid or "alias/aws/ssm", {"PARAMETER_ARN": arn})
                    )
            return checks
        case "PutParameter":
            # SAR: PutParameter — parameter*; a SecureString is encrypted with the caller's kms:Encrypt.
            arn = ssm_parameter_arn(call, p["Name"])
            checks = [Check("ssm:PutParameter", arn, dict(call.global_context))]
            param_type = p.get("Type")
            existing = _ssm_parameter(call, p["Name"])
            if param_type is None and existing is not None:
                param_type = existing.parameter_type
            if param_type == "SecureString":
                key = p.get("KeyId") or (existing.keyid if existing is not None else None) or "alias/aws/ssm"
                checks.append(kms_check(call, "kms:Encrypt", key, {"PARAMETER_ARN": arn}))
            return checks
    raise Unmapped


# ---------------------------------------------------------------- S3 (SAR list_amazons3)


def _bucket(call: Call, name: str) -> Any:
    from localstack.services.s3.models import s3_stores

    store = s3_stores[call.account]["us-east-1"]
    return store.buckets.get(name)


def _bucket_kms_key(bucket: Any) -> str | None:
    rule = getattr(bucket, "encryption_rule", None) or {}
    default = rule.get("ApplyServerSideEncryptionByDefault") or {}
    if default.get("SSEAlgorithm") in ("aws:kms", "aws:kms:dsse"):
        return default.get("KMSMasterKeyID") or "alias/aws/s3"
    return None


def s3_ops(call: Call) -> list[Check]:
    p = call.params
    bucket_name, key = p.get("Bucket", ""), p.get("Key")
    bucket = _bucket(call, bucket_name)
    policy = getattr(bucket, "policy", None) if bucket is not None else None
    resource = f"arn:aws:s3:::{bucket_name}/{key}" if key is not None else f"arn:aws:s3:::{bucket_name}"
    source = f"bucket-policy {bucket_name}"
    match call.operation:
        case "PutObject":
            # SAR: PutObject — object*. With SSE-KMS S3 asks KMS for a data key as the
            # caller (kms:GenerateDataKey, context {"aws:s3:arn": <bucket or object ARN>}).
            checks = [Check("s3:PutObject", resource, dict(call.global_context), policy, policy_source=source)]
            key_ref = p.get("SSEKMSKeyId") or (_bucket_kms_key(bucket) if bucket is not None else None)
            if key_ref:
                checks.append(kms_check(call, "kms:GenerateDataKey", key_ref, None))
            return checks
        case "GetObject" | "HeadObject":
            # SAR: GetObject (HeadObject needs s3:GetObject) — object*; with a VersionId
            # s3:GetObjectVersion. An SSE-KMS object is decrypted with the caller's kms:Decrypt.
            action = "s3:GetObjectVersion" if p.get("VersionId") else "s3:GetObject"
            checks = [Check(action, resource, dict(call.global_context), policy, policy_source=source)]
            key_ref = _object_kms_key(bucket, key, p.get("VersionId")) if bucket is not None else None
            if key_ref:
                checks.append(kms_check(call, "kms:Decrypt", key_ref, None))
            return checks
    raise Unmapped


def _object_kms_key(bucket: Any, key: str | None, version: str | None) -> str | None:
    try:
        obj = bucket.objects.get(key, version) if version else bucket.objects.get(key)
    except Exception:  # noqa: BLE001 - a missing object: S3 answers NoSuchKey itself
        return None
    if obj is None or getattr(obj, "sse_algorithm", None) not in ("aws:kms", "aws:kms:dsse"):
        return None
    return getattr(obj, "kms_key_id", None)


# ---------------------------------------------------------------- SQS (SAR list_amazonsqs)


def _queue(call: Call, url_or_name: str) -> tuple[str, Any]:
    from localstack.services.sqs.models import sqs_stores

    name = urlparse(url_or_name).path.rstrip("/").rsplit("/", 1)[-1] if "/" in url_or_name else url_or_name
    account = call.account
    if "/" in url_or_name:
        parts = urlparse(url_or_name).path.strip("/").split("/")
        if len(parts) >= 2 and parts[-2].isdigit():
            account = parts[-2]
    queue = sqs_stores[account][call.region].queues.get(name)
    return f"arn:aws:sqs:{call.region}:{account}:{name}", queue


def sqs_ops(call: Call) -> list[Check]:
    p = call.params
    if call.operation == "CreateQueue":
        # SAR: CreateQueue — queue*.
        return [Check("sqs:CreateQueue", _arn("sqs", call, p["QueueName"]), dict(call.global_context))]
    if call.operation == "GetQueueUrl":
        # SAR: GetQueueUrl — queue*.
        arn, queue = _queue(call, p["QueueName"])
    elif call.operation in (
        "SendMessage",
        "SendMessageBatch",
        "ReceiveMessage",
        "DeleteMessage",
        "DeleteMessageBatch",
        "DeleteQueue",
        "GetQueueAttributes",
        "ChangeMessageVisibility",
    ):
        # SAR: each — queue*. (SendMessageBatch is authorised as sqs:SendMessage, etc.)
        arn, queue = _queue(call, p["QueueUrl"])
    else:
        raise Unmapped
    action = "sqs:" + call.operation.removesuffix("Batch")
    attributes = getattr(queue, "attributes", None) or {}
    checks = [
        Check(action, arn, dict(call.global_context), attributes.get("Policy"), policy_source=f"queue-policy {arn}")
    ]
    # An SSE-KMS queue: producers need kms:GenerateDataKey and kms:Decrypt, consumers
    # kms:Decrypt (SQS developer guide, "Key management"), context {"aws:sqs:arn": <arn>}.
    key_ref = attributes.get("KmsMasterKeyId")
    if key_ref and action == "sqs:SendMessage":
        checks.append(kms_check(call, "kms:GenerateDataKey", key_ref, {"aws:sqs:arn": arn}))
        checks.append(kms_check(call, "kms:Decrypt", key_ref, {"aws:sqs:arn": arn}))
    elif key_ref and action == "sqs:ReceiveMessage":
        checks.append(kms_check(call, "kms:Decrypt", key_ref, {"aws:sqs:arn": arn}))
    return checks


# ---------------------------------------------------------------- SNS (SAR list_amazonsns)


def sns_ops(call: Call) -> list[Check]:
    from localstack.services.sns.models import sns_stores

    if call.operation != "Publish":
        raise Unmapped
    # SAR: Publish — topic*. An encrypted topic: the publisher needs kms:GenerateDataKey
    # and kms:Decrypt on its key (SNS developer guide, "Encryption at rest").
    arn = call.params.get("TopicArn") or call.params.get("TargetArn") or ""
    parts = arn.split(":")
    topic = sns_stores[parts[4]][parts[3]].topics.get(arn) if len(parts) == 6 else None
    attributes = (topic or {}).get("attributes") or {}
    context = {**call.global_context, "aws:SourceOwner": call.account}
    checks = [Check("sns:Publish", arn, context, attributes.get("Policy"), policy_source=f"topic-policy {arn}")]
    key_ref = attributes.get("KmsMasterKeyId")
    if key_ref:
        checks.append(kms_check(call, "kms:GenerateDataKey", key_ref, None))
        checks.append(kms_check(call, "kms:Decrypt", key_ref, None))
    return checks


# ---------------------------------------------------------------- Step Functions (SAR list_awsstepfunctions)


def states_ops(call: Call) -> list[Check]:
    p = call.params
    match call.operation:
        case "StartExecution":
            # SAR: StartExecution — statemachine*.
            return [Check("states:StartExecution", p["stateMachineArn"], dict(call.global_context))]
        case "DescribeExecution" | "StopExecution" | "GetExecutionHistory":
            # SAR: DescribeExecution / StopExecution / GetExecutionHistory — execution*.
            return [Check(f"states:{call.operation}", p["executionArn"], dict(call.global_context))]
        case "SendTaskSuccess" | "SendTaskFailure" | "SendTaskHeartbeat":
            # SAR: SendTaskSuccess / SendTaskFailure / SendTaskHeartbeat — no resource
            # type, so only a statement naming "*" allows them (the token is the
            # capability). Before the SAR check (tests/test_iam_sar.py) the table
            # used the token's state machine, which the SAR does not support.
            return [Check(f"states:{call.operation}", "*", dict(call.global_context))]
    raise Unmapped


# ---------------------------------------------------------------- ECS (SAR list_amazonelasticcontainerservice)


def ecs_ops(call: Call) -> list[Check]:
    from moto.ecs.models import ecs_backends

    p = call.params
    backend = ecs_backends[call.account][call.region]
    cluster_ref = p.get("cluster") or "default"
    cluster_arn = cluster_ref if cluster_ref.startswith("arn:") else _arn("ecs", call, f"cluster/{cluster_ref}")
    cluster_name = cluster_arn.rsplit("/", 1)[-1]
    context = {**call.global_context, "ecs:cluster": cluster_arn}
    match call.operation:
        case "RunTask":
            # SAR: RunTask — task-definition*; ecs:cluster. Passing the task's roles needs
            # iam:PassRole on each, with iam:PassedToService = ecs-tasks.amazonaws.com (SAR
            # list_awsidentityandaccessmanagementiam: PassRole — role*; iam:PassedToService).
            try:
                definition = backend.describe_task_definition(p["taskDefinition"])
                definition_arn = definition.arn
            except Exception:  # noqa: BLE001 - an unknown definition: ECS answers that itself
                definition = None
                definition_arn = _arn("ecs", call, f"task-definition/{p['taskDefinition']}")
            checks = [Check("ecs:RunTask", definition_arn, context)]
            overrides = p.get("overrides") or {}
            roles = [
                overrides.get("taskRoleArn") or getattr(definition, "task_role_arn", None),
                overrides.get("executionRoleArn") or getattr(definition, "execution_role_arn", None),
            ]
            pass_context = {**call.global_context, "iam:PassedToService": "ecs-tasks.amazonaws.com"}
            checks += [Check("iam:PassRole", role, dict(pass_context)) for role in dict.fromkeys(r for r in roles if r)]
            return checks
        case "StopTask" | "DescribeTasks":
            # SAR: StopTask / DescribeTasks — task*; ecs:cluster.
            refs = [p["task"]] if call.operation == "StopTask" else list(p.get("tasks") or [])
            return [
                Check(
                    f"ecs:{call.operation}",
                    ref if ref.startswith("arn:") else _arn("ecs", call, f"task/{cluster_name}/{ref}"),
                    dict(context),
                )
                for ref in refs
            ]
    raise Unmapped


# ---------------------------------------------------------------- Lambda (SAR list_awslambda)


def lambda_ops(call: Call) -> list[Check]:
    if call.operation != "Invoke":
        raise Unmapped
    # SAR: InvokeFunction — function*. The operation is Invoke, the action InvokeFunction.
    name = call.params["FunctionName"]
    # A name, a partial ARN (<account>:function:<name>) or a full ARN.
    arn = name if name.startswith("arn:") else _arn("lambda", call, "function:" + name.split(":function:")[-1])
    qualifier = call.params.get("Qualifier")
    if qualifier and arn.count(":") == 6:
        arn = f"{arn}:{qualifier}"
    return [Check("lambda:InvokeFunction", arn, dict(call.global_context))]


# ---------------------------------------------------------------- RDS Data API, Secrets Manager


def _secret_arn(call: Call, secret_id: str) -> str:
    from moto.secretsmanager.models import secretsmanager_backends

    try:
        return secretsmanager_backends[call.account][call.region].describe_secret(secret_id).arn
    except Exception:  # noqa: BLE001 - unknown: the service answers that itself
        return secret_id if secret_id.startswith("arn:") else _arn("secretsmanager", call, f"secret:{secret_id}")


def rds_data_ops(call: Call) -> list[Check]:
    # SAR list_amazonrdsdataapi: ExecuteStatement / BatchExecuteStatement /
    # BeginTransaction / CommitTransaction / RollbackTransaction — cluster*. The Data
    # API reads the secret with the caller's secretsmanager:GetSecretValue (RDS user
    # guide, "Authorizing access to the Data API").
    if call.operation not in (
        "ExecuteStatement",
        "BatchExecuteStatement",
        "BeginTransaction",
        "CommitTransaction",
        "RollbackTransaction",
    ):
        raise Unmapped
    p = call.params
    checks = [Check(f"rds-data:{call.operation}", p["resourceArn"], dict(call.global_context))]
    checks.append(Check("secretsmanager:GetSecretValue", _secret_arn(call, p["secretArn"]), dict(call.global_context)))
    return checks


def secretsmanager_ops(call: Call) -> list[Check]:
    # SAR list_awssecretsmanager: GetSecretValue, PutSecretValue — Secret*
    # (create-deploy-stack writes terra-run's metadb login once).
    if call.operation not in ("GetSecretValue", "PutSecretValue"):
        raise Unmapped
    return [
        Check(
            f"secretsmanager:{call.operation}",
            _secret_arn(call, call.params["SecretId"]),
            dict(call.global_context),
        )
    ]


# ---------------------------------------------------------------- STS, SES v2, Logs


def _role_trust_policy(role_arn: str) -> str | None:
    from localstack.services.iam.models import iam_stores

    parts = role_arn.split(":", 5)
    if len(parts) != 6:
        return None
    entity = iam_stores[parts[4]]["us-east-1"].ROLES.get(parts[5].rsplit("/", 1)[-1])
    if entity is None:
        return None
    return entity.role.get("AssumeRolePolicyDocument")


def sts_ops(call: Call) -> list[Check]:
    if call.operation == "GetCallerIdentity":
        return []  # SAR list_awssecuritytokenservice: needs no permission.
    if call.operation != "AssumeRole":
        raise Unmapped
    # SAR: AssumeRole — role*. The role's trust policy is its resource policy: naming
    # the caller's role allows on its own, naming the account delegates to IAM.
    # A role of another account: its trust policy and the caller's IAM must both allow.
    role = call.params["RoleArn"]
    owner = role.split(":")[4] if role.count(":") >= 5 else None
    trust = _role_trust_policy(role)
    return [Check("sts:AssumeRole", role, dict(call.global_context), trust, True, f"trust-policy {role}", owner)]


def _ses_identity(call: Call, address: str) -> str:
    """The identity SES authorises for an address: the address when it is a verified
    identity itself, else its domain when that is, else the address."""
    from moto.ses.models import ses_backends

    identities = ses_backends[call.account][call.region].email_identities
    domain = address.rsplit("@", 1)[-1]
    if address not in identities and domain in identities:
        return domain
    return address


def sesv2_ops(call: Call) -> list[Check]:
    if call.operation != "SendEmail":
        raise Unmapped
    # SAR list_amazonsimpleemailservicev2: SendEmail — identity*, configuration-set;
    # ses:FromAddress. The identity is the sender's address (or its domain).
    p = call.params
    sender = p.get("FromEmailAddress") or ""
    address = sender.rsplit("<", 1)[-1].rstrip(">").strip()
    context = {**call.global_context, "ses:FromAddress": address}
    checks = [Check("ses:SendEmail", _arn("ses", call, f"identity/{_ses_identity(call, address)}"), context)]
    # In the sandbox SES also authorises the caller on each recipient's identity:
    # AWS's denials name them ("... is not authorized to perform `ses:SendRawEmail' on
    # resource `arn:aws:ses:<region>:<account>:identity/<recipient>'", reported in
    # aws/aws-sdk-js#3641 and GSA/data.gov#3810); the SAR page lists only the
    # resource types (identity*, configuration-set), not this sandbox rule.
    from live_ci_localcloud import sesv2

    if sesv2.in_sandbox(call.account, call.region):
        for recipient in dict.fromkeys(sesv2.recipients(p)):
            arn = _arn("ses", call, f"identity/{_ses_identity(call, recipient)}")
            checks.append(Check("ses:SendEmail", arn, dict(context)))
    if p.get("ConfigurationSetName"):
        checks.append(
            Check("ses:SendEmail", _arn("ses", call, f"configuration-set/{p['ConfigurationSetName']}"), dict(context))
        )
    return checks


def logs_ops(call: Call) -> list[Check]:
    p = call.params
    group_arn = _arn("logs", call, f"log-group:{p.get('logGroupName', '')}")
    match call.operation:
        case "CreateLogGroup":
            # SAR list_amazoncloudwatchlogs: CreateLogGroup — log-group*.
            return [Check("logs:CreateLogGroup", group_arn, dict(call.global_context))]
        case "CreateLogStream" | "PutLogEvents":
            # SAR: CreateLogStream / PutLogEvents — log-stream* (log-group:<g>:log-stream:<s>).
            stream = f"{group_arn}:log-stream:{p.get('logStreamName', '')}"
            return [Check(f"logs:{call.operation}", stream, dict(call.global_context))]
    raise Unmapped


TABLE: dict[str, Callable[[Call], list[Check]]] = {
    "kms": kms_ops,
    "ssm": ssm_ops,
    "s3": s3_ops,
    "sqs": sqs_ops,
    "sns": sns_ops,
    "stepfunctions": states_ops,
    "ecs": ecs_ops,
    "lambda": lambda_ops,
    "rds-data": rds_data_ops,
    "secretsmanager": secretsmanager_ops,
    "sts": sts_ops,
    "sesv2": sesv2_ops,
    "logs": logs_ops,
}


def checks_for(service: str, call: Call) -> list[Check]:
    """The authorisations `call` needs; raises Unmapped for an operation not in the table."""
    handler = TABLE.get(service)
    if handler is None:
        raise Unmapped
    return handler(call)


def loads(document: str | None) -> Any:
    return json.loads(document) if document else None
