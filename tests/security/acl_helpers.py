"""Grant ACLs through the node's own CreateAcls API as the super user."""

from __future__ import annotations

import anyio

from kraftwire.protocol.messages.create_acls_request import AclCreation, CreateAclsRequest
from kraftwire.security.authorizer import ALLOW, LITERAL, TOPIC

from .harness import SecureNode


async def grant(sn: SecureNode, principal: str, operation: int, resource_type: int = TOPIC,
                name: str = "__cluster_metadata", pattern: int = LITERAL, permission: int = ALLOW,
                host: str = "*") -> None:
    async with anyio.create_task_group() as tg:
        conn = sn.connection(tg, "SASL_PLAINTEXT", sn.sasl("admin"))
        resp = await conn.request(CreateAclsRequest(creations=[AclCreation(
            resource_type=resource_type, resource_name=name, resource_pattern_type=pattern, principal=principal,
            host=host, operation=operation, permission_type=permission)]), 3, 10)
        await conn.close()
        tg.cancel_scope.cancel()
    assert [r.error_code for r in resp.results] == [0]
