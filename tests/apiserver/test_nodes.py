"""Node CRUD and LIST on the fake API server, compared with recorded kube-apiserver answers."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client

from routectl_sim.apiserver import ApiError, FakeApiServer
from tests.apiserver.harness import (
    SEED_FIXTURES,
    TOKEN,
    recorded,
    replay,
    request_body,
    response_body,
    same_json,
    seed_cluster,
    status_of,
)

pytestmark = [pytest.mark.integration, pytest.mark.looptime]


@pytest.fixture
async def server() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer(token=TOKEN) as fake:
        yield fake


@pytest.mark.parametrize("name", SEED_FIXTURES)
async def test_create_matches_recorded_object(server, session, name):
    """POST of a recorded Node answers 201 with the recorded object (taint, podCIDRs, status)."""
    status, headers, body = await replay(session, server, name)
    expected = recorded(name)["response"]
    assert status == expected["status"] == 201
    assert same_json(body, expected["body"])
    assert headers.get("Warning") == expected["headers"].get("Warning")


@pytest.mark.parametrize(
    "name",
    [
        "82-node-create-invalid-name-422",
        "82-node-create-two-ipv4-podcidrs-422",
        "82-node-create-malformed-json-400",
        "82-node-create-podcidr-differs-from-podcidrs0",
    ],
)
async def test_create_validation_matches_recording(server, session, name):
    """Invalid names, CIDR rules and broken JSON get the recorded code and exact body."""
    status, _, body = await replay(session, server, name)
    expected = recorded(name)["response"]
    assert status == expected["status"]
    assert same_json(body, expected["body"])


async def test_create_duplicate_is_already_exists(server, session):
    """A second POST of the same name is 409 AlreadyExists with the recorded Status."""
    seed_cluster(server)
    status, _, body = await replay(session, server, "01-node-create-duplicate-409")
    assert status == 409
    assert body == response_body("01-node-create-duplicate-409")


async def test_get_has_kind_and_matches_recording(server, session):
    """GET of a Node returns it with kind/apiVersion, as recorded."""
    seed_cluster(server)
    status, headers, body = await replay(session, server, "06-node-get")
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert headers["Cache-Control"] == "no-cache, private"
    assert same_json(body, response_body("06-node-get"))


@pytest.mark.parametrize(
    "name",
    [
        "06-node-get-missing-404",
        "90-node-delete-missing-404",
        "23-node-merge-patch-missing-node-404",
    ],
)
async def test_missing_node_is_not_found(server, session, name):
    """GET, DELETE and PATCH of a missing Node answer the recorded 404 Status exactly."""
    status, _, body = await replay(session, server, name)
    assert status == 404
    assert body == response_body(name)


async def test_list_matches_recording(server, session):
    """LIST is a NodeList of items without kind/apiVersion, sorted by name."""
    seed_cluster(server)
    status, _, body = await replay(session, server, "02-node-list")
    assert status == 200
    assert same_json(body, response_body("02-node-list"))
    assert "kind" not in body["items"][0]
    assert body["metadata"]["resourceVersion"] == str(server.resource_version)


async def test_list_pages_keep_one_resource_version(server, session):
    """``limit=2`` pages carry remainingItemCount and a continue token at one fixed RV."""
    seed_cluster(server)
    list_rv = str(server.resource_version)
    token = ""
    for page in ("page1", "page2", "page3", "page4-last"):
        name = f"03-node-list-limit2-{page}"
        path = "/api/v1/nodes?limit=2" + (f"&continue={token}" if token else "")
        status, _, body = await replay(session, server, name, path=path)
        expected = response_body(name)
        assert status == 200
        assert same_json(body, expected)
        assert body["metadata"]["resourceVersion"] == list_rv
        assert body["metadata"].get("remainingItemCount") == expected["metadata"].get(
            "remainingItemCount"
        )
        token = body["metadata"].get("continue", "")
        server.patch_node("my-node", {"metadata": {"labels": {"page": page}}})
    assert token == ""


async def test_continue_token_has_kube_apiserver_format(server, session):
    """The continue token is unpadded base64url JSON with v, rv and the next start key."""
    seed_cluster(server)
    _, _, body = await replay(session, server, "03-node-list-limit2-page1")
    token = body["metadata"]["continue"]
    decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    recorded_token = response_body("03-node-list-limit2-page1")["metadata"]["continue"]
    expected = json.loads(
        base64.urlsafe_b64decode(recorded_token + "=" * (-len(recorded_token) % 4))
    )
    assert "=" not in token
    assert decoded == {**expected, "rv": server.resource_version}


@pytest.mark.parametrize("name", ["04-node-list-rv0", "04-node-list-rv0-limit2"])
async def test_list_at_resource_version_zero_ignores_limit(server, session, name):
    """``resourceVersion=0`` lists everything, even with ``limit``, and sends no continue."""
    seed_cluster(server)
    status, _, body = await replay(session, server, name)
    assert status == 200
    assert same_json(body, response_body(name))
    assert "continue" not in body["metadata"]


@pytest.mark.parametrize(
    "name", ["05-node-list-fieldselector-name", "05-node-list-labelselector-exists"]
)
async def test_list_selectors_match_recording(server, session, name):
    """Field (metadata.name) and label (exists) selectors select the recorded items."""
    seed_cluster(server)
    status, _, body = await replay(session, server, name)
    assert status == 200
    assert same_json(body, response_body(name))


async def test_unsupported_field_selector_is_bad_request(server, core):
    """A field label Nodes do not index is refused with 400 ``field label not supported``."""
    with pytest.raises(client.ApiException) as caught:
        await core.list_node(field_selector="status.phase=Running")
    assert caught.value.status == 400
    body = status_of(caught.value)
    assert body["reason"] == "BadRequest"
    assert body["message"] == "field label not supported: status.phase"


async def test_paged_list_with_selector_has_no_remaining_count(server, core):
    """With a selector, pages carry continue but never remainingItemCount."""
    seed_cluster(server)
    response = await core.list_node(
        label_selector="node-role.kubernetes.io/master", limit=2, _preload_content=False
    )
    body = await response.json()
    assert len(body["items"]) == 2
    assert "continue" in body["metadata"]
    assert "remainingItemCount" not in body["metadata"]


async def test_spec_unschedulable_field_selector(server, core):
    """``spec.unschedulable=true`` selects cordoned Nodes only."""
    seed_cluster(server)
    server.patch_node("my-node", {"spec": {"unschedulable": True}})
    response = await core.list_node(
        field_selector="spec.unschedulable=true", _preload_content=False
    )
    body = await response.json()
    assert [item["metadata"]["name"] for item in body["items"]] == ["my-node"]


async def test_list_options_validation_is_unprocessable(server, core):
    """``resourceVersionMatch`` without ``resourceVersion`` is a 422 on ListOptions."""
    with pytest.raises(client.ApiException) as caught:
        await core.list_node(resource_version_match="NotOlderThan")
    body = status_of(caught.value)
    assert caught.value.status == 422
    assert body["details"] == {
        "group": "meta.k8s.io",
        "kind": "ListOptions",
        "causes": [
            {
                "reason": "FieldValueForbidden",
                "message": "Forbidden: resourceVersionMatch is forbidden unless resourceVersion "
                "is provided",
                "field": "resourceVersionMatch",
            }
        ],
    }


async def test_exact_list_at_old_resource_version_is_served_from_history(server, core):
    """An Exact LIST at an older RV returns the state of that moment (empty at RV 0+)."""
    server.create_node({"metadata": {"name": "a"}})
    first = server.resource_version
    server.create_node({"metadata": {"name": "b"}})
    response = await core.list_node(
        resource_version=str(first), resource_version_match="Exact", _preload_content=False
    )
    body = await response.json()
    assert body["metadata"]["resourceVersion"] == str(first)
    assert [item["metadata"]["name"] for item in body["items"]] == ["a"]


@pytest.mark.parametrize(
    "name", ["77-list-nodes-exact-rv-1-410", "77-list-nodes-exact-compacted-rv-259-410"]
)
async def test_exact_list_before_history_is_gone(server, session, name):
    """After compaction an Exact LIST at an old RV is HTTP 410 with the recorded Status."""
    seed_cluster(server)
    server.patch_node("my-node", {"metadata": {"labels": {"after": "seed"}}})
    server.expire_history()
    path = recorded(name)["request"]["path_and_query"].replace("=259", "=3")
    status, _, body = await replay(session, server, name, path=path)
    assert status == 410
    assert body == response_body(name)


async def test_exact_list_before_any_node_is_empty(server, session):
    """An Exact LIST at an RV from before any Node existed is an empty list at that RV."""
    server.create_lease({"metadata": {"name": "first", "namespace": "default"}, "spec": {}})
    seed_cluster(server)
    name = "72-list-nodes-exact-rv-1-after-compaction-served-from-cache"
    status, _, body = await replay(session, server, name)
    assert status == 200
    assert body == response_body(name)


@pytest.mark.parametrize(
    "name",
    [
        "74-list-nodes-rv1-notolderthan-after-compaction",
        "79-list-nodes-rv259-notolderthan-after-restart",
    ],
)
async def test_not_older_than_list_after_compaction_is_current(server, session, name):
    """A LIST at an old RV without ``Exact`` is served at the current RV, even after compaction."""
    seed_cluster(server)
    server.expire_history()
    path = recorded(name)["request"]["path_and_query"].replace("=259", "=3")
    status, _, body = await replay(session, server, name, path=path)
    expected = response_body(name)
    assert status == 200
    assert body["metadata"] == {"resourceVersion": str(server.resource_version)}
    assert [i["metadata"]["name"] for i in body["items"]] == [
        i["metadata"]["name"] for i in expected["items"]
    ]


async def test_expired_continue_token_offers_a_fresh_one(server, session):
    """An expired continue token is 410 with a new ``rv: -1`` token that resumes the list."""
    seed_cluster(server)
    _, _, first = await replay(session, server, "03-node-list-limit2-page1")
    server.patch_node("my-node", {"metadata": {"labels": {"later": "write"}}})
    server.expire_history()
    name = "78-list-nodes-continue-token-rv216-after-compaction-410"
    path = f"/api/v1/nodes?limit=2&continue={first['metadata']['continue']}"
    status, _, body = await replay(session, server, name, path=path)
    assert status == 410
    assert same_json(body, response_body(name))
    fresh = body["metadata"]["continue"]
    decoded = json.loads(base64.urlsafe_b64decode(fresh + "=" * (-len(fresh) % 4)))
    assert decoded == {
        "v": "meta.k8s.io/v1",
        "rv": -1,
        "start": "gke-gar-1-pool-1-dce25db1-2mm5\u0000",
    }
    _, _, rest = await replay(session, server, name, path=f"/api/v1/nodes?limit=2&continue={fresh}")
    assert [i["metadata"]["name"] for i in rest["items"]] == [
        "ip-10-0-10-170.ec2.internal",
        "ip-10-0-132-92.us-west-1.compute.internal",
    ]


async def test_future_resource_version_waits_then_times_out(server, session, looptime):
    """A LIST at a future RV waits 3 s of loop time, then 504 with ``Retry-After: 1``."""
    seed_cluster(server)
    name = "75-list-nodes-future-rv-504-too-large"
    target = server.resource_version + 100000
    path = f"/api/v1/nodes?resourceVersion={target}&resourceVersionMatch=NotOlderThan"
    status, headers, body = await replay(session, server, name, path=path)
    assert status == 504
    assert headers["Retry-After"] == "1"
    assert same_json(body, response_body(name))
    assert looptime == pytest.approx(3, abs=0.1)


async def test_get_without_accept_header_is_json(server, session):
    """A GET without ``Accept`` is answered in JSON, as recorded."""
    seed_cluster(server)
    name = "81-get-node-no-accept-header"
    status, headers, body = await replay(session, server, name)
    expected = response_body(name)
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert list(body) == list(expected) == ["kind", "apiVersion", "metadata", "spec", "status"]
    assert body["metadata"]["name"] == expected["metadata"]["name"]


async def test_get_with_text_plain_accept_is_not_acceptable(server, session):
    """``Accept: text/plain`` gets the recorded 406 Status, without the trailing newline."""
    seed_cluster(server)
    name = "81-get-node-accept-text-plain-406"
    async with session.get(
        server.url + recorded(name)["request"]["path_and_query"],
        headers={"Accept": "text/plain", "Authorization": f"Bearer {TOKEN}"},
    ) as response:
        raw = await response.read()
    assert response.status == 406
    assert not raw.endswith(b"\n")
    assert json.loads(raw) == response_body(name)


async def test_delete_without_finalizers_returns_status(server, session):
    """DELETE of a Node without finalizers answers Status Success with name, kind and uid."""
    created = server.create_node(request_body("12-watch-step1-node-create"))
    status, _, body = await replay(session, server, "12-watch-step4-node-delete")
    assert status == 200
    assert same_json(body, response_body("12-watch-step4-node-delete"))
    assert body["details"]["uid"] == created["metadata"]["uid"]
    with pytest.raises(ApiError):
        server.get_node("watch-node-1")


async def test_delete_with_finalizers_only_marks_the_node(server, session):
    """With finalizers DELETE returns the marked object; removing them completes the delete."""
    seed_cluster(server)
    status, _, marked = await replay(session, server, "90-node-delete-with-finalizers")
    assert status == 200
    assert same_json(marked, response_body("90-node-delete-with-finalizers"))
    rv = marked["metadata"]["resourceVersion"]
    _, _, again = await replay(session, server, "90-node-delete-with-finalizers-again")
    assert again["metadata"]["resourceVersion"] == rv
    name = "90-node-remove-finalizers-completes-delete"
    status, _, last = await replay(session, server, name)
    assert status == 200
    assert same_json(last, response_body(name))
    assert last["metadata"]["resourceVersion"] == rv
    assert server.resource_version == int(rv) + 1
    with pytest.raises(ApiError) as caught:
        server.get_node("omen-omen-25l-desktop-gt12-0xxx")
    assert caught.value.code == 404


async def test_replace_keeps_status_and_resource_version_when_unchanged(server, core):
    """PUT of an unchanged Node keeps its RV; a PUT's status changes are ignored."""
    seed_cluster(server)
    node = server.get_node("my-node")
    same = server.replace_node(node)
    assert same["metadata"]["resourceVersion"] == node["metadata"]["resourceVersion"]
    node["status"]["conditions"] = []
    node["metadata"]["labels"]["x"] = "y"
    response = await core.replace_node("my-node", node, _preload_content=False)
    body = await response.json()
    assert body["metadata"]["labels"]["x"] == "y"
    assert len(body["status"]["conditions"]) == 5
    assert int(body["metadata"]["resourceVersion"]) > int(node["metadata"]["resourceVersion"])


