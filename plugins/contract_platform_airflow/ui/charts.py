"""Time series -> SVG geometry, computed on the server: the template only draws what is here.

A ``Chart`` holds plot coordinates in SVG user units (the viewBox is ``0 0 width height``):
one polyline per series with a dot per point, axis ticks with labels, and an optional dashed
reference line (a target). No JavaScript, no library.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from contract_platform.views import Series

__all__ = ["Chart", "Dot", "Line", "Tick", "line_chart", "percent"]

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
