"""`sherlock.core.aio.loop_client`: a key's calls in flight are spread over clients whose pools
stay small (httpcore's pool scans every connection it holds on each request and response), each
loop has its own, and `aclose_loop_clients` closes every one of them."""

import asyncio

from sherlock.core import aio


class Client:
    def __init__(self, made):
        self.closed = False
        made.append(self)

    async def aclose(self):
        self.closed = True


def test_calls_in_flight_are_spread_over_clients_of_at_most_pool_size_connections():
    made = []

    async def hand_out():
        try:
            return [
                aio.loop_client("k", lambda: Client(made), in_flight=2 * aio.POOL_SIZE + 1)
                for _ in range(7)
            ]
        finally:
            await aio.aclose_loop_clients()

    handed = asyncio.run(hand_out())
    assert len(made) == 3  # ceil(33 / 16)
    assert handed == [made[0], made[1], made[2], made[0], made[1], made[2], made[0]]
    assert all(client.closed for client in made)


def test_a_key_with_few_calls_in_flight_has_one_client_and_each_loop_its_own():
    made = []

    async def two_asks():
        try:
            first = aio.loop_client("k", lambda: Client(made))
            return first, aio.loop_client("k", lambda: Client(made), in_flight=aio.POOL_SIZE)
        finally:
            await aio.aclose_loop_clients()

    first, again = asyncio.run(two_asks())
    assert first is again and len(made) == 1
    other, _ = asyncio.run(two_asks())
    assert other is not first and len(made) == 2
