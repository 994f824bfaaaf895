"""Schemathesis fuzzes every operation in the OpenAPI document: no request it allows gets a 500.

Valid and invalid data are both generated and sent over real HTTP to a live server, with an
admin key so they reach the views rather than stopping at authentication. Responses must also
use the documented statuses and content types.
"""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, status_code_conformance

from gitmem.service import MemoryService
from gitmem.web.openapi import document

from .conftest import Keys

EXAMPLES = 15

schema = schemathesis.openapi.from_dict(document())
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
                                max_examples=EXAMPLES, deterministic=True)


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
def test_no_request_the_document_allows_is_a_500(case: Any, live_server: str, keys: Keys,
                                                 svc: MemoryService) -> None:
    if not svc.list("default", limit=1):
        for text in ("Use ruff for linting", "Tests run with pytest", "Deploy with ansible"):
            svc.remember("default", text)
    case.call_and_validate(base_url=f"{live_server}/api/v1", headers=keys.auth("admin"),
                           checks=[not_a_server_error, status_code_conformance, content_type_conformance])
