"""The official `openai` Python package against `taper serve` (run by tests/serve/openai.rs).

Not named openai.py: run as a script, that name would shadow the package it imports.

argv: BASE_URL MODEL_ID. Exits non-zero (with the reason) when anything is not as an OpenAI
client expects.
"""
import sys

import openai

base_url, model_id = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base_url, api_key="unused", timeout=60, max_retries=0)

models = client.models.list()
assert [m.id for m in models.data] == [model_id], models

messages = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "What is the capital of France?"},
]
whole = client.chat.completions.create(
    model=model_id, messages=messages, max_tokens=20, temperature=0.7, seed=3
)
answer = whole.choices[0].message.content
assert answer, whole
assert whole.choices[0].finish_reason in ("stop", "length"), whole
assert whole.usage.completion_tokens > 0 and whole.usage.prompt_tokens > 10, whole.usage

pieces, usage = [], None
for chunk in client.chat.completions.create(
    model=model_id,
    messages=messages,
    max_tokens=20,
    temperature=0.7,
    seed=3,
    stream=True,
    stream_options={"include_usage": True},
):
    if chunk.choices and chunk.choices[0].delta.content:
        pieces.append(chunk.choices[0].delta.content)
    if chunk.usage:
        usage = chunk.usage
assert "".join(pieces) == answer, ("".join(pieces), answer)
assert usage and usage.completion_tokens == whole.usage.completion_tokens, usage

text = client.completions.create(
    model=model_id, prompt="Once upon a time", max_tokens=12, temperature=0
)
assert text.choices[0].text, text
streamed = "".join(
    c.choices[0].text
    for c in client.completions.create(
        model=model_id, prompt="Once upon a time", max_tokens=12, temperature=0, stream=True
    )
    if c.choices
)
assert streamed == text.choices[0].text, (streamed, text.choices[0].text)

try:
    client.chat.completions.create(model=model_id, messages=messages, temperature=7)
    raise SystemExit("an out-of-range temperature was accepted")
except openai.BadRequestError as e:
    assert e.status_code == 400
    assert e.body and e.body.get("param") == "temperature", e.body

print("openai client: ok")
