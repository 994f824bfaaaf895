"""Who a memory says said it, and who the commit says made it, over the API: a key writes in its own name."""

from __future__ import annotations

from gitmem.service import MemoryService

from .conftest import Client, Keys

API = "/api/v1/namespaces/default"


def test_a_writer_key_may_not_write_in_anothers_name(client: Client, keys: Keys, svc: MemoryService) -> None:
    before = svc.head("default")
    refused = client.post(f"{API}/memories", headers=keys.auth("writer"),
                          json={"text": "We deploy on Fridays", "author": "the-cto", "source": "user"})
    assert refused.status_code == 403
    assert refused.json["error"]["message"] == ("this key writes as 'writer'; only an admin key may name another "
                                                 "author ('the-cto'); leave 'author' out")
    assert svc.head("default") == before

    # Its own name is no impersonation, and is what it gets without one.
    for body in ({"text": "We deploy on Thursdays", "author": "writer"}, {"text": "We deploy from main"}):
        made = client.post(f"{API}/memories", headers=keys.auth("writer"), json=body)
        assert made.status_code == 201 and made.json["memory"]["author"] == "writer"
    assert [(c.actor, c.action) for c in svc.log("default", limit=2)] == [("writer", "remember")] * 2


def test_an_admin_key_names_the_author_and_the_commit_names_the_key(client: Client, keys: Keys,
                                                                     svc: MemoryService) -> None:
    made = client.post(f"{API}/memories", headers=keys.auth("admin"),
                       json={"text": "Release notes go in CHANGELOG.md", "author": "dana", "source": "user"})
    assert made.status_code == 201 and made.json["memory"]["author"] == "dana"
    [commit] = svc.log("default", limit=1)
    assert (commit.actor, commit.action) == ("admin", "remember")
    # A repeat reinforces; the commit is the key's too, not the author's.
    again = client.post(f"{API}/memories", headers=keys.auth("admin"),
                        json={"text": "Release notes go in CHANGELOG.md", "author": "dana"})
    assert again.json["outcome"] == "reinforced"
    assert [(c.actor, c.action) for c in svc.log("default", limit=1)] == [("admin", "reinforce")]
