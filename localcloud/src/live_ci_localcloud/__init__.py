"""live-ci's local cloud: LocalStack plugins that run the project's Lambdas and ECS
tasks as local processes (no Docker).

Only the standard library may be imported at package level: the Lambda init and the
process supervisor run as separate, fast-starting processes that must not pay for
importing LocalStack.
"""

# Every process the local cloud starts carries this variable (value: the owner's
# state directory), so teardown and the tests can find leftovers by it.
OWNER_ENV = "LIVE_CI_LOCALCLOUD_OWNER"
