"""Imports grpc with its C core's log level at ERROR, unless whoever runs the referee set one.

gRPC's C core reads ``GRPC_VERBOSITY`` once, when grpc is first imported, and by default writes
INFO lines on stderr: every failed TLS handshake of a bot (plain text at a TLS port, a
certificate it does not trust, retried every second or so) put a raw line into `arena serve`'s
JSON-lines log, and between `arena run`'s progress lines. The variable is unset again after the
import, so that the bot processes `arena run` starts inherit the environment they were given.
"""

import os

_GIVEN = os.environ.get("GRPC_VERBOSITY")
if _GIVEN is None:
    os.environ["GRPC_VERBOSITY"] = "ERROR"
try:
    import grpc  # noqa: F401  (imported for the log level: the referee's modules use it)
finally:
    if _GIVEN is None:
        os.environ.pop("GRPC_VERBOSITY", None)
