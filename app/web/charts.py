"""Small bar charts as inline SVG, drawn on the server: no script and no chart library, so the
strict CSP (no inline style, no inline script, nothing from elsewhere) holds. Colours come from
style.css classes; each bar carries a <title> (a tooltip, and read by screen readers), and the
chart names itself with role="img" and a summary. Pages also give the numbers as a table."""

from __future__ import annotations

from markupsafe import Markup, escape

from app.services.activity import Series

WIDTH, HEIGHT = 320, 140
LEFT, RIGHT, TOP, BOTTOM = 28, 6, 8, 20


def _plural(n: int, unit: str) -> str:
    return f"{n:,} {unit}{'' if n == 1 else 's'}"


def _day(d) -> str:
    return f"{d.day} {d.strftime('%b')}"


def bar_chart(series: Series, chart_id: str) -> Markup:
    """One bar a day; the y axis runs from 0 to the largest day (at least 1)."""
    top = max(max(series.values, default=0), 1)
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = inner_w / max(len(series.values), 1)
    bar_w = max(step * 0.7, 1)
    bars = []
    for n, (day, value) in enumerate(zip(series.days, series.values, strict=True)):
        h = inner_h * value / top
        x = LEFT + n * step + (step - bar_w) / 2
        y = TOP + inner_h - h
        bars.append(
            f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{max(h, 0):.1f}">'
            f"<title>{escape(_day(day))}: {escape(_plural(value, series.unit))}</title></rect>"
        )
    summary = (
        f"{series.label}, last {len(series.values)} days, {_day(series.days[0])} to {_day(series.days[-1])}: "
        f"{_plural(series.total, series.unit)} in all, at most {max(series.values, default=0):,} a day."
    )
    base = TOP + inner_h
    svg = (
        f'<svg class="chart" id="{escape(chart_id)}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-labelledby="{escape(chart_id)}-title {escape(chart_id)}-desc">'
        f'<title id="{escape(chart_id)}-title">{escape(series.label)}</title>'
        f'<desc id="{escape(chart_id)}-desc">{escape(summary)}</desc>'
        f'<line class="axis" x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}"/>'
        f'<line class="grid" x1="{LEFT}" y1="{TOP}" x2="{WIDTH - RIGHT}" y2="{TOP}"/>'
        f'<text class="tick" x="{LEFT - 4}" y="{TOP + 4}" text-anchor="end">{top:,}</text>'
        f'<text class="tick" x="{LEFT - 4}" y="{base}" text-anchor="end">0</text>'
        + "".join(bars)
        + f'<text class="tick" x="{LEFT}" y="{HEIGHT - 6}">{escape(_day(series.days[0]))}</text>'
        f'<text class="tick" x="{WIDTH - RIGHT}" y="{HEIGHT - 6}" text-anchor="end">{escape(_day(series.days[-1]))}</text>'
        "</svg>"
    )
    return Markup(svg)  # noqa: S704 - every text above is escaped; the rest are numbers
