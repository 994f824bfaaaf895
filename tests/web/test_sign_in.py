"""Signing in and out of the pages, and their protection against other sites (the test client and real HTTP)."""

from __future__ import annotations

import re
from collections.abc import Callable

import httpx
import pytest
from flask import Flask

from gitmem.service import MemoryService

from .conftest import Client, Keys, typed_client


def signed_in(client: Client, key: str) -> str:
    """Sign in through the form; returns the session's CSRF token."""
    form = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert token is not None
    response = client.post("/login", data={"key": key, "csrf_token": token.group(1), "next": "/"})
    assert response.status_code == 303
    page = client.get("/ns/default/").get_data(as_text=True)
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found is not None
    return found.group(1)


def test_pages_need_sign_in(client: Client) -> None:
    response = client.get("/ns/default/")
    assert response.status_code == 302 and "/login" in response.headers["Location"]


def test_wrong_key_does_not_sign_in(client: Client) -> None:
    form = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert token is not None
    response = client.post("/login", data={"key": "gmk_000000000000_xxxxxxxxxxxxxxxxxxxxxxxx",
                                           "csrf_token": token.group(1)})
    assert response.status_code == 401 and "not valid" in response.get_data(as_text=True)
    assert client.get("/ns/default/").status_code == 302


def test_form_posts_without_the_csrf_token_change_nothing(client: Client, keys: Keys, svc: MemoryService,
                                                         remember: Callable[..., str]) -> None:
    mid = remember("Keep secrets in the vault")
    token = signed_in(client, keys.reviewer)
    before = svc.status("default")["head"]
    url = f"/ns/default/memories/{mid}/feedback"
    missing = client.post(url, data={"action": "reject"})
    forged = client.post(url, data={"action": "reject", "csrf_token": "guess"})
    cross = client.post(url, data={"action": "reject", "csrf_token": token},
                        headers={"Origin": "https://evil.example"})
    # A browser that sends no Origin still sends where the form was: another site's page is refused.
    referred = client.post(url, data={"action": "reject", "csrf_token": token},
                           headers={"Referer": "https://evil.example/ns/default/"})
    assert missing.status_code == forged.status_code == cross.status_code == referred.status_code == 403
    assert svc.status("default")["head"] == before
    ok = client.post(url, data={"action": "reject", "csrf_token": token, "text": "moved to env vars"})
    assert ok.status_code == 303
    assert svc.show("default", mid).state == "archived"


@pytest.mark.parametrize(("header", "value", "status"), [
    ("Origin", "http://localhost", 303),
    ("Referer", "http://localhost/ns/default/memories/x?tab=1", 303),
    ("Origin", "http://localhost:8080", 403),  # another port is another origin
    ("Origin", "http://localhost.evil.example", 403),
    ("Referer", "https://evil.example/http://localhost/", 403),
    ("Origin", "null", 403),  # a sandboxed frame or a redirect from another site
])
def test_a_form_post_must_come_from_this_site_by_its_origin_or_referer(
        client: Client, keys: Keys, svc: MemoryService, remember: Callable[..., str], header: str, value: str,
        status: int) -> None:
    mid = remember("Forms come from this site")
    token = signed_in(client, keys.reviewer)
    response = client.post(f"/ns/default/memories/{mid}/feedback", data={"action": "confirm", "csrf_token": token},
                           headers={header: value})
    assert response.status_code == status
    assert svc.show("default", mid).verified == (("reviewer",) if status == 303 else ())


def test_a_post_without_a_session_or_with_another_sessions_token_is_refused(
        app: Flask, keys: Keys, svc: MemoryService, remember: Callable[..., str]) -> None:
    mid = remember("Tokens belong to their session")
    mine, theirs = typed_client(app), typed_client(app)
    token = signed_in(mine, keys.reviewer)
    signed_in(theirs, keys.reviewer)
    before = svc.head("default")
    url = f"/ns/default/memories/{mid}/feedback"
    assert theirs.post(url, data={"action": "confirm", "csrf_token": token}).status_code == 403
    assert typed_client(app).post(url, data={"action": "confirm", "csrf_token": ""}).status_code == 403
    assert typed_client(app).post("/login", data={"key": keys.reader}).status_code == 403
    assert svc.head("default") == before
    # A page is only read: a GET carries no token and needs none.
    assert mine.get(f"/ns/default/memories/{mid}").status_code == 200


def test_a_reader_sees_no_write_buttons_and_cannot_post(client: Client, keys: Keys, svc: MemoryService,
                                                        remember: Callable[..., str]) -> None:
    mid = remember("CI runs on every push")
    token = signed_in(client, keys.reader)
    page = client.get(f"/ns/default/memories/{mid}").get_data(as_text=True)
    assert "Confirm" not in page and "Revert" not in page
    before = svc.status("default")["head"]
    refused = client.post(f"/ns/default/memories/{mid}/feedback", data={"action": "confirm", "csrf_token": token})
    assert refused.status_code == 403
    assert svc.status("default")["head"] == before


def test_revoked_key_signs_the_session_out(client: Client, keys: Keys, svc: MemoryService) -> None:
    from gitmem.repo import KeyStore

    signed_in(client, keys.reader)
    store = KeyStore(svc.settings.home)
    [reader] = [k for k in store.list() if k.name == "reader"]
    store.revoke(reader.id)
    response = client.get("/ns/default/")
    assert response.status_code == 302 and "/login" in response.headers["Location"]


