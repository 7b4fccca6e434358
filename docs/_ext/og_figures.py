"""Sphinx extension: draw the operator figures of ``docs/operators/`` from onnx_gather itself.

Each figure runs the library on small NumPy arrays and draws what it returned, so a figure
cannot disagree with the code. The SVGs go to ``_static/figures/`` (git-ignored) when the
builder starts, before any page is read: vector drawings, sharp at any zoom, each drawn at
the size it is shown (about 40 px a cell).
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Rectangle
from matplotlib.path import Path as ArrowPath
from sphinx.util import logging

import onnx_gather as og
from onnx_gather import openvino

if TYPE_CHECKING:
    from sphinx.application import Sphinx

LOGGER = logging.getLogger(__name__)

#: Where a figure is drawn, relative to the Sphinx source folder.
FIGURES = Path("_static") / "figures"
#: Inches per cell: a cell is drawn 0.42 in (30 pt, 40 CSS px) wide, which holds a
#: number of four characters at FONT points.
CELL = 0.42
FONT = 10
#: Colours for the groups of cells that belong together (an update and its target, a
#: data cell and the output cells that read it). Light, so the numbers stay readable.
PALETTE = [
    "#8ecae6", "#ffb703", "#90be6d", "#f4a6a6", "#cdb4db",
    "#f9c74f", "#72efdd", "#ffafcc", "#b5e48c", "#e0c3a0",
]  # fmt: skip
#: A cell the operator does not touch, and one that holds no data value (a zero fill).
PLAIN = "#ffffff"
EMPTY = "#d9d9d9"
#: Space between two panels (arrows run down it) and above a panel (its label), in cells.
GAP = 1.3
LABEL = 0.6
#: The top band of a row, where arrows run along it (from ALONG to BAND below its top
#: edge), and where an arrow's head stops, in cells: all above the cell's number, which
#: is centred (a 10-point digit spans about 0.38 to 0.62 of the cell).
ALONG = 0.07
BAND = 0.24
HEAD = 0.3
#: The width of one character of the title (monospace) and of the note, in cells.
MONO = 0.2
SANS = 0.17

Cell = tuple[int, int]


@dataclass
class _Panel:
    """One labelled grid of numbers: its cells' text and their fill colours."""

    label: str
    text: list[list[str]]
    colours: list[list[str]]
    hatched: set[Cell] = field(default_factory=set)
    x: float = 0.0  # (set by the layout)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.text), len(self.text[0]) if self.text else 0


@dataclass
class _Arrow:
    """An arrow from a cell of one panel to a cell of another; ``loser`` draws it faint."""

    start: tuple[int, Cell]
    end: tuple[int, Cell]
    colour: str
    loser: bool = False


def _grid(values: np.ndarray, *, vertical: bool = True) -> np.ndarray:
    """The array as a 2-D grid: a vector stands as a column (or a row), index tuples in a cell."""
    if values.ndim == 0:
        return values.reshape(1, 1)
    if values.ndim == 1:
        return values.reshape(-1, 1) if vertical else values.reshape(1, -1)
    return values


def _panel(
    label: str,
    values: np.ndarray,
    colours: dict[Cell, str] | None = None,
    *,
    vertical: bool = True,
    tuples: bool = False,
    hatched: set[Cell] | None = None,
) -> _Panel:
    """A panel of ``values``; with ``tuples`` the last dim is an index tuple shown in one cell."""
    if tuples:
        flat = values.reshape(-1, values.shape[-1])
        text = np.array([",".join(str(v) for v in row) for row in flat], dtype=object)
        grid = _grid(text.reshape(values.shape[:-1]), vertical=vertical)
    else:
        grid = _grid(values, vertical=vertical)
    colours = colours or {}
    rows, cols = grid.shape
    return _Panel(
        label,
        [[str(grid[r, c]) for c in range(cols)] for r in range(rows)],
        [[colours.get((r, c), PLAIN) for c in range(cols)] for r in range(rows)],
        hatched or set(),
    )