async def test_stale_resource_version_in_update_is_conflict(server):
    """PUT or PATCH with a stale ``metadata.resourceVersion`` is 409 Conflict."""
    seed_cluster(server)
    node = server.get_node("my-node")
    server.patch_node("my-node", {"metadata": {"labels": {"a": "b"}}})
    with pytest.raises(ApiError) as caught:
        server.replace_node(node)
    assert caught.value.code == 409
    assert caught.value.status["message"] == (
        'Operation cannot be fulfilled on nodes "my-node": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


async def test_pod_cidr_cannot_change_once_set(server):
    """An update may not change ``spec.podCIDRs`` once set (422 Forbidden)."""
    seed_cluster(server)
    with pytest.raises(ApiError) as caught:
        server.patch_node(
            "my-node", {"spec": {"podCIDR": "10.99.0.0/24", "podCIDRs": ["10.99.0.0/24"]}}
        )
    assert caught.value.code == 422
    assert caught.value.status["details"]["causes"][0] == {
        "reason": "FieldValueForbidden",
        "message": 'Forbidden: node updates may not change podCIDR except from "" to valid',
        "field": "spec.podCIDRs",
    }


async def test_max_list_chunk_forces_pagination():
    """With ``max_list_chunk`` even a LIST without ``limit`` is cut into continued pages."""
    async with FakeApiServer(max_list_chunk=3) as fake:
        seed_cluster(fake)
        config = client.Configuration()
        config.host = fake.url
        async with client.ApiClient(config) as api:
            core = client.CoreV1Api(api)
            first = await core.list_node()
            rest = await core.list_node(_continue=first.metadata._continue)
            everything = await core.list_node(resource_version="0")
    assert len(first.items) == 3
    assert first.metadata.remaining_item_count == 4
    assert len(rest.items) == 3
    assert len(everything.items) == 7