# Targets a browser would take to another site: it drops tabs and line breaks, trims spaces and
# reads a backslash as a slash.
OFFSITE = ["/\t/evil.example/x", "/\n/evil.example", "/\r\n/evil.example", "/\\evil.example",
           "/\\/evil.example", "\\\\evil.example", "//evil.example", " //evil.example",
           "/ /evil.example", "https://evil.example/", "javascript:alert(1)", "/\x00/evil.example",
           "/\u2028/evil.example", "/\u200b/evil.example", "evil.example"]


@pytest.mark.parametrize("target", OFFSITE)
def test_sign_in_never_redirects_to_another_site(client: Client, keys: Keys, target: str) -> None:
    form = client.get("/login", query_string={"next": target}).get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert token is not None
    assert 'name="next" value="/"' in form
    response = client.post("/login", data={"key": keys.reader, "csrf_token": token.group(1), "next": target})
    assert response.status_code == 303
    assert response.headers["Location"] == "/"


def test_sign_in_with_a_tab_in_next_over_http(live_server: str, keys: Keys) -> None:
    # The report: /login?next=/%09/evil.example/x answered "Location: //evil.example/x".
    with httpx.Client(base_url=live_server) as http:
        form = http.get("/login?next=/%09/evil.example/x").text
        token = re.search(r'name="csrf_token" value="([^"]+)"', form)
        assert token is not None
        response = http.post("/login?next=/%09/evil.example/x",
                             data={"key": keys.reader, "csrf_token": token.group(1)})
    assert response.status_code == 303
    assert response.headers["Location"] == "/"


def test_sign_in_returns_to_a_page_of_this_site(client: Client, keys: Keys) -> None:
    form = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert token is not None
    target = "/ns/default/search?q=deploy&path=src/app.py"
    response = client.post("/login", data={"key": keys.reader, "csrf_token": token.group(1), "next": target})
    assert response.headers["Location"] == target


@pytest.mark.parametrize("target", OFFSITE[:6])
def test_revert_form_never_redirects_to_another_site(client: Client, keys: Keys, svc: MemoryService,
                                                     remember: Callable[..., str], target: str) -> None:
    remember("Tabs, not spaces")
    commit = svc.log("default", limit=1)[0].id
    token = signed_in(client, keys.reviewer)
    response = client.post(f"/ns/default/commits/{commit}/revert", data={"csrf_token": token, "back": target})
    assert response.status_code == 303
    assert response.headers["Location"] == "/ns/default/"
    assert svc.log("default", limit=1)[0].action == "revert"


def test_logout_ends_the_session(client: Client, keys: Keys, svc: MemoryService,
                                 remember: Callable[..., str]) -> None:
    mid = remember("Sessions end on sign-out")
    token = signed_in(client, keys.writer)
    forged = client.post("/logout", data={"csrf_token": "guess"})
    assert forged.status_code == 403
    assert client.get("/ns/default/").status_code == 200, "a forged sign-out changes nothing"

    out = client.post("/logout", data={"csrf_token": token})
    assert out.status_code == 303 and out.headers["Location"] == "/login"
    again = client.get("/ns/default/")
    assert again.status_code == 302 and "/login" in again.headers["Location"]
    before = svc.status("default")["head"]
    stale = client.post(f"/ns/default/memories/{mid}/feedback", data={"action": "confirm", "csrf_token": token})
    assert stale.status_code == 403, "the old form token went with the session"
    assert svc.status("default")["head"] == before


def sign_in_over_http(http: httpx.Client, key: str) -> str:
    """Sign ``http`` in through the form over real HTTP; returns the session's CSRF token."""
    form = http.get("/login").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert token is not None
    assert http.post("/login", data={"key": key, "csrf_token": token.group(1), "next": "/"}).status_code == 303
    page = re.search(r'name="csrf_token" value="([^"]+)"', http.get("/ns/default/").text)
    assert page is not None
    return page.group(1)


def test_a_copied_session_cookie_dies_with_the_sign_out(live_server: str, keys: Keys, svc: MemoryService,
                                                         remember: Callable[..., str]) -> None:
    mid = remember("Sessions end on sign-out, every copy of them")
    with httpx.Client(base_url=live_server) as laptop, httpx.Client(base_url=live_server) as phone:
        token = sign_in_over_http(laptop, keys.writer)
        sign_in_over_http(phone, keys.writer)  # the same key, another session
        copied = laptop.cookies["gitmem_session"]
        out = laptop.post("/logout", data={"csrf_token": token})
        assert out.status_code == 303 and out.headers["Location"] == "/login"

        with httpx.Client(base_url=live_server, cookies={"gitmem_session": copied}) as thief:
            for path in ("/ns/default/", "/"):
                stolen = thief.get(path)
                assert stolen.status_code == 302 and stolen.headers["Location"].startswith("/login"), path
            # A form posted with it changes nothing either (the copy carries its CSRF token too).
            before = svc.head("default")
            posted = thief.post(f"/ns/default/memories/{mid}/feedback", data={"action": "confirm",
                                                                            "csrf_token": token})
            assert posted.status_code in (302, 403) and svc.head("default") == before
        # Signing out of one session leaves the others of the key alone.
        assert phone.get("/ns/default/").status_code == 200
