"""Reads the scripted Responses server's answers with the official `openai` SDK.

Usage: openai_reader.py BASE_URL N

Makes N requests to the Responses API, alternating streamed (`responses.stream`, the SDK's
event accumulator) and buffered (`responses.create`), and prints one JSON line per answer:
the output items as the SDK parsed them, the status and the usage — or the error the SDK
raised. The Rust test compares them with what the script meant to say.
"""

import json
import sys

import openai


def main():
    base_url, count = sys.argv[1], int(sys.argv[2])
    client = openai.OpenAI(base_url=base_url, api_key="sk-openai-sdk-test", max_retries=0)
    request = dict(model="gpt-test", input="hi", store=False)
    for i in range(count):
        try:
            if i % 2 == 0:
                with client.responses.stream(**request) as stream:
                    kinds = [event.type for event in stream]
                    response = stream.get_final_response()
            else:
                kinds = []
                response = client.responses.create(**request)
            line = {
                "output": [item.model_dump(exclude_none=True, mode="json") for item in response.output],
                "output_text": response.output_text,
                "status": response.status,
                "usage": response.usage.model_dump(exclude_none=True, mode="json"),
                "events": kinds,
            }
        except openai.OpenAIError as e:
            line = {"error": type(e).__name__, "message": str(e)}
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
