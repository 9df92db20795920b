"""Structured output through the official `openai` client against `taper serve` (run by
tests/serve/openai.rs), each answer checked with `jsonschema`.

argv: BASE_URL MODEL_ID. Exits non-zero (with the reason) on the first answer that is not as
the request asked.
"""
import json
import sys
from concurrent.futures import ThreadPoolExecutor

import jsonschema
import openai

base_url, model_id = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base_url, api_key="unused", timeout=120, max_retries=0)

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 30},
        "age": {"type": "integer", "minimum": 0, "maximum": 130},
        "languages": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 3},
    },
    "required": ["name", "age", "languages"],
    "additionalProperties": False,
}
COLOUR = {
    "type": "object",
    "properties": {"colour": {"enum": ["red", "green", "blue"]}, "why": {"type": "string", "maxLength": 60}},
    "required": ["colour", "why"],
    "additionalProperties": False,
}
ASK = [{"role": "user", "content": "Invent a programmer and describe them."}]


def schema_format(schema, name):
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def ask(schema, seed, messages=ASK, **extra):
    answer = client.chat.completions.create(
        model=model_id,
        messages=messages,
        max_tokens=120,
        temperature=0.9,
        seed=seed,
        response_format=schema_format(schema, "answer"),
        **extra,
    )
    return answer.choices[0].message.content


# 50 of 50 seeds: valid against the schema (requests run two at a time, as the server's slots).
with ThreadPoolExecutor(max_workers=2) as pool:
    answers = list(pool.map(lambda seed: (seed, ask(PERSON, seed)), range(50)))
for seed, text in answers:
    try:
        jsonschema.validate(json.loads(text), PERSON)
    except Exception as e:  # noqa: BLE001 - any failure is the test's failure
        raise SystemExit(f"seed {seed}: {e!r}: {text!r}")

# json_object: any JSON object.
obj = client.chat.completions.create(
    model=model_id, messages=ASK, max_tokens=80, seed=1, response_format={"type": "json_object"}
)
assert isinstance(json.loads(obj.choices[0].message.content), dict), obj

# Streamed pieces reassemble to the same valid answer as the whole one.
pieces = []
for chunk in client.chat.completions.create(
    model=model_id,
    messages=ASK,
    max_tokens=120,
    temperature=0.9,
    seed=7,
    response_format=schema_format(PERSON, "person"),
    stream=True,
):
    if chunk.choices and chunk.choices[0].delta.content:
        pieces.append(chunk.choices[0].delta.content)
assert "".join(pieces) == ask(PERSON, 7), ("".join(pieces), ask(PERSON, 7))

# Slots with different grammars at once give what each gives alone.
jobs = [(PERSON, 11), (COLOUR, 12), (PERSON, 13), (COLOUR, 14)]
colour_ask = [{"role": "user", "content": "Pick a colour and say why."}]
alone = [ask(s, seed, ASK if s is PERSON else colour_ask) for s, seed in jobs]
with ThreadPoolExecutor(max_workers=4) as pool:
    together = list(pool.map(lambda j: ask(j[0], j[1], ASK if j[0] is PERSON else colour_ask), jobs))
assert together == alone, (together, alone)
for (schema, _), text in zip(jobs, together):
    jsonschema.validate(json.loads(text), schema)

# A schema the engine cannot use, or two constraints at once: 400 naming the field.
for body, param in [
    ({"response_format": schema_format({"type": 5}, "bad")}, "response_format"),
    ({"response_format": {"type": "json_object"}, "extra_body": {"grammar": 'start: "x"'}}, "grammar"),
]:
    extra = body.pop("extra_body", None)
    try:
        client.chat.completions.create(
            model=model_id, messages=ASK, max_tokens=5, extra_body=extra, **body
        )
        raise SystemExit(f"{body} was accepted")
    except openai.BadRequestError as e:
        assert e.status_code == 400 and e.body and e.body.get("param") == param, e.body

print("structured output: ok")
