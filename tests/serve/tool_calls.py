"""Tool calls through the official `openai` client against `taper serve` (run by
tests/serve/openai.rs), each call's arguments checked with `jsonschema`.

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

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 30},
        "unit": {"enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city", "unit"],
    "additionalProperties": False,
}
ADD = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}
SCHEMAS = {"get_weather": WEATHER, "add": ADD}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "The weather now in a city", "parameters": WEATHER}},
    {"type": "function", "function": {"name": "add", "description": "The sum of two whole numbers", "parameters": ADD}},
]
ASK = [{"role": "user", "content": "What is the weather like in Paris today?"}]


def ask(seed, tool_choice, messages=ASK, **extra):
    # One call an answer: with parallel calls allowed a 135M model may go on calling until
    # max_tokens cuts it off.
    return client.chat.completions.create(
        model=model_id,
        messages=messages,
        max_tokens=120,
        temperature=0.9,
        seed=seed,
        tools=TOOLS,
        tool_choice=tool_choice,
        parallel_tool_calls=False,
        **extra,
    )


def check_calls(label, answer, only=None):
    choice = answer.choices[0]
    calls = choice.message.tool_calls
    if not calls:
        raise SystemExit(f"{label}: no tool call: {choice.message!r}")
    if choice.finish_reason != "tool_calls":
        raise SystemExit(f"{label}: finish_reason {choice.finish_reason!r}")
    for call in calls:
        name = call.function.name
        if name not in SCHEMAS or (only and name != only):
            raise SystemExit(f"{label}: called {name!r}")
        try:
            jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[name])
        except Exception as e:  # noqa: BLE001 - any failure is the test's failure
            raise SystemExit(f"{label}: {e!r}: {call.function.arguments!r}")
    return calls


# 50 of 50 seeds, `required` and a named function: calls of offered tools, valid arguments.
named = {"type": "function", "function": {"name": "add"}}
add_ask = [{"role": "user", "content": "What is 17 plus 25?"}]
with ThreadPoolExecutor(max_workers=2) as pool:
    required = list(pool.map(lambda seed: ask(seed, "required"), range(50)))
    forced = list(pool.map(lambda seed: ask(seed, named, add_ask), range(50)))
for seed, answer in enumerate(required):
    check_calls(f"required, seed {seed}", answer)
for seed, answer in enumerate(forced):
    calls = check_calls(f"named, seed {seed}", answer, only="add")
    assert len(calls) == 1, calls

# Streamed deltas, by index, reassemble to the whole answer's calls; the arguments come in
# pieces as the model writes them, not in one piece at the end.
whole = ask(7, "required").choices[0].message.tool_calls
streamed, finish, argument_pieces = {}, None, 0
for chunk in ask(7, "required", stream=True):
    if not chunk.choices:
        continue
    for delta in chunk.choices[0].delta.tool_calls or []:
        call = streamed.setdefault(delta.index, {"id": None, "name": "", "arguments": ""})
        if delta.id:
            call["id"] = delta.id
        if delta.function and delta.function.name:
            call["name"] += delta.function.name
        if delta.function and delta.function.arguments:
            call["arguments"] += delta.function.arguments
            argument_pieces += 1
    finish = chunk.choices[0].finish_reason or finish
assert finish == "tool_calls", finish
assert [(c["name"], c["arguments"]) for _, c in sorted(streamed.items())] == [
    (c.function.name, c.function.arguments) for c in whole
], (streamed, whole)
assert all(c["id"] for c in streamed.values()), streamed
assert argument_pieces > 2 * len(whole), (argument_pieces, whole)

# A tool loop: the call, its result, the answer. The second request reads only what is new.
first = ask(3, named, add_ask)
call = first.choices[0].message.tool_calls[0]
loop = add_ask + [
    first.choices[0].message.model_dump(exclude_none=True),
    {"role": "tool", "tool_call_id": call.id, "content": "42"},
]
second = client.chat.completions.create(
    model=model_id, messages=loop, max_tokens=40, temperature=0, tools=TOOLS, tool_choice="auto"
)
assert second.choices[0].message.content or second.choices[0].message.tool_calls, second
cached = second.usage.prompt_tokens_details.cached_tokens
seen = first.usage.prompt_tokens + first.usage.completion_tokens
assert cached >= seen - 1, (cached, seen, second.usage)

# Mistakes are 400s naming the field.
for body, param in [
    ({"tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice"),
    ({"tools": TOOLS + [TOOLS[0]]}, "tools[2].function.name"),
    ({"messages": ASK + [{"role": "tool", "tool_call_id": "call_x", "content": "1"}]}, "messages[1].tool_call_id"),
    ({"response_format": {"type": "json_object"}}, "response_format"),
]:
    request = {"model": model_id, "messages": ASK, "max_tokens": 5, "tools": TOOLS, **body}
    try:
        client.chat.completions.create(**request)
        raise SystemExit(f"{body} was accepted")
    except openai.BadRequestError as e:
        assert e.status_code == 400 and e.body and e.body.get("param") == param, e.body

print("tool calls: ok")
