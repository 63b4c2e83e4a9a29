"""Time series -> SVG geometry, computed on the server: the template only draws what is here.

A ``Chart`` holds plot coordinates in SVG user units (the viewBox is ``0 0 width height``):
one polyline per series with a dot per point, axis ticks with labels, and an optional dashed
reference line (a target). No JavaScript, no library.

A ``Timeline`` draws the retirement audit's ``readers`` check over its window: one row per queue that
had reader sessions (a bar per session), the recorder's coverage on a row of its own, and the coverage
gaps as bands across every row. Names in it come from the broker's clients: they are made printable
(one line, control and bidi characters as escapes) and the template's autoescaping does the rest.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from contract_platform.errors import clipped, printable
from contract_platform_airflow.ui.views import ReaderSessionView, ReadersView, Series, Span

__all__ = [
    "Band",
    "Bar",
    "Chart",
    "Dot",
    "Lane",
    "Line",
    "Tick",
    "Timeline",
    "line_chart",
    "percent",
    "reader_timeline",
]

WIDTH, HEIGHT = 720, 240
LEFT, RIGHT, TOP, BOTTOM = 64, 44, 28, 36
PALETTE = 4  # series take css classes series-0 .. series-3


@dataclass(frozen=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    title: str


@dataclass(frozen=True)
class Line:
    name: str
    css: str
    points: str  # "x,y x,y ..." for <polyline points>
    dots: tuple[Dot, ...]


@dataclass(frozen=True)
class Chart:
    title: str
    y_label: str
    width: int
    height: int
    left: int
    top: int
    right: int  # x of the plot's right edge
    bottom: int  # y of the plot's bottom edge
    lines: tuple[Line, ...]
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    reference: tuple[float, str] | None  # (y, label) of a dashed target line
    empty: bool


def percent(value: float) -> str:
    return f"{value * 100:.2f}%" if value < 0.1 else f"{value * 100:.1f}%"


def _count(value: float) -> str:
    return f"{value:g}"


def _nice_top(value: float) -> float:
    """The smallest 1/2/5 x 10^n at or above ``value`` (at least something above zero)."""
    if value <= 0:
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        top = step * 10.0**exponent
        if top >= value - 1e-12:
            return top
    return 10.0 ** (exponent + 1)


def _time_label(at: datetime, span: timedelta) -> str:
    return at.strftime("%m-%d %H:%M") if span <= timedelta(days=2) else at.strftime("%Y-%m-%d")


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    y_label: str,
    y_format: Callable[[float], str] = _count,
    reference: tuple[float, str] | None = None,
    integer: bool = False,
) -> Chart:
    """Scale every series into one plot sharing the time axis and a y axis from zero."""
    right, bottom = WIDTH - RIGHT, HEIGHT - BOTTOM
    points = [p for s in series for p in s.points]
    if not points:
        return Chart(title, y_label, WIDTH, HEIGHT, LEFT, TOP, right, bottom, (), (), (), None, True)
    start, end = min(p.at for p in points), max(p.at for p in points)
    if end - start < timedelta(minutes=1):
        start, end = start - timedelta(hours=1), end + timedelta(hours=1)
    span = end - start
    highest = max([p.value for p in points] + ([reference[0]] if reference else []))
    steps = 4
    if integer:  # whole-number ticks: 0, n, 2n, 3n, 4n
        top_value = float(steps * max(1, math.ceil(highest / steps)))
    else:
        top_value = _nice_top(highest * 1.1 if highest > 0 else 1.0)

    def x_of(at: datetime) -> float:
        return round(LEFT + (at - start) / span * (right - LEFT), 1)

    def y_of(value: float) -> float:
        return round(bottom - value / top_value * (bottom - TOP), 1)

    lines = []
    for index, s in enumerate(series):
        dots = tuple(
            Dot(x_of(p.at), y_of(p.value), f"{s.name} {p.at:%Y-%m-%d %H:%M} UTC: {y_format(p.value)}") for p in s.points
        )
        lines.append(Line(s.name, f"series-{index % PALETTE}", " ".join(f"{d.x},{d.y}" for d in dots), dots))
    x_ticks = tuple(Tick(x_of(start + span * i / 4), _time_label(start + span * i / 4, span)) for i in range(5))
    y_values = [top_value * i / steps for i in range(steps + 1)]
    y_ticks = tuple(Tick(y_of(v), y_format(v)) for v in y_values)
    ref = (y_of(reference[0]), reference[1]) if reference else None
    return Chart(title, y_label, WIDTH, HEIGHT, LEFT, TOP, right, bottom, tuple(lines), x_ticks, y_ticks, ref, False)


# -- the readers timeline --------------------------------------------------------------------------

TIMELINE_WIDTH = 960
LANE_LEFT, LANE_RIGHT, LANE_TOP, LANE_BOTTOM = 300, 24, 12, 40
LANE_HEIGHT, BAR_HEIGHT = 26, 14
MIN_WIDTH = 2.0  # a session of a few seconds in a seven-day window still shows
LABEL_CHARS = 46


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    title: str  # the <title> tooltip


@dataclass(frozen=True)
class Lane:
    label: str  # clipped to fit the left margin
    title: str  # the whole label
    css: str  # lane-coverage | lane-queue
    y: float  # top of the lane
    bar_y: float
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class Band:
    x: float
    width: float
    title: str


@dataclass(frozen=True)
class Timeline:
    title: str
    width: int
    height: int
    left: int
    top: int
    right: int  # x of the plot's right edge
    bottom: int  # y of the plot's bottom edge
    bar_height: int
    lanes: tuple[Lane, ...]
    gaps: tuple[Band, ...]  # across every lane
    x_ticks: tuple[Tick, ...]
    empty: bool  # the check judged no window: nothing to draw


def _at(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "?"


def _name(value: str | None, fallback: str) -> str:
    return printable(value) if value else fallback


def _session_title(session: ReaderSessionView) -> str:
    who = _name(session.connection, "an unnamed connection")
    where = f" from {printable(session.peer_host)}" if session.peer_host else ""
    user = f" as {printable(session.user)}" if session.user else ""
    tag = f", consumer {printable(session.consumer_tag)}" if session.consumer_tag else ""
    attached = f"attached {_at(session.attached_at)}" if session.attached_at else "attached before the recorder saw it"
    detached = f"detached {_at(session.detached_at)}" if session.detached_at else "still attached"
    return f"{_name(session.queue, 'a queue')}: read by {who}{where}{user}{tag}; {attached}, {detached}"


_HOUR, _DAY = timedelta(hours=1), timedelta(days=1)
_TICK_STEPS = (  # (step, at most this many ticks so the labels do not run into each other)
    *((_HOUR * hours, 7) for hours in (1, 2, 3, 6, 12)),
    *((_DAY * days, 10) for days in (1, 2, 7, 14, 28)),
)


def _time_ticks(start: datetime, end: datetime, x_of: Callable[[datetime], float]) -> tuple[Tick, ...]:
    """Ticks on round times (whole hours, UTC midnights) between ``start`` and ``end``; the two ends when none fits."""
    span = end - start
    step = next((step for step, most in _TICK_STEPS if span / step <= most), None)
    if step is None:  # longer than ten four-week steps: count in years
        return tuple(Tick(x_of(start + span * i / 4), (start + span * i / 4).strftime("%Y-%m-%d")) for i in range(5))
    epoch = datetime(1970, 1, 5, tzinfo=start.tzinfo)  # a Monday: week steps start on Mondays
    first = epoch + -((epoch - start) // step) * step  # the first multiple of step at or after start
    moments = [first + step * i for i in range(int((end - first) / step) + 1) if first + step * i <= end]
    if len(moments) < 2:  # under two hours: the window's ends, to the minute
        return tuple(Tick(x_of(at), at.strftime("%m-%d %H:%M")) for at in (start, end))
    fmt = "%m-%d %H:%M" if step < _DAY else ("%m-%d" if start.year == end.year else "%Y-%m-%d")
    return tuple(Tick(x_of(at), at.strftime(fmt)) for at in moments)


def reader_timeline(readers: ReadersView) -> Timeline:
    """The readers check's window as lanes of bars: coverage, then one lane per queue with sessions."""
    title = "Readers over the audit's window"
    start, end = readers.window_start, readers.window_end
    right = TIMELINE_WIDTH - LANE_RIGHT
    if start is None or end is None or end <= start:
        return Timeline(title, TIMELINE_WIDTH, 0, LANE_LEFT, LANE_TOP, right, LANE_TOP, BAR_HEIGHT, (), (), (), True)
    span = end - start

    def x_of(at: datetime) -> float:
        return round(LANE_LEFT + (min(max(at, start), end) - start) / span * (right - LANE_LEFT), 1)

    def extent(first: datetime | None, last: datetime | None) -> tuple[float, float] | None:
        """x and width of ``first``..``last`` clipped to the window (None: open ends); None when outside it."""
        if (first is not None and first > end) or (last is not None and last < start):
            return None
        x0, x1 = x_of(first or start), x_of(last or end)
        width = max(x1 - x0, MIN_WIDTH)
        return min(x0, right - width), round(width, 1)

    rows: list[tuple[str, str, list[tuple[float, float, str]]]] = []
    if readers.segments:
        covered = [(*e, _segment_title(s)) for s in readers.segments if (e := extent(s.start, s.end)) is not None]
        rows.append(("broker activity recorder", "lane-coverage", covered))
    by_queue: dict[str, list[tuple[float, float, str]]] = {}
    for session in readers.sessions:
        if (e := extent(session.attached_at, session.detached_at)) is not None:
            by_queue.setdefault(session.queue, []).append((*e, _session_title(session)))
    order = {label: index for index, label in enumerate(readers.queues)}
    for label in sorted(by_queue, key=lambda q: (order.get(q, len(order)), q)):
        rows.append((label, "lane-queue", by_queue[label]))
    if not by_queue:
        rows.append(("no reader in the window", "lane-queue", []))
    lanes = []
    for index, (label, css, bars) in enumerate(rows):
        y = LANE_TOP + index * LANE_HEIGHT
        bar_y = y + (LANE_HEIGHT - BAR_HEIGHT) / 2
        shown = printable(label)
        lanes.append(
            Lane(clipped(shown, LABEL_CHARS), shown, css, y, bar_y, tuple(Bar(x, bar_y, w, t) for x, w, t in bars))
        )
    bottom = LANE_TOP + len(rows) * LANE_HEIGHT
    gaps = tuple(Band(*e, _gap_title(g)) for g in readers.gaps if (e := extent(g.start, g.end)) is not None)
    ticks = _time_ticks(start, end, x_of)
    height = bottom + LANE_BOTTOM
    return Timeline(
        title, TIMELINE_WIDTH, height, LANE_LEFT, LANE_TOP, right, bottom, BAR_HEIGHT, tuple(lanes), gaps, ticks, False
    )


def _segment_title(segment: Span) -> str:
    ended = f"; it ended: {printable(segment.note)}" if segment.note else ""
    return f"the recorder covered {_at(segment.start)} to {_at(segment.end)}{ended}"


def _gap_title(gap: Span) -> str:
    reason = printable(gap.note) if gap.note else "no reason recorded"
    return f"gap {_at(gap.start)} to {_at(gap.end)}: nothing is known of readers ({reason})"
