"""Reads the scripted Anthropic server's answers with the official `anthropic` SDK.

Usage: anthropic_reader.py BASE_URL N

Makes N requests, alternating streamed (`messages.stream`, the SDK's event accumulator) and
buffered (`messages.create`), and prints one JSON line per answer: the content blocks as the
SDK parsed them, the stop reason and the usage — or the error the SDK raised. The Rust test
compares them with what the script meant to say, so the fake stays faithful to the API.
"""

import json
import sys

import anthropic


def blocks(message):
    out = []
    for block in message.content:
        out.append(block.model_dump(exclude_none=True, mode="json"))
    return out


def main():
    base_url, count = sys.argv[1], int(sys.argv[2])
    client = anthropic.Anthropic(base_url=base_url, api_key="sk-ant-sdk-test", max_retries=0)
    request = dict(
        model="claude-test",
        max_tokens=1024,
        messages=[{"role": "user", "content": "hi"}],
    )
    for i in range(count):
        try:
            if i % 2 == 0:
                with client.messages.stream(**request) as stream:
                    message = stream.get_final_message()
            else:
                message = client.messages.create(**request)
            line = {
                "blocks": blocks(message),
                "stop_reason": message.stop_reason,
                "usage": message.usage.model_dump(exclude_none=True, mode="json"),
            }
        except anthropic.APIError as e:
            line = {"error": type(e).__name__, "message": str(e)}
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
