"""The hearts.v1 protocol keeps the promises other parts and other languages rely on.

Messages survive the wire, the services stream the way the referee and the SDK expect, the names
follow buf's STANDARD style (checked here through the descriptors, so no buf binary is needed),
every element is documented, no name trips up a Python bot, and the vocabulary mirrors the rules
engine's.
"""

from __future__ import annotations

import dataclasses
import json
import keyword
import re
import subprocess
import sys
from collections.abc import Iterator
from enum import Enum
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import (
    Descriptor,
    EnumDescriptor,
    FileDescriptor,
    ServiceDescriptor,
)

from arena import rules as engine_rules
from arena import table as referee_table
from arena.proto.hearts.v1 import (
    bot_service_pb2,
    bot_service_pb2_grpc,
    events_pb2,
    game_pb2,
    spectator_service_pb2,
    spectator_service_pb2_grpc,
)

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PACKAGE = "hearts.v1"
FILES: tuple[FileDescriptor, ...] = (
    game_pb2.DESCRIPTOR,
    events_pb2.DESCRIPTOR,
    bot_service_pb2.DESCRIPTOR,
    spectator_service_pb2.DESCRIPTOR,
)
MIRRORED_ENUMS: tuple[type[Enum], ...] = (
    engine_rules.PassDirection,
    engine_rules.FirstLead,
    engine_rules.MoonRule,
    engine_rules.GameEnd,
    engine_rules.Settling,
)
"""Engine enums whose every member NAME must exist in the proto enum of the same name."""
MIRRORED_RECORD_ENUMS: tuple[type[Enum], ...] = (referee_table.FaultKind, referee_table.Termination)
"""The referee's record vocabulary, mirrored the same way in events.proto."""


