"""Text UTF-8 cannot hold (a lone surrogate, which JSON may escape) is a 400 naming the field, never a 500."""

from __future__ import annotations

import json

import pytest

from .conftest import Client, Keys

API = "/api/v1/namespaces/default"


@pytest.mark.parametrize("body", [{"files": ["src/\ud800.py"]}, {"files": ["package.json", "\udfff"], "q": "pnpm"}])
@pytest.mark.parametrize("accept", ["text/markdown", "application/json"])
def test_a_lone_surrogate_in_the_files_of_a_context_is_a_400(client: Client, keys: Keys, body: dict[str, object],
                                                             accept: str) -> None:
    got = client.post(f"{API}/context", data=json.dumps(body), content_type="application/json",
                      headers={**keys.auth("reader"), "Accept": accept})
    assert got.status_code == 400
    assert got.json["error"]["message"].startswith("file '") and "not valid UTF-8" in got.json["error"]["message"]


def test_good_files_still_lead_the_context(client: Client, keys: Keys) -> None:
    client.post(f"{API}/memories", json={"text": "We use pnpm, not npm", "paths": ["package.json"]},
                headers=keys.auth("writer"))
    got = client.post(f"{API}/context", json={"files": ["package.json", " "]}, headers=keys.auth("reader"))
    assert got.status_code == 200 and "For: package.json\n" in got.get_data(as_text=True)