def _draw(
    title: str, panels: Sequence[_Panel], arrows: Sequence[_Arrow] = (), note: str = ""
) -> bytes:
    """Lay the panels out left to right, top-aligned, draw the arrows; the SVG's bytes."""
    x = 0.0
    for panel in panels:
        panel.x = x
        x += panel.shape[1] + GAP
    width = x - GAP
    # The title (monospace) and the note may be wider than the panels: the figure is as
    # wide as the widest, the panels centred under the title.
    text_width = max(len(title) * MONO, len(note) * SANS)
    shift = max(0.0, (text_width - width) / 2)
    for panel in panels:
        panel.x += shift
    width += 2 * shift
    height = max(panel.shape[0] for panel in panels)
    top = LABEL + 0.75  # the title and the panels' labels
    bottom = 0.75 if note else 0.2
    # A bare Figure, not pyplot: it draws whatever the display, and keeps no global state
    # between figures. The hash salt fixes the SVG's ids: the same figure, the same bytes.
    with matplotlib.rc_context({"svg.hashsalt": "og_figures", "svg.fonttype": "path"}):
        fig = Figure(figsize=((width + 0.4) * CELL, (height + top + bottom) * CELL))
        ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
        for panel in panels:
            _draw_panel(ax, panel)
        for arrow in arrows:
            _draw_arrow(ax, panels, arrow, arrows)
        ax.text(width / 2, -LABEL - 0.45, title, ha="center", va="center", fontsize=FONT,
                family="monospace")  # fmt: skip
        if note:
            ax.text(width / 2, height + 0.4, note, ha="center", va="center",
                    fontsize=FONT - 1, color="#333333")  # fmt: skip
        ax.set_xlim(-0.2, width + 0.2)
        ax.set_ylim(height + bottom, -top)  # (rows grow downwards)
        ax.axis("off")
        buffer = io.BytesIO()
        # No date in the file: the same figure gives the same bytes (see _write).
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()


def _draw_panel(ax: Any, panel: _Panel) -> None:
    rows, cols = panel.shape
    ax.text(panel.x + cols / 2, -LABEL / 2, panel.label, ha="center", va="center",
            fontsize=FONT - 1, color="#333333")  # fmt: skip
    for r in range(rows):
        for c in range(cols):
            ax.add_patch(
                Rectangle(
                    (panel.x + c, r),
                    1,
                    1,
                    facecolor=panel.colours[r][c],
                    edgecolor="#555555",
                    linewidth=0.8,
                    hatch="///" if (r, c) in panel.hatched else None,
                )
            )
            text = panel.text[r][c]
            size = FONT - max(0, min(2, len(text) - 3))
            ax.text(panel.x + c + 0.5, r + 0.5, text, ha="center", va="center", fontsize=size)


def _lane(arrow: _Arrow, arrows: Sequence[_Arrow], end: str) -> float:
    """How far below its row's top edge ``arrow`` runs along the row of its ``end``.

    Arrows that leave (or enter) one row each get a lane of their own, all of them in
    the top band of the row, above the cells' numbers.
    """
    panel, (row, _) = getattr(arrow, end)
    same = [a for a in arrows if getattr(a, end)[0] == panel and getattr(a, end)[1][0] == row]
    return ALONG + (BAND - ALONG) * (same.index(arrow) / max(1, len(same) - 1))


def _draw_arrow(ax: Any, panels: Sequence[_Panel], arrow: _Arrow, arrows: Sequence[_Arrow]) -> None:
    """An arrow that runs around cells, never across a number.

    It starts at a dot in the top band of its update's cell, runs right along that band
    to the gap before the target's panel (each arrow down a lane of its own), along the
    top band of the target's row, and ends just inside the target cell, above its number.
    """
    (p0, (r0, c0)), (p1, (r1, c1)) = arrow.start, arrow.end
    source, target = panels[p0], panels[p1]
    colour = "#9a9a9a" if arrow.loser else "#222222"
    start = (source.x + c0 + 0.5, r0 + _lane(arrow, arrows, "start"))
    gap = target.x - GAP + GAP * (arrows.index(arrow) + 1) / (len(arrows) + 1)
    # Arrows into one cell end side by side.
    into = [a for a in arrows if a.end == arrow.end]
    spread = 0.0 if len(into) == 1 else (into.index(arrow) / (len(into) - 1) - 0.5) * 0.4
    end_x = target.x + c1 + 0.5 + spread
    along = r1 + _lane(arrow, arrows, "end")
    path = ArrowPath(
        [start, (gap, start[1]), (gap, along), (end_x, along), (end_x, r1 + HEAD)],
        [ArrowPath.MOVETO] + [ArrowPath.LINETO] * 4,
    )
    style = (0, (2, 2)) if arrow.loser else "-"
    ax.add_patch(
        FancyArrowPatch(
            path=path,
            arrowstyle="-|>",
            mutation_scale=9,
            color=colour,
            linestyle=style,
            linewidth=1.0,
            zorder=3,
        )
    )
    ax.plot(*start, marker="o", markersize=3, color=colour, zorder=3)


