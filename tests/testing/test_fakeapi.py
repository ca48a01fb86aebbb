"""The fake Messages API, exercised through the real ``anthropic`` client."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from dexai_memory.demo.fakeapi import (
    DEFAULT_COMPACTION_SUMMARY,
    FakeMessagesAPI,
    Reply,
    ToolUse,
    is_compaction_prompt,
    last_user_text,
    text_of,
    texts_of,
)

MODEL = "claude-haiku-4-5"


@pytest.fixture
def api() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as server:
        yield server


@pytest.fixture
def client(api: FakeMessagesAPI) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=api.base_url, api_key="sk-test", max_retries=0) as c:
        yield c


def _user(text: str) -> Any:
    return [{"role": "user", "content": text}]


# --------------------------------------------------------------------------- sync


def test_default_reply_non_streaming(api: FakeMessagesAPI, client: anthropic.Anthropic) -> None:
    msg = client.messages.create(
        model=MODEL, max_tokens=64, system="Be brief.", messages=_user("hello there")
    )
    assert msg.content[0].type == "text"
    assert msg.content[0].text == "OK."
    assert msg.stop_reason == "end_turn"
    assert msg.model == MODEL
    assert msg.usage.input_tokens > 0 and msg.usage.output_tokens > 0

    [req] = api.message_requests()
    assert req.method == "POST" and req.path == "/v1/messages"
    assert req.api_key == "sk-test"
    assert req.headers["anthropic-version"]
    assert req.body["max_tokens"] == 64
    assert texts_of(req) == ["Be brief.", "hello there"]


def test_queue_is_consumed_in_order_then_default(
    api: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    api.enqueue(Reply(text="first"), Reply(text="second", input_tokens=90_000, output_tokens=7))
    texts = []
    for _ in range(3):
        msg = client.messages.create(model=MODEL, max_tokens=10, messages=_user("x"))
        texts.append(msg.content[0].text)  # type: ignore[union-attr]
        if msg.content[0].text == "second":  # type: ignore[union-attr]
            assert msg.usage.input_tokens == 90_000
            assert msg.usage.output_tokens == 7
    assert texts == ["first", "second", "OK."]
    assert api.pending == 0


def test_streaming_text_and_tool_use(api: FakeMessagesAPI, client: anthropic.Anthropic) -> None:
    api.enqueue(
        Reply(
            text="Saving that now, with a reasonably long sentence to split into deltas.",
            tool_uses=[
                ToolUse("remember", {"fact": "PINEAPPLE", "tags": ["a", "b"]}, id="toolu_1")
            ],
        )
    )
    deltas: list[str] = []
    with client.messages.stream(model=MODEL, max_tokens=100, messages=_user("save it")) as stream:
        for delta in stream.text_stream:
            deltas.append(delta)
        final = stream.get_final_message()
    assert len(deltas) > 1
    assert "".join(deltas).startswith("Saving that now")
    assert [b.type for b in final.content] == ["text", "tool_use"]
    tool = final.content[1]
    assert tool.type == "tool_use"
    assert tool.id == "toolu_1" and tool.name == "remember"
    assert tool.input == {"fact": "PINEAPPLE", "tags": ["a", "b"]}
    assert final.stop_reason == "tool_use"
    assert api.message_requests()[0].body["stream"] is True


def test_raw_sse_event_sequence(api: FakeMessagesAPI, client: anthropic.Anthropic) -> None:
    api.enqueue(Reply(text="hi", tool_uses=[ToolUse("t", {"a": 1})], input_tokens=123))
    events = list(
        client.messages.create(model=MODEL, max_tokens=10, messages=_user("x"), stream=True)
    )
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert kinds[-2] == "message_delta"
    assert kinds.count("content_block_start") == 2 == kinds.count("content_block_stop")
    assert events[0].message.usage.input_tokens == 123  # type: ignore[union-attr]
    delta = events[-2]
    assert delta.delta.stop_reason == "tool_use"  # type: ignore[union-attr]
    json_parts = [
        e.delta.partial_json  # type: ignore[union-attr]
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
    ]
    assert json.loads("".join(json_parts)) == {"a": 1}


def test_tool_result_and_system_role_texts(api: FakeMessagesAPI) -> None:
    body = {
        "system": [{"type": "text", "text": "SYS"}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "U1"}]},
            {"role": "system", "content": "SessionStart hook additional context: FACT"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "RESULT"}],
                    }
                ],
            },
            {"role": "system", "content": [{"type": "text", "text": "late system"}]},
        ],
    }
    assert texts_of(body) == [
        "SYS",
        "U1",
        "SessionStart hook additional context: FACT",
        "RESULT",
        "late system",
    ]
    assert "FACT" in text_of(body)
    # role:system entries are ignored when looking for the last user turn
    assert last_user_text(body) == "RESULT"


def test_responder_rules_and_conditional_queue(
    api: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    def rules(body: dict[str, Any]) -> Reply | None:
        if "weather" in last_user_text(body):
            return Reply(text="sunny")
        return None

    api.responder = rules
    api.enqueue(Reply(text="for extraction"), when=lambda b: b.get("model") == "claude-special")

    def ask(text: str, model: str = MODEL) -> str:
        msg = client.messages.create(model=model, max_tokens=10, messages=_user(text))
        return msg.content[0].text  # type: ignore[union-attr]

    assert ask("what's the weather") == "sunny"
    assert ask("other") == "OK."  # queued entry does not match this model
    assert api.pending == 1
    assert ask("extract", model="claude-special") == "for extraction"

    def broken(body: dict[str, Any]) -> Reply | None:
        raise KeyError("oops")

    api.responder = broken
    with pytest.raises(anthropic.InternalServerError, match="fake responder failed"):
        ask("anything")


def test_compaction_prompt_default_answer(
    api: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    prompt = (
        "Your task is to create a detailed summary of the conversation so far. "
        "Wrap your analysis in <analysis> tags, then write the <summary>."
    )
    messages = [
        {"role": "user", "content": "remember PINEAPPLE"},
        {"role": "assistant", "content": "OK."},
        {"role": "user", "content": prompt},
        {"role": "system", "content": "env info"},  # the CLI puts these after user turns
    ]
    assert is_compaction_prompt({"messages": messages})
    text = client.messages.create(model=MODEL, max_tokens=10, messages=messages).content[0].text  # type: ignore[union-attr,arg-type]
    assert "<analysis>" in text and f"<summary>\n{DEFAULT_COMPACTION_SUMMARY}\n</summary>" in text

    api.compaction_summary = "KEEP: the code word is PINEAPPLE"
    text = client.messages.create(model=MODEL, max_tokens=10, messages=messages).content[0].text  # type: ignore[union-attr,arg-type]
    assert "<summary>\nKEEP: the code word is PINEAPPLE\n</summary>" in text


def test_count_tokens(api: FakeMessagesAPI, client: anthropic.Anthropic) -> None:
    count = client.messages.count_tokens(model=MODEL, messages=_user("x" * 400))
    assert count.input_tokens == 100
    assert api.requests[-1].path == "/v1/messages/count_tokens"
    assert api.message_requests() == []


def test_beta_query_and_unknown_paths(api: FakeMessagesAPI, client: anthropic.Anthropic) -> None:
    client.beta.messages.create(model=MODEL, max_tokens=10, messages=_user("x"), betas=["b-1"])
    assert api.message_requests()[-1].betas == ["b-1"]

    # Claude Code posts to /v1/messages?beta=true
    beta_request = urllib.request.Request(
        f"{api.base_url}/v1/messages?beta=true",
        data=json.dumps({"model": MODEL, "max_tokens": 5, "messages": _user("q")}).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(beta_request, timeout=5) as response:
        assert json.loads(response.read())["content"] == [{"type": "text", "text": "OK."}]
    assert api.message_requests()[-1].query == {"beta": ["true"]}

    with pytest.raises(anthropic.NotFoundError) as info:
        client.models.list()
    assert info.value.status_code == 404
    assert info.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]

    request = urllib.request.Request(f"{api.base_url}/v1/nothing", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as http_info:
        urllib.request.urlopen(request, timeout=5)
    with http_info.value as response:
        payload = json.loads(response.read())
    assert payload["type"] == "error" and payload["error"]["type"] == "not_found_error"


# --------------------------------------------------------------------------- errors


def test_overloaded_is_retried_by_client(api: FakeMessagesAPI) -> None:
    api.enqueue(
        Reply(status=529, headers={"retry-after-ms": "10"}),
        Reply(status=500, headers={"retry-after-ms": "10"}),
        Reply(text="finally"),
    )
    with anthropic.Anthropic(base_url=api.base_url, api_key="k", max_retries=3) as c:
        msg = c.messages.create(model=MODEL, max_tokens=10, messages=_user("x"))
    assert msg.content[0].text == "finally"  # type: ignore[union-attr]
    retry_counts = [r.headers.get("x-stainless-retry-count") for r in api.message_requests()]
    assert retry_counts == ["0", "1", "2"]


def test_error_surfaces_without_retries(api: FakeMessagesAPI, client: anthropic.Anthropic) -> None:
    api.enqueue(Reply(status=529, error_message="Overloaded right now"))
    with pytest.raises(anthropic.APIStatusError) as info:
        client.messages.create(model=MODEL, max_tokens=10, messages=_user("x"))
    assert info.value.status_code == 529
    assert info.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded right now"},
        "request_id": info.value.body["request_id"],  # type: ignore[index]
    }

    api.enqueue(Reply(status=400, error_type="invalid_request_error", error_message="bad"))
    with pytest.raises(anthropic.BadRequestError, match="bad"):
        client.messages.create(model=MODEL, max_tokens=10, messages=_user("x"))


def test_malformed_raw_body(api: FakeMessagesAPI, client: anthropic.Anthropic) -> None:
    api.enqueue(Reply(raw_body='{"id": "msg_x", "type": "message"'))  # truncated JSON
    with pytest.raises(json.JSONDecodeError):
        client.messages.create(model=MODEL, max_tokens=10, messages=_user("x"))

    api.enqueue(Reply(raw_body='event: message_start\ndata: {"type": "message_start"\n\n'))
    with pytest.raises(json.JSONDecodeError):
        list(client.messages.create(model=MODEL, max_tokens=10, messages=_user("x"), stream=True))


def test_timeout_via_delay(api: FakeMessagesAPI) -> None:
    api.enqueue(Reply(text="late", delay=1.0))
    with anthropic.Anthropic(base_url=api.base_url, api_key="k", max_retries=0, timeout=0.2) as c:
        with pytest.raises(anthropic.APITimeoutError):
            c.messages.create(model=MODEL, max_tokens=10, messages=_user("x"))


# --------------------------------------------------------------------------- server-side compaction

COMPACT_BETA = "compact-2026-01-12"


def _compact_edit(pause: bool) -> Any:
    return {"edits": [{"type": "compact_20260112", "pause_after_compaction": pause}]}


def test_server_side_compaction_pause(api: FakeMessagesAPI, client: anthropic.Anthropic) -> None:
    api.enqueue(Reply(compaction=True, compaction_content="Summary: code word PINEAPPLE"))
    msg = client.beta.messages.create(
        model=MODEL,
        max_tokens=100,
        betas=[COMPACT_BETA],
        context_management=_compact_edit(pause=True),
        messages=_user("long conversation"),
    )
    assert msg.stop_reason == "compaction"
    [block] = msg.content
    assert block.type == "compaction"
    assert block.content == "Summary: code word PINEAPPLE"  # type: ignore[union-attr]
    assert api.message_requests()[-1].betas == [COMPACT_BETA]


def test_server_side_compaction_without_pause_continues(
    api: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    api.enqueue(Reply(text="answer after compaction", compaction=True))
    msg = client.beta.messages.create(
        model=MODEL,
        max_tokens=100,
        betas=[COMPACT_BETA],
        context_management=_compact_edit(pause=False),
        messages=_user("go on"),
    )
    assert [b.type for b in msg.content] == ["compaction", "text"]
    assert msg.content[0].content == DEFAULT_COMPACTION_SUMMARY  # type: ignore[union-attr]
    assert msg.stop_reason == "end_turn"


def test_server_side_compaction_streaming(
    api: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    api.enqueue(Reply(compaction=True, compaction_content="streamed summary"))
    with client.beta.messages.stream(
        model=MODEL,
        max_tokens=100,
        betas=[COMPACT_BETA],
        context_management=_compact_edit(pause=True),
        messages=_user("x"),
    ) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "compaction"
    assert final.content[0].type == "compaction"
    assert final.content[0].content == "streamed summary"  # type: ignore[union-attr]


def test_compaction_trigger_and_summarize_param_defaults(
    api: FakeMessagesAPI, client: anthropic.Anthropic
) -> None:
    # a compact edit whose trigger is below the request size compacts by default
    edit: Any = {
        "edits": [
            {
                "type": "compact_20260112",
                "pause_after_compaction": True,
                "trigger": {"type": "input_tokens", "value": 50},
            }
        ]
    }
    big = client.beta.messages.create(
        model=MODEL,
        max_tokens=10,
        betas=[COMPACT_BETA],
        context_management=edit,
        messages=_user("word " * 400),
    )
    assert big.stop_reason == "compaction"
    small = client.beta.messages.create(
        model=MODEL,
        max_tokens=10,
        betas=[COMPACT_BETA],
        context_management=edit,
        messages=_user("tiny"),
    )
    assert small.stop_reason == "end_turn" and small.content[0].type == "text"

    # the top-level `compaction` parameter always yields just the compaction block
    api.compaction_summary = "summarized"
    only = client.beta.messages.create(
        model=MODEL, max_tokens=10, compaction={"type": "summarize"}, messages=_user("x")
    )
    assert only.stop_reason == "compaction"
    assert [(b.type, b.content) for b in only.content] == [("compaction", "summarized")]  # type: ignore[union-attr]


# --------------------------------------------------------------------------- async + concurrency


async def test_async_client_create_and_stream(api: FakeMessagesAPI) -> None:
    api.enqueue(Reply(text="async one"), Reply(tool_uses=[ToolUse("search", {"q": "x"})]))
    async with anthropic.AsyncAnthropic(base_url=api.base_url, api_key="k", max_retries=0) as c:
        msg = await c.messages.create(model=MODEL, max_tokens=10, messages=_user("a"))
        assert msg.content[0].text == "async one"  # type: ignore[union-attr]
        async with c.messages.stream(model=MODEL, max_tokens=10, messages=_user("b")) as stream:
            final = await stream.get_final_message()
    assert final.stop_reason == "tool_use"
    assert final.content[0].type == "tool_use" and final.content[0].input == {"q": "x"}  # type: ignore[union-attr]
    assert final.content[0].id.startswith("toolu_")  # type: ignore[union-attr]


async def test_async_retry_on_overload(api: FakeMessagesAPI) -> None:
    api.enqueue(Reply(status=529, headers={"retry-after-ms": "5"}), Reply(text="recovered"))
    async with anthropic.AsyncAnthropic(base_url=api.base_url, api_key="k", max_retries=2) as c:
        msg = await c.messages.create(model=MODEL, max_tokens=10, messages=_user("x"))
    assert msg.content[0].text == "recovered"  # type: ignore[union-attr]
    assert len(api.message_requests()) == 2


def test_concurrent_requests_are_all_recorded(api: FakeMessagesAPI) -> None:
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            with anthropic.Anthropic(base_url=api.base_url, api_key="k", max_retries=0) as c:
                c.messages.create(model=MODEL, max_tokens=5, messages=_user(f"req-{i}"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    seen = sorted(last_user_text(r.body) for r in api.wait_for(lambda rs: len(rs) >= 12))
    assert seen == sorted(f"req-{i}" for i in range(12))


def test_start_stop_and_port_reuse() -> None:
    api = FakeMessagesAPI().start()
    url = api.base_url
    assert url.startswith("http://127.0.0.1:")
    api.stop()
    with pytest.raises(RuntimeError):
        _ = api.base_url
    with pytest.raises(TimeoutError):
        FakeMessagesAPI().wait_for(lambda rs: bool(rs), timeout=0.05)
