"""Page layout shared by the report's modules: text and table pages for the PDF, HTML fragments, atomic writes."""

from __future__ import annotations

import html
import os
import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

__all__ = [
    "CSS", "ROW_H", "draw_lines", "draw_table", "html_list", "html_page", "html_table", "table_pages", "text_page",
    "write_text",
]  # fmt: skip

CSS = (
    "body{font-family:sans-serif;margin:1.5em;max-width:70em}table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-size:90%}th{background:#f3f3f3}"
    "li{margin:.35em 0}"
)


def html_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "<p>(empty)</p>"
    return df.to_html(index=not isinstance(df.index, pd.RangeIndex), border=0, escape=True)


def write_text(path: str | Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def text_page(title: str, lines: list[str], subtitle: str = "") -> plt.Figure:
    fig = plt.figure(figsize=(8.27, 11.69))
    fig.text(0.07, 0.95, title, fontsize=18, weight="bold", va="top")
    y = 0.91
    if subtitle:
        for part in textwrap.wrap(subtitle, 95):
            fig.text(0.07, y, part, fontsize=9, color="#444444", va="top")
            y -= 0.018
        y -= 0.01
    for line in lines:
        wrapped = textwrap.wrap(line, 92) or [""]
        for i, part in enumerate(wrapped):
            fig.text(0.07, y, ("• " if i == 0 else "  ") + part, fontsize=9.5, va="top")
            y -= 0.019
        y -= 0.008
        if y < 0.05:
            break
    return fig


def table_pages(
    title: str, table: pd.DataFrame, rows_per_page: int = 40, widths: Sequence[float] | None = None
) -> list[plt.Figure]:
    if table.empty:
        return [text_page(title, ["(no rows)"])]
    t = table.reset_index() if not isinstance(table.index, pd.RangeIndex) else table
    cells = t.astype(str).values.tolist()
    pages = []
    for start in range(0, len(cells), rows_per_page):
        chunk = cells[start : start + rows_per_page]
        fig = plt.figure(figsize=(8.27, 11.69))
        rows = f" (rows {start + 1}-{start + len(chunk)})" if len(cells) > rows_per_page else ""
        fig.text(0.07, 0.96, title + rows, fontsize=14, weight="bold", va="top")
        ax = fig.add_axes((0.05, 0.05, 0.9, 0.87))
        ax.axis("off")
        tab = ax.table(
            cellText=chunk, colLabels=[str(c) for c in t.columns], loc="upper center", cellLoc="left",
            colWidths=list(widths) if widths else None,
        )  # fmt: skip
        tab.auto_set_font_size(False)
        tab.set_fontsize(7)
        tab.scale(1.0, 1.25)
        pages.append(fig)
    return pages


ROW_H = 0.0165  # a table row's height, as a share of the A4 page


def draw_table(fig: plt.Figure, top: float, cells: list[list[str]], columns: Sequence[str] | None,
                widths: Sequence[float], height: float | None = None) -> float:  # fmt: skip
    """A table from ``top`` down (``height``: default one :data:`ROW_H` per row); returns where it ends."""
    rows = len(cells) + (1 if columns else 0)
    height = height or ROW_H * rows
    ax = fig.add_axes((0.05, top - height, 0.9, height))
    ax.axis("off")
    tab = ax.table(
        cellText=cells, colLabels=list(columns) if columns else None, cellLoc="left", colWidths=list(widths),
        bbox=[0, 0, 1, 1],
    )  # fmt: skip
    tab.auto_set_font_size(False)
    tab.set_fontsize(7)
    return top - height


def draw_lines(fig: plt.Figure, top: float, lines: Sequence[str], width: int = 100) -> float:
    y = top
    for line in lines:
        for i, part in enumerate(textwrap.wrap(line, width) or [""]):
            fig.text(0.07, y, ("• " if i == 0 else "  ") + part, fontsize=8, va="top")
            y -= 0.015
        y -= 0.004
    return y


def html_page(title: str, body: str) -> str:
    """A standalone HTML page (the HTML report's entries) around ``body``."""
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body>{body}</body></html>"
    )


def html_list(lines: Sequence[str]) -> str:
    return "<ul>" + "".join(f"<li>{html.escape(s)}</li>" for s in lines) + "</ul>"