def _colour_of(groups: Sequence[Any]) -> dict[Any, str]:
    """One palette colour per distinct group, in order of first appearance."""
    order = list(dict.fromkeys(groups))
    return {group: PALETTE[i % len(PALETTE)] for i, group in enumerate(order)}


# Gathers: each output cell is coloured like the data cell it reads. Which cell that is
# comes from the library: gathering from ``codes`` (every cell holds its own flat
# position, plus one so that 0 can mean "read nothing") names the source of each output.


def _sources(gather: Callable[[np.ndarray], np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    """Each output element's source: the flat data position it reads, or -1 (a fill)."""
    codes = np.arange(1, int(np.prod(shape)) + 1).reshape(shape)
    return np.asarray(gather(codes)) - 1


def _gather_figure(
    title: str,
    data: np.ndarray,
    indices: np.ndarray,
    gather: Callable[[np.ndarray], np.ndarray],
    *,
    index_cells: Callable[[Cell], Cell] | None = None,
    vertical: bool = True,
    tuples: bool = False,
    group: Callable[[Cell], Any] = lambda cell: cell,
    note: str = "",
) -> bytes:
    """Data, indices and output, each output cell in the colour of the data cell it reads.

    ``group`` maps a data cell to its colour group (a Gather reads whole slices: one colour
    per slice reads best); ``index_cells`` maps an output cell to the indices cell that
    chose it, which takes the same colour.
    """
    output = np.asarray(gather(data))
    sources = _grid(_sources(gather, data.shape))
    cols = data.shape[1]
    out_colours: dict[Cell, str] = {}
    data_colours: dict[Cell, str] = {}
    index_colours: dict[Cell, str] = {}
    hatched: set[Cell] = set()
    index_hatched: set[Cell] = set()
    colour = _colour_of([group(divmod(int(s), cols)) for s in sources.ravel() if s >= 0])
    for (r, c), source in np.ndenumerate(sources):
        if source < 0:
            out_colours[r, c] = EMPTY
            hatched.add((r, c))
            if index_cells is not None:
                index_colours[index_cells((r, c))] = EMPTY
                index_hatched.add(index_cells((r, c)))
            continue
        cell = divmod(int(source), cols)
        out_colours[r, c] = data_colours[cell] = colour[group(cell)]
        if index_cells is not None:
            index_colours[index_cells((r, c))] = colour[group(cell)]
    panels = [
        _panel("data", data, data_colours),
        _panel(
            "indices",
            indices,
            index_colours,
            vertical=vertical,
            tuples=tuples,
            hatched=index_hatched,
        ),
        _panel("output", output, out_colours, hatched=hatched),
    ]
    return _draw(title, panels, note=note)


# Scatters: an arrow runs from each update to the element it lands on. The target comes
# from the library too: scattering (reduction "add", onto zeros) an update array that is
# one only at one position marks that update's target.


def _targets(
    scatter: Callable[[np.ndarray, np.ndarray], np.ndarray],
    shape: tuple[int, ...],
    updates: np.ndarray,
) -> dict[tuple[int, ...], list[tuple[int, ...]]]:
    """For each update position, the output positions it lands on."""
    targets = {}
    for position in np.ndindex(updates.shape):
        one = np.zeros(updates.shape, np.int64)
        one[position] = 1
        landed = np.asarray(scatter(np.zeros(shape, np.int64), one))
        targets[position] = [tuple(int(i) for i in t) for t in np.argwhere(landed)]
    return targets


def _scatter_figure(
    title: str,
    data: np.ndarray,
    indices: np.ndarray,
    updates: np.ndarray,
    scatter: Callable[..., np.ndarray],
    *,
    reduction: str = "none",
    group: Callable[[tuple[int, ...]], Any] = lambda position: position,
    index_cell: Callable[[tuple[int, ...]], tuple[int, ...]] = lambda position: position,
    labels: tuple[str, str, str, str] = ("data", "indices", "updates", "output"),
    tuples: bool = False,
    note: str = "",
) -> bytes:
    """Data, indices, updates and output, with an arrow from each update to its target.

    ``scatter(data, updates, reduction=...)`` runs the operator. With ``reduction="none"``,
    an update that another one overwrites (a duplicate index) gets a faint dashed arrow and
    a hatched cell: which one wins is read from the library's own result.
    """
    output = np.asarray(scatter(data, updates, reduction=reduction))
    targets = _targets(lambda d, u: scatter(d, u, reduction="add"), data.shape, updates)
    # Which update wins an element: scatter distinct codes (1, 2, ...) onto zeros.
    codes = np.arange(1, updates.size + 1).reshape(updates.shape)
    winners = np.asarray(scatter(np.zeros(data.shape, np.int64), codes, reduction="none"))
    colour = _colour_of([group(p) for p in np.ndindex(updates.shape)])

    update_colours: dict[Cell, str] = {}
    index_colours: dict[Cell, str] = {}
    out_colours: dict[Cell, str] = {}
    data_colours: dict[Cell, str] = {}
    hatched: set[Cell] = set()
    arrows: list[_Arrow] = []
    sums: dict[Cell, list[int]] = {}

    def as_cell(position: tuple[int, ...]) -> Cell:
        return _cell(position, updates.ndim)

    for number, (position, landed) in enumerate(targets.items(), start=1):
        c = colour[group(position)]
        update_colours[as_cell(position)] = c
        index_colours[_cell(index_cell(position), max(indices.ndim - tuples, 1))] = c
        for target in landed:
            cell = _cell(target, data.ndim)
            loser = reduction == "none" and int(winners[target]) != number
            if loser:
                hatched.add(as_cell(position))
                winner = np.unravel_index(int(winners[target]) - 1, updates.shape)
                note = note or (
                    f"updates {int(updates[position])} and {int(updates[winner])} both land on"
                    f" output{list(cell)}: the last in C order wins"
                )
            else:
                out_colours[cell] = c
            data_colours.setdefault(cell, EMPTY)
            sums.setdefault(cell, []).append(int(updates[position]))
            arrows.append(_Arrow((2, as_cell(position)), (3, cell), c, loser))
    if reduction == "add":
        # Spell out one element that several updates add to: the reduction at work.
        for cell, added in sums.items():
            if len(added) > 1:
                terms = " + ".join(str(v) for v in [int(data[cell]), *added])
                note = f"output{list(cell)} = data {terms} = {int(output[cell])}"
                break
    panels = [
        _panel(labels[0], data, data_colours),
        _panel(labels[1], indices, index_colours, tuples=tuples),
        _panel(labels[2], updates, update_colours, hatched=hatched),
        _panel(labels[3], output, out_colours),
    ]
    return _draw(title, panels, _one_per_slice(arrows), note)


def _one_per_slice(arrows: list[_Arrow]) -> list[_Arrow]:
    """Where a whole slice moves (a row of ScatterND), one arrow for it, not one per cell.

    Eight parallel arrows hide the picture; the colours already pair the cells. The one
    arrow runs from the slice's last update to its leftmost target. A slice whose targets
    are not side by side in one row (a circular TensorScatter that wraps around) keeps an
    arrow per cell: where it lands is the point of the figure.
    """
    by_colour: dict[str, list[_Arrow]] = {}
    for arrow in arrows:
        by_colour.setdefault(arrow.colour, []).append(arrow)
    kept = []
    for group in by_colour.values():
        ends = [arrow.end for arrow in group]
        rows = {row for _, (row, _) in ends}
        columns = [column for _, (_, column) in ends]
        side_by_side = len(rows) == 1 and columns == list(range(columns[0], columns[0] + len(ends)))
        if len(group) == 1 or any(arrow.loser for arrow in group) or not side_by_side:
            kept.extend(group)
            continue
        leftmost = min(group, key=lambda arrow: arrow.end[1][1])
        kept.append(_Arrow(group[-1].start, leftmost.end, group[-1].colour))
    return kept


def _cell(position: tuple[int, ...], ndim: int) -> Cell:
    """A position of an array of rank 1 or 2 as a cell of its (column-shaped) grid."""
    return (int(position[0]), 0) if ndim == 1 else (int(position[0]), int(position[1]))


# The figures. Each title is the call that the figure shows.


def _gather_axis0() -> bytes:
    data = np.arange(12).reshape(3, 4)
    indices = np.array([2, 0])
    return _gather_figure(
        "og.gather(data, [2, 0], axis=0)",
        data,
        indices,
        lambda d: og.gather(d, indices, axis=0),
        index_cells=lambda cell: (cell[0], 0),
        group=lambda cell: cell[0],
    )


def _gather_axis1_negative() -> bytes:
    data = np.arange(12).reshape(3, 4)
    indices = np.array([-1, 1])
    return _gather_figure(
        "og.gather(data, [-1, 1], axis=1)",
        data,
        indices,
        lambda d: og.gather(d, indices, axis=1),
        index_cells=lambda cell: (0, cell[1]),
        vertical=False,
        group=lambda cell: cell[1],
        note="index -1 counts from the end: it reads column 3",
    )


def _gather_elements_axis1() -> bytes:
    data = np.arange(12).reshape(3, 4)
    indices = np.array([[3, 0], [1, -1], [2, 2]])
    return _gather_figure(
        "og.gather_elements(data, indices, axis=1)",
        data,
        indices,
        lambda d: og.gather_elements(d, indices, axis=1),
        index_cells=lambda cell: cell,
    )


def _gather_nd_elements() -> bytes:
    data = np.arange(12).reshape(3, 4)
    indices = np.array([[0, 1], [2, -1]])
    return _gather_figure(
        "og.gather_nd(data, [[0, 1], [2, -1]])",
        data,
        indices,
        lambda d: og.gather_nd(d, indices),
        index_cells=lambda cell: (cell[0], 0),
        tuples=True,
        note="each tuple (row, column) picks one element; -1 is the last column",
    )


def _gather_nd_rows() -> bytes:
    data = np.arange(12).reshape(3, 4)
    indices = np.array([[2], [0]])
    return _gather_figure(
        "og.gather_nd(data, [[2], [0]])",
        data,
        indices,
        lambda d: og.gather_nd(d, indices),
        index_cells=lambda cell: (cell[0], 0),
        tuples=True,
        group=lambda cell: cell[0],
        note="a tuple of one coordinate picks a whole row",
    )


def _gather_nd_batch() -> bytes:
    data = np.arange(12).reshape(3, 4)
    indices = np.array([[2], [0], [-1]])
    return _gather_figure(
        "og.gather_nd(data, [[2], [0], [-1]], batch_dims=1)",
        data,
        indices,
        lambda d: og.gather_nd(d, indices, batch_dims=1),
        index_cells=lambda cell: (cell[0], 0),
        tuples=True,
        note="batch entry b reads only row b of data",
    )


def _scatter_elements(reduction: str) -> bytes:
    """ScatterElements along axis 1 with duplicates (row 0 writes column 1 twice)."""
    data = np.arange(12).reshape(3, 4)
    indices = np.array([[1, 1], [0, 3], [2, 2]])
    updates = np.array([[50, 51], [60, 61], [70, 71]])
    given = "" if reduction == "none" else f', reduction="{reduction}"'
    return _scatter_figure(
        f"og.scatter_elements(data, indices, updates, axis=1{given})",
        data,
        indices,
        updates,
        lambda d, u, reduction: og.scatter_elements(d, indices, u, axis=1, reduction=reduction),
        reduction=reduction,
    )


def _scatter_elements_none() -> bytes:
    return _scatter_elements("none")


def _scatter_elements_add() -> bytes:
    return _scatter_elements("add")


def _scatter_nd_rows() -> bytes:
    data = np.arange(12).reshape(3, 4)
    indices = np.array([[2], [0]])
    updates = np.array([[90, 91, 92, 93], [50, 51, 52, 53]])
    return _scatter_figure(
        "og.scatter_nd(data, [[2], [0]], updates)",
        data,
        indices,
        updates,
        lambda d, u, reduction: og.scatter_nd(d, indices, u, reduction=reduction),
        group=lambda position: position[0],
        index_cell=lambda position: (position[0], 0),
        tuples=True,
    )


def _tensor_scatter(mode: str, update: np.ndarray, write_indices: np.ndarray, note: str) -> bytes:
    cache = np.zeros((3, 5), np.int64)

    def run(d: np.ndarray, u: np.ndarray, reduction: str) -> np.ndarray:
        # TensorScatter has no reduction; its writes never meet, so "add" onto zeros
        # (what _targets asks for) is the same as a plain write of ``u`` onto zeros.
        del reduction
        return np.asarray(og.tensor_scatter(d, u, write_indices, axis=1, mode=mode))

    return _scatter_figure(
        f"og.tensor_scatter(cache, update, {write_indices.tolist()}, axis=1, mode={mode!r})",
        cache,
        write_indices,
        update,
        run,
        group=lambda position: position[0],
        index_cell=lambda position: (position[0],),
        labels=("past_cache", "write_indices", "update", "present"),
        note=note,
    )


def _tensor_scatter_linear() -> bytes:
    return _tensor_scatter(
        "linear",
        np.array([[1], [2], [3]]),
        np.array([0, 2, 4]),
        "batch entry b writes its update at position write_indices[b]",
    )


def _tensor_scatter_circular() -> bytes:
    return _tensor_scatter(
        "circular",
        np.array([[1, 2], [3, 4], [5, 6]]),
        np.array([0, 2, 4]),
        "entry 2 writes positions 4 and 5; 5 wraps around to 0",
    )


def _openvino_gather8() -> bytes:
    data = np.arange(1, 13).reshape(3, 4)
    indices = np.array([1, -1, 4, -5])
    return _gather_figure(
        "openvino.gather(data, [1, -1, 4, -5], axis=1)",
        data,
        indices,
        lambda d: openvino.gather(d, indices, axis=1),
        index_cells=lambda cell: (0, cell[1]),
        vertical=False,
        group=lambda cell: cell[1],
        note="4 and -5 are out of range for size 4: Gather-8 gives zeros (hatched)",
    )


#: Every figure, by its file name (without .svg).
DRAWINGS: dict[str, Callable[[], bytes]] = {
    "gather_axis0": _gather_axis0,
    "gather_axis1_negative": _gather_axis1_negative,
    "gather_elements_axis1": _gather_elements_axis1,
    "gather_nd_elements": _gather_nd_elements,
    "gather_nd_rows": _gather_nd_rows,
    "gather_nd_batch_dims": _gather_nd_batch,
    "scatter_elements_duplicates": _scatter_elements_none,
    "scatter_elements_add": _scatter_elements_add,
    "scatter_nd_rows": _scatter_nd_rows,
    "tensor_scatter_linear": _tensor_scatter_linear,
    "tensor_scatter_circular": _tensor_scatter_circular,
    "openvino_gather8_out_of_range": _openvino_gather8,
}


def _write(path: Path, content: bytes) -> None:
    """Write only what changed: Sphinx rereads a page whose image is newer than it."""
    if not path.exists() or path.read_bytes() != content:
        path.write_bytes(content)


def draw_figures(folder: Path) -> float:
    """Draw every figure into ``folder`` (created, and git-ignored); the seconds it took."""
    start = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    _write(folder / ".gitignore", b"*\n")
    drawn = {f"{name}.svg" for name in DRAWINGS} | {".gitignore"}
    for stale in folder.iterdir():  # a figure renamed or removed: not copied to the site
        if stale.name not in drawn:
            stale.unlink()
    for name, drawing in DRAWINGS.items():
        _write(folder / f"{name}.svg", drawing())
    return time.perf_counter() - start


def _on_builder_inited(app: Sphinx) -> None:
    seconds = draw_figures(Path(app.srcdir) / FIGURES)
    LOGGER.info(f"og_figures: {len(DRAWINGS)} figures in {seconds:.1f} s")


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the figure drawing with Sphinx."""
    app.connect("builder-inited", _on_builder_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