def upper_snake(name: str) -> str:
    """PascalCase to UPPER_SNAKE as buf derives enum prefixes: DecisionKind -> DECISION_KIND."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def all_messages() -> Iterator[Descriptor]:
    """Every message of the package, nested ones included."""
    stack = [m for f in FILES for m in f.message_types_by_name.values()]
    while stack:
        message = stack.pop()
        yield message
        stack.extend(message.nested_types)


def all_enums() -> Iterator[EnumDescriptor]:
    """Every enum of the package, nested ones included."""
    for f in FILES:
        yield from f.enum_types_by_name.values()
    for message in all_messages():
        yield from message.enum_types


def all_services() -> Iterator[ServiceDescriptor]:
    """Every service of the package."""
    for f in FILES:
        yield from f.services_by_name.values()


# ---- the wire ------------------------------------------------------------------------------


def _mid_hand_response() -> bot_service_pb2.PlayResponse:
    rules = game_pb2.Rules(
        players=4,
        pass_count=3,
        pass_cycle=[game_pb2.PASS_DIRECTION_LEFT, game_pb2.PASS_DIRECTION_HOLD],
        moon=game_pb2.MOON_RULE_ADD,
        moon_points=26,
        queen_penalty=13,
        target=100,
        hand_size=13,
        rules_json=json.dumps(engine_rules.Rules().to_dict()),
    )
    state = game_pb2.PublicState(
        players=4,
        dealer=3,
        seat_names=["north", "east", "south", "west"],
        hand_number=0,
        current_trick=game_pb2.Trick(trick_number=1, leader=2, cards=["4D", "KD"]),
        completed_tricks=[game_pb2.Trick(trick_number=0, leader=1, cards=["2C", "AC", "3C", "QS"])],
        hand_points=[0, 0, 0, 13],
        game_totals=[0, 0, 0, 0],
        cards_in_hand=[12, 12, 11, 11],
        hearts_broken=True,
        pass_direction=game_pb2.PASS_DIRECTION_LEFT,
        passed_cards=["AS", "KS", "QH"],
        passed_to_seat=1,
        received_cards=["2H", "3H", "4H"],
        received_from_seat=3,
        forfeited=[False, False, False, False],
        rules=rules,
    )
    state.completed_tricks[0].winner = 3
    state.completed_tricks[0].points = 13
    events = [
        events_pb2.Event(
            trick_won=events_pb2.TrickWon(
                trick_number=0, leader=1, cards=["2C", "AC", "3C", "QS"], winner=3, points=13
            )
        ),
        events_pb2.Event(card_played=events_pb2.CardPlayed(trick_number=1, seat=2, card="4D")),
        events_pb2.Event(card_played=events_pb2.CardPlayed(trick_number=1, seat=3, card="KD")),
        events_pb2.Event(
            fault_notice=events_pb2.FaultNotice(
                kind=events_pb2.FAULT_KIND_TIMEOUT,
                request_id=6,
                substitute_cards=["2D"],
                faults=1,
                faults_allowed=3,
            )
        ),
    ]
    request = bot_service_pb2.DecisionRequest(
        request_id=7,
        kind=bot_service_pb2.DECISION_KIND_PLAY,
        game_id="g-1",
        trick_number=1,
        your_seat=0,
        hand=["5D", "9D", "2H", "3H", "4H", "TS"],
        legal_cards=["5D", "9D"],
        move_deadline_ms=1000,
        time_bank_ms=30_000,
        state=state,
    )
    return bot_service_pb2.PlayResponse(events=events, request=request)


def test_a_response_with_events_and_a_request_survives_the_wire() -> None:
    sent = _mid_hand_response()

    received = bot_service_pb2.PlayResponse.FromString(sent.SerializeToString())

    assert received == sent
    assert [e.WhichOneof("kind") for e in received.events] == [
        "trick_won",
        "card_played",
        "card_played",
        "fault_notice",
    ]
    assert received.HasField("request")
    assert not received.HasField("welcome")
    assert not received.HasField("shutdown")
    assert list(received.request.legal_cards) == ["5D", "9D"]
    assert received.request.state.completed_tricks[0].winner == 3
    assert not received.request.state.current_trick.HasField("winner")
    assert engine_rules.Rules.from_dict(json.loads(received.request.state.rules.rules_json)) == (
        engine_rules.Rules()
    )


def test_optional_fields_tell_seat_zero_from_absent() -> None:
    # Seat 0 is a real seat, so "no moon shooter" and "no seat" must not read as seat 0.
    nobody = events_pb2.HandEnded.FromString(events_pb2.HandEnded().SerializeToString())
    seat_zero = events_pb2.HandEnded.FromString(
        events_pb2.HandEnded(moon_shooter=0).SerializeToString()
    )
    assert not nobody.HasField("moon_shooter")
    assert seat_zero.HasField("moon_shooter")
    assert seat_zero.moon_shooter == 0
    spectator_view = events_pb2.GameStarted(game_id="g-1")
    assert not spectator_view.HasField("your_seat")


def test_bot_messages_round_trip_through_the_request_oneof() -> None:
    hello = bot_service_pb2.PlayRequest(
        hello=bot_service_pb2.Hello(bot_name="b", token="t", protocol_version=1)
    )
    pass_ = bot_service_pb2.PlayRequest(
        decision=bot_service_pb2.Decision(
            request_id=1, pass_cards=bot_service_pb2.PassCards(cards=["QS", "AH", "KH"])
        )
    )
    play = bot_service_pb2.PlayRequest(
        decision=bot_service_pb2.Decision(
            request_id=2, play_card=bot_service_pb2.PlayCard(card="2C")
        )
    )
    for message, kind, choice in (
        (hello, "hello", None),
        (pass_, "decision", "pass_cards"),
        (play, "decision", "play_card"),
    ):
        back = bot_service_pb2.PlayRequest.FromString(message.SerializeToString())
        assert back == message
        assert back.WhichOneof("kind") == kind
        if choice is not None:
            assert back.decision.WhichOneof("choice") == choice


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _length_delimited(field_number: int, payload: bytes) -> bytes:
    wire_type_len = 2
    return _varint(field_number << 3 | wire_type_len) + _varint(len(payload)) + payload


def test_an_event_of_a_kind_from_a_later_version_parses_as_no_known_kind() -> None:
    # Field 1000 of Event stands for an event kind added after this version: an old bot must be
    # able to skip it rather than fail, and the events around it must still arrive.
    later_kind = _length_delimited(1000, b"")
    known = events_pb2.Event(card_played=events_pb2.CardPlayed(seat=1, card="QS"))
    events_field = bot_service_pb2.PlayResponse.DESCRIPTOR.fields_by_name["events"].number
    wire = _length_delimited(events_field, later_kind) + _length_delimited(
        events_field, known.SerializeToString()
    )

    response = bot_service_pb2.PlayResponse.FromString(wire)

    assert [e.WhichOneof("kind") for e in response.events] == [None, "card_played"]
    assert response.events[1] == known


# ---- the services --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("service", "method", "client_streaming", "server_streaming", "request_type", "response_type"),
    [
        ("BotService", "Play", True, True, "PlayRequest", "PlayResponse"),
        ("SpectatorService", "ListTables", False, False, "ListTablesRequest", "ListTablesResponse"),
        ("SpectatorService", "Watch", False, True, "WatchRequest", "WatchResponse"),
    ],
)
def test_rpcs_stream_as_the_referee_and_sdk_expect(
    service: str,
    method: str,
    client_streaming: bool,
    server_streaming: bool,
    request_type: str,
    response_type: str,
) -> None:
    services = {s.name: s for s in all_services()}
    rpc = services[service].methods_by_name[method]
    assert rpc.client_streaming is client_streaming
    assert rpc.server_streaming is server_streaming
    assert rpc.input_type.full_name == f"{PACKAGE}.{request_type}"
    assert rpc.output_type.full_name == f"{PACKAGE}.{response_type}"


def test_generated_grpc_modules_offer_stubs_and_servicers() -> None:
    for module, name in (
        (bot_service_pb2_grpc, "BotService"),
        (spectator_service_pb2_grpc, "SpectatorService"),
    ):
        assert hasattr(module, f"{name}Stub")
        assert hasattr(module, f"{name}Servicer")
        assert hasattr(module, f"add_{name}Servicer_to_server")
    assert {s.name for s in all_services()} == {"BotService", "SpectatorService"}


# ---- buf STANDARD style, through the descriptors -------------------------------------------


def test_every_file_is_in_the_versioned_package() -> None:
    for f in FILES:
        assert f.package == PACKAGE
        assert f.name.startswith("hearts/v1/"), f.name  # buf PACKAGE_DIRECTORY_MATCH
        assert re.fullmatch(r"hearts/v1/[a-z][a-z0-9_]*\.proto", f.name), f.name


def test_every_enum_starts_at_unspecified_and_prefixes_its_values() -> None:
    enums = list(all_enums())
    assert len(enums) >= 10  # the walk really found the package's enums
    for enum in enums:
        prefix = upper_snake(enum.name) + "_"
        zero = enum.values_by_number[0]
        assert zero.name == f"{prefix}UNSPECIFIED", enum.full_name
        assert enum.values[0] is zero, f"{enum.full_name}: the zero value comes first"
        for value in enum.values:
            assert value.name.startswith(prefix), f"{enum.full_name}.{value.name}"
            assert re.fullmatch(r"[A-Z][A-Z0-9_]*", value.name), value.name


def test_rpc_messages_are_named_after_their_rpc_and_used_once() -> None:
    used: list[str] = []
    for service in all_services():
        assert service.name.endswith("Service"), service.name
        for rpc in service.methods:
            assert rpc.input_type.name == f"{rpc.name}Request", rpc.full_name
            assert rpc.output_type.name == f"{rpc.name}Response", rpc.full_name
            used += [rpc.input_type.full_name, rpc.output_type.full_name]
    assert len(used) == len(set(used))


def test_names_are_cased_as_buf_wants_and_none_is_a_python_keyword() -> None:
    # A field called `pass` or `from` could only be reached with getattr() in Python.
    for message in all_messages():
        assert re.fullmatch(r"[A-Z][A-Za-z0-9]*", message.name), message.full_name
        names = [field.name for field in message.fields]
        names += [oneof.name for oneof in message.oneofs if not oneof.name.startswith("_")]
        for name in names:
            assert re.fullmatch(r"[a-z][a-z0-9_]*", name), f"{message.full_name}.{name}"
            assert not keyword.iskeyword(name), f"{message.full_name}.{name}"
            assert not keyword.issoftkeyword(name), f"{message.full_name}.{name}"


def _descriptor_set_with_comments(tmp_path: Path) -> descriptor_pb2.FileDescriptorSet:
    out = tmp_path / "hearts.pb"
    files = sorted(p.relative_to(PROTO_ROOT).as_posix() for p in PROTO_ROOT.rglob("*.proto"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"--proto_path={PROTO_ROOT}",
            "--include_source_info",
            f"--descriptor_set_out={out}",
            *files,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())


# Field numbers of descriptor.proto, which name the parts of a file in SourceCodeInfo paths.
_FILE_MESSAGES, _FILE_ENUMS, _FILE_SERVICES = 4, 5, 6
_MESSAGE_FIELDS, _MESSAGE_NESTED, _MESSAGE_ENUMS, _MESSAGE_ONEOFS = 2, 3, 4, 8
_ENUM_VALUES, _SERVICE_METHODS = 2, 2


def _documentable(
    f: descriptor_pb2.FileDescriptorProto,
) -> Iterator[tuple[tuple[int, ...], str]]:
    """The source path and the name of every element that must carry a leading comment."""

    def enum(
        path: tuple[int, ...], e: descriptor_pb2.EnumDescriptorProto
    ) -> Iterator[tuple[tuple[int, ...], str]]:
        yield path, e.name
        for i, v in enumerate(e.value):
            yield (*path, _ENUM_VALUES, i), f"{e.name}.{v.name}"

    def message(
        path: tuple[int, ...], m: descriptor_pb2.DescriptorProto
    ) -> Iterator[tuple[tuple[int, ...], str]]:
        yield path, m.name
        for i, field in enumerate(m.field):
            yield (*path, _MESSAGE_FIELDS, i), f"{m.name}.{field.name}"
        for i, oneof in enumerate(m.oneof_decl):
            if not oneof.name.startswith("_"):  # synthetic oneofs of `optional` fields
                yield (*path, _MESSAGE_ONEOFS, i), f"{m.name}.{oneof.name}"
        for i, nested in enumerate(m.nested_type):
            if not nested.options.map_entry:
                yield from message((*path, _MESSAGE_NESTED, i), nested)
        for i, e in enumerate(m.enum_type):
            yield from enum((*path, _MESSAGE_ENUMS, i), e)

    for i, m in enumerate(f.message_type):
        yield from message((_FILE_MESSAGES, i), m)
    for i, e in enumerate(f.enum_type):
        yield from enum((_FILE_ENUMS, i), e)
    for i, s in enumerate(f.service):
        yield (_FILE_SERVICES, i), s.name
        for j, rpc in enumerate(s.method):
            yield (_FILE_SERVICES, i, _SERVICE_METHODS, j), f"{s.name}.{rpc.name}"


def test_every_element_is_documented(tmp_path: Path) -> None:
    # Bot authors in other languages read the .proto files as the reference (buf COMMENTS rules).
    descriptor_set = _descriptor_set_with_comments(tmp_path)
    assert {f.name for f in descriptor_set.file} == {f.name for f in FILES}
    undocumented: list[str] = []
    checked = 0
    for f in descriptor_set.file:
        comments = {
            tuple(loc.path): loc.leading_comments.strip() for loc in f.source_code_info.location
        }
        for path, name in _documentable(f):
            checked += 1
            if not comments.get(path):
                undocumented.append(f"{f.name}: {name}")
    assert checked > 200  # the walk really reached the fields
    assert undocumented == []


# ---- the rules engine's vocabulary ---------------------------------------------------------


@pytest.mark.parametrize(
    ("python_enum", "proto_file"),
    [(e, game_pb2.DESCRIPTOR) for e in MIRRORED_ENUMS]
    + [(e, events_pb2.DESCRIPTOR) for e in MIRRORED_RECORD_ENUMS],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_proto_enums_mirror_the_python_enums(
    python_enum: type[Enum], proto_file: FileDescriptor
) -> None:
    proto_enum = proto_file.enum_types_by_name[python_enum.__name__]
    prefix = upper_snake(python_enum.__name__) + "_"
    proto_names = {v.name for v in proto_enum.values} - {f"{prefix}UNSPECIFIED"}
    assert proto_names == {prefix + member.name for member in python_enum}


def test_proto_rules_carry_every_engine_rule_by_name() -> None:
    proto_fields = set(game_pb2.Rules.DESCRIPTOR.fields_by_name)
    engine_fields = {f.name for f in dataclasses.fields(engine_rules.Rules)}
    assert engine_fields <= proto_fields, engine_fields - proto_fields
    assert set(engine_rules.Rules().to_dict()) <= proto_fields  # rules_json keys, as documented
