"""The admission log: one JSON line per request, written in batches (by time and by count)."""

from __future__ import annotations

import asyncio
import io
import logging
import re
from collections.abc import Iterator

import orjson
import pytest

from webhook.server import logs
from webhook.server.logs import RequestLog, configure_logging


class CountingBytes(io.BytesIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self.writes += 1
        return super().write(data)


@pytest.fixture
def stream() -> Iterator[CountingBytes]:
    """JSON-lines logging to an in-memory stream; the process' logging set-up restored afterwards."""
    root = logging.getLogger()
    saved = (logs._direct, root.handlers[:], root.level)
    raw = CountingBytes()
    configure_logging("info", stream=io.TextIOWrapper(raw, write_through=True))
    yield raw
    logs._direct, root.handlers[:] = saved[0], saved[1]
    root.setLevel(saved[2])
    for name in ("pod_tailor", "webhook", "uvicorn"):
        logging.getLogger(name).setLevel(logging.NOTSET)
    logging.getLogger("uvicorn.access").disabled = False


def lines(raw: CountingBytes) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in raw.getvalue().splitlines()]


class TestBatching:
    def test_the_lines_of_one_flush_interval_go_out_in_one_write_at_its_end(
        self, stream: CountingBytes
    ) -> None:
        log = RequestLog()

        async def answer_three() -> tuple[int, int, int]:
            for n in range(3):
                log.write(logging.INFO, {"uid": f"u{n}", "outcome": "patched", "detail": None})
                await asyncio.sleep(0)  # requests of later event-loop turns join the same batch
            during = len(stream.getvalue())
            await asyncio.sleep(RequestLog.FLUSH_SECONDS * 3)
            return during, stream.writes, len(stream.getvalue())

        during, writes, after = asyncio.run(answer_three())
        assert during == 0
        assert writes == 1
        assert after > 0
        assert [line["uid"] for line in lines(stream)] == ["u0", "u1", "u2"]

    def test_a_full_batch_is_written_at_once_without_waiting_for_the_interval(
        self, stream: CountingBytes
    ) -> None:
        log = RequestLog()

        async def answer_a_batch_and_one() -> tuple[int, int]:
            for n in range(RequestLog.FLUSH_LINES + 1):
                log.write(logging.INFO, {"uid": f"u{n}"})
            return stream.writes, len(stream.getvalue().splitlines())

        writes, written = asyncio.run(answer_a_batch_and_one())
        assert (writes, written) == (1, RequestLog.FLUSH_LINES)
        log.flush()
        assert lines(stream)[-1]["uid"] == f"u{RequestLog.FLUSH_LINES}"

    def test_a_line_carries_the_time_level_logger_and_message_before_its_fields(
        self, stream: CountingBytes
    ) -> None:
        log = RequestLog()
        log.write(logging.INFO, {"uid": "u1", "outcome": "patched"})
        (line,) = lines(stream)
        assert list(line) == ["time", "level", "logger", "message", "uid", "outcome"]
        fixed = (line["level"], line["logger"], line["message"])
        assert fixed == ("info", "pod_tailor.admission", "admission")
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", str(line["time"]))

    def test_without_an_event_loop_a_line_is_written_at_once(self, stream: CountingBytes) -> None:
        RequestLog().write(logging.WARNING, {"uid": "u9", "error": "engine_fault"})
        (line,) = lines(stream)
        assert line["level"] == "warning"
        assert line["error"] == "engine_fault"
        assert line["message"] == "admission"

    def test_none_values_are_left_out_and_levels_below_the_threshold_are_not_logged(
        self, stream: CountingBytes
    ) -> None:
        log = RequestLog()
        log.write(logging.DEBUG, {"uid": "quiet"})
        log.write(logging.INFO, {"uid": "u1", "policy": None, "ms": 0.25})
        (line,) = lines(stream)
        assert "policy" not in line
        assert line["ms"] == 0.25

    def test_flush_writes_what_is_pending_when_the_loop_stops_first(self, stream: CountingBytes) -> None:
        log = RequestLog()
        loop = asyncio.new_event_loop()

        def answer_and_stop() -> None:  # the loop stops before the write it scheduled can run
            log.write(logging.INFO, {"uid": "late"})
            loop.stop()

        try:
            loop.call_soon(answer_and_stop)
            loop.run_forever()
        finally:
            loop.close()
        assert stream.getvalue() == b""
        log.flush()  # what the app's lifespan does on shutdown
        assert [line["uid"] for line in lines(stream)] == ["late"]

    def test_lines_written_after_an_earlier_loop_ended_with_its_flush_pending_still_go_out(
        self, stream: CountingBytes
    ) -> None:
        log = RequestLog()

        async def answer(uid: str, *, wait: float) -> None:
            log.write(logging.INFO, {"uid": uid})
            await asyncio.sleep(wait)

        asyncio.run(answer("first", wait=0))  # the loop ends before its flush is due
        assert stream.getvalue() == b""
        asyncio.run(answer("second", wait=RequestLog.FLUSH_SECONDS * 3))
        assert [line["uid"] for line in lines(stream)] == ["first", "second"]


class TestFormat:
    @pytest.mark.parametrize(
        "fields",
        [{}, {"uid": None}, {"uid": "u1"}, {"uid": "u1", "outcome": "patched", "ms": 0.5}],
        ids=["no fields", "only None", "one", "several"],
    )
    def test_every_line_is_one_json_object(self, stream: CountingBytes, fields: dict[str, object]) -> None:
        RequestLog().write(logging.INFO, fields)
        (line,) = lines(stream)
        own = {key: value for key, value in line.items() if key not in ("time", "level", "logger", "message")}
        assert own == {key: value for key, value in fields.items() if value is not None}

