"""The Anthropic Messages side of bench/scripted_server.py (standard library only).

`POST /v1/messages` gets the cache scenario's script like `/v1/chat/completions`, answered in
the Messages format (one `message` body, or its event stream). Beside the identical-prefix
count the chat side keeps, it simulates Anthropic's prompt cache as the API documents it:

  - the prompt is a sequence of blocks in the order the cache reads them — the tools, the
    `system` blocks, then each message's content blocks (role included);
  - a block marked `cache_control` is a breakpoint: the request writes the prefix that ends
    there to the cache;
  - a breakpoint reads the longest prefix, ending at it or at one of the 20 block boundaries
    before it, that an earlier request of the run wrote.

The cached bytes are what the request reads from the cache (`cache_read_input_tokens` =
bytes // 4), the written bytes what it adds after them up to its last breakpoint
(`cache_creation_input_tokens`), and `input_tokens` the rest.
"""

import hashlib
import json
import math

# How many block boundaries before a breakpoint Anthropic checks for a cache hit.
LOOKBACK = 20


def blocks(request):
    """The prompt's blocks in cache order, each as (its bytes without `cache_control`,
    whether it is a breakpoint)."""
    out = []

    def add(block, role=None):
        block = dict(block)
        marked = block.pop("cache_control", None) is not None
        if role:
            block["_role"] = role
        out.append((json.dumps(block, sort_keys=True).encode(), marked))

    for tool in request.get("tools") or []:
        add(tool)
    system = request.get("system")
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    for block in system or []:
        add(block)
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content or []:
            add(block, message.get("role"))
    return out


def prompt_bytes(request):
    """The whole prompt, for the identical-prefix count."""
    return b"".join(data for data, _ in blocks(request))


def simulate_cache(request, written):
    """(prompt bytes, bytes read from the cache, bytes written to it); `written` is the
    run's set of cached prefixes (their digests), updated with this request's."""
    digest = hashlib.sha256()
    bounds = []  # (end, digest of the prefix ending there, breakpoint?)
    total = 0
    for data, marked in blocks(request):
        digest.update(data)
        total += len(data)
        bounds.append((total, digest.copy().digest(), marked))
    cached = 0
    for i, (_, _, marked) in enumerate(bounds):
        if not marked:
            continue
        for j in range(i, max(-1, i - LOOKBACK - 1), -1):
            if bounds[j][1] in written:
                cached = max(cached, bounds[j][0])
                break
    last = max((end for end, _, marked in bounds if marked), default=0)
    for _, prefix, marked in bounds:
        if marked:
            written.add(prefix)
    return total, cached, max(0, last - cached)


def usage(total, cached, written):
    return {
        "input_tokens": math.ceil((total - cached - written) / 4),
        "cache_read_input_tokens": cached // 4,
        "cache_creation_input_tokens": written // 4,
        "output_tokens": 40,
    }


def first_user(request):
    for message in request.get("messages") or []:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "".join(b.get("text", "") for b in content or [] if b.get("type") == "text")
    return ""


def plan_bytes(request):
    """Bytes of the plan's text (the `[Current plan:` reminder) in the request."""
    total = 0
    for message in request.get("messages") or []:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            text = block.get("text") or ""
            if block.get("type") == "text" and "[Current plan:" in text:
                total += len(text[text.index("[Current plan:") :].encode())
    return total


def tool_names(request):
    return [t.get("name") for t in request.get("tools") or []]


def content_of(message):
    """A chat-shaped scripted message as Anthropic content blocks."""
    out = []
    if message.get("content"):
        out.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or []:
        out.append(
            {
                "type": "tool_use",
                "id": call["id"].replace("call_", "toolu_"),
                "name": call["function"]["name"],
                "input": json.loads(call["function"]["arguments"]),
            }
        )
    return out


def stop_reason(message):
    return "tool_use" if message.get("tool_calls") else "end_turn"


def body(message, usage_):
    return {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "bench-model",
        "content": content_of(message),
        "stop_reason": stop_reason(message),
        "stop_sequence": None,
        "usage": usage_,
    }


def sse_body(message, usage_):
    start = dict(body(message, dict(usage_, output_tokens=1)), content=[], stop_reason=None)
    events = [("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(content_of(message)):
        if block["type"] == "text":
            opening = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block["text"][k : k + 16]} for k in range(0, len(block["text"]), 16)]
        else:
            opening = dict(block, input={})
            args = json.dumps(block["input"])
            half = len(args) // 2
            deltas = [{"type": "input_json_delta", "partial_json": part} for part in (args[:half], args[half:])]
        events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": opening}))
        for delta in deltas:
            events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason(message), "stop_sequence": None},
                "usage": {"output_tokens": usage_["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()
