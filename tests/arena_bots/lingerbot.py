"""A bot that plays its lowest card, then, once its session is over, lingers: it ignores SIGTERM
and takes its time to exit, as a bot with a slow teardown (or a stuck one) does.

`arena run` stops its bots at the end with SIGTERM and kills those still there after its grace
(``TERMINATE_GRACE_S``): this bot holds every run it plays in that grace after the last game is
stored, so that a test can stop the run there. It writes ``lingering`` to its log (stderr) once it
lingers; left alone (a director killed with SIGKILL), it exits after ``LINGER_S`` seconds.
"""

import signal
import sys
import time

from arena.cards import Card
from arena.client import Bot, DecisionView, lowest, run

LINGER_S = 30.0


class LingerBot(Bot):
    """Lowest legal card (the lingering is in how its process ends)."""

    def choose_play(self, view: DecisionView) -> Card:
        return lowest(view.legal)


if __name__ == "__main__":
    # Ignored before run(), which sets its own handlers while it plays and puts this one back
    # when it returns: no moment is left where the director's SIGTERM would end the process.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        run(LingerBot())
    finally:
        print("lingering", file=sys.stderr, flush=True)
        time.sleep(LINGER_S)
