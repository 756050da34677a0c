"""A webhook receiver on loopback for the webhook tests: the loopback agent server
(`loopback_agent`), answering each POST with the next status of `statuses` (the last one
repeats); `received` keeps each request with its exact body bytes (the signature is over them).
"""

from tests.support.loopback_agent import LoopbackAgent


class LoopbackReceiver(LoopbackAgent):
    def __init__(self, statuses=(200,)):
        self.statuses = list(statuses)
        super().__init__(answer=self._answer)

    def _answer(self, request):
        status = self.statuses[min(request["n"], len(self.statuses)) - 1]
        return status, f"answer {status}".encode()

    @property
    def received(self):
        return [{**r, "body": r["raw"]} for r in self.requests]

    @property
    def url(self):
        return super().url + "/hook"
