"""The protocol guide (proto/hearts/v1/README.md) shows what the referee really sends.

Its transcript promises protobuf JSON with the .proto field names and zero values written out; a
field the referee sends but the transcript leaves out (or one it names that does not exist) would
teach a bot author the wrong message.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from google.protobuf.descriptor import Descriptor

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb

GUIDE = Path(__file__).resolve().parent.parent / "proto" / "hearts" / "v1" / "README.md"
ELIDED = "..."
"""What the transcript shows instead of a long value (the rules, most states, the token)."""
SENDERS = {
    "bot -> referee": bot_pb.PlayRequest.DESCRIPTOR,
    "referee -> bot": bot_pb.PlayResponse.DESCRIPTOR,
}


def transcript() -> list[tuple[str, dict[str, Any]]]:
    """(sender, message) for every numbered message of the guide's transcript."""
    text = GUIDE.read_text()
    section = text[text.index("### A real transcript") :]
    block = re.search(r"```js\n(.*?)```", section, re.DOTALL)
    assert block is not None, "the transcript's code block is gone"
    messages = []
    for chunk in re.split(r"^// ", block[1], flags=re.MULTILINE):
        header, _, body = chunk.partition("\n")
        sender = next((s for s in SENDERS if header.endswith(s)), None)
        if sender is not None:
            messages.append((sender, json.loads(body)))
    return messages


def problems(descriptor: Descriptor, message: dict[str, Any], where: str) -> list[str]:
    """Where ``message`` is not ``descriptor`` as the transcript promises to show it."""
    found = []
    fields = descriptor.fields_by_name
    found += [f"{where}.{name}: no such field" for name in message if name not in fields]
    for field in descriptor.fields:
        value = message.get(field.name)
        if value is None:
            # Left out rightly: an unset oneof member or message, an empty list.
            if field.containing_oneof is None and not field.has_presence and not field.is_repeated:
                found.append(f"{where}.{field.name}: missing (zero values are written out)")
            continue
        if field.message_type is None or value == ELIDED:
            continue
        for item in value if field.is_repeated else [value]:
            found += problems(field.message_type, item, f"{where}.{field.name}")
    return found


def test_the_transcript_shows_every_field_the_referee_sends() -> None:
    messages = transcript()
    assert len(messages) >= 10 and {sender for sender, _ in messages} == set(SENDERS)
    found = []
    for number, (sender, message) in enumerate(messages, 1):
        found += problems(SENDERS[sender], message, f"message {number} ({sender})")
    assert found == []


def test_the_transcript_welcome_names_the_bot_as_the_referee_knows_it() -> None:
    messages = [message for _, message in transcript()]
    welcome = next(m["welcome"] for m in messages if "welcome" in m)
    hello = next(m["hello"] for m in messages if "hello" in m)
    assert welcome["bot_name"] == hello["bot_name"] == "north"
