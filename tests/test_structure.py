"""The package's structure, read from its source: imports point down, docs stay true and short.

* No import cycle among onnx_gather's modules: imports at module level, inside functions
  and under ``if TYPE_CHECKING:`` all count, and importing a module imports its parent
  packages too (their ``__init__``), except the importer's own ancestors, which Python
  has begun to import before it.
* Every Sphinx cross-reference in a docstring names something that exists.
* Module docstrings say what the module holds: a median of at most 5 lines, 15 at most.
* Comments and docstrings state reasons, not measurements: no Python source line carries
  a time or a speed ratio (docs/performance.md holds those, with how they were taken).

All of it is read with ``ast``: no module is imported, so no library needs to be installed.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import onnx_gather

PACKAGE = Path(onnx_gather.__file__).parent
ROOT = PACKAGE.parent


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _relative(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


@dataclass
class _Module:
    name: str
    path: Path
    tree: ast.Module
    is_package: bool
    #: Each name the module binds at its top level: a definition (its node) or an import
    #: (the dotted name it imports).
    names: dict[str, ast.AST | str] = field(default_factory=dict)

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]


def _load(package: Path = PACKAGE) -> dict[str, _Module]:
    modules = {}
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        name = _module_name(path, package.parent)
        modules[name] = _Module(name, path, tree, path.name == "__init__.py")
    for module in modules.values():
        module.names = _top_level_names(module, modules)
    return modules


def _resolve_from(module: _Module, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` names, its leading dots read as Python reads them."""
    if not node.level:
        return node.module or ""
    base = module.package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _top_level_names(module: _Module, modules: dict[str, _Module]) -> dict[str, ast.AST | str]:
    names: dict[str, ast.AST | str] = {}

    def bind(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names[node.name] = node
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    for leaf in ast.walk(target):
                        if isinstance(leaf, ast.Name):
                            names[leaf.id] = node
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names[node.target.id] = node
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        names[alias.asname] = alias.name
                    else:
                        top = alias.name.partition(".")[0]
                        names[top] = top
            elif isinstance(node, ast.ImportFrom):
                source = _resolve_from(module, node)
                for alias in node.names:
                    names[alias.asname or alias.name] = f"{source}.{alias.name}"
            elif isinstance(node, ast.If | ast.Try):
                bind(node.body)
                bind(node.orelse)
                for handler in getattr(node, "handlers", ()):
                    bind(handler.body)

    bind(module.tree.body)
    return names


# -- (a) no import cycle ------------------------------------------------------------------


def _imports(module: _Module, modules: dict[str, _Module]) -> set[str]:
    """The package's modules that ``module`` imports: anywhere in it, for any purpose.

    At module level, inside functions and under ``if TYPE_CHECKING:`` (an import only the
    type checker runs still ties the two modules: a circle through one is a circle the
    next refactoring makes real). Importing ``a.b.c`` runs ``a/__init__`` and
    ``a/b/__init__`` first: those are imported too, except the importer's own ancestors,
    which Python has begun to import before the importer.
    """
    found: set[str] = set()
    ancestors = {module.name.rsplit(".", n)[0] for n in range(1, module.name.count(".") + 1)}

    def add(name: str) -> None:
        parts = name.split(".")
        for cut in range(1, len(parts) + 1):
            imported = ".".join(parts[:cut])
            if imported in modules and imported != module.name and imported not in ancestors:
                found.add(imported)

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            source = _resolve_from(module, node)
            add(source)  # (``from a.b import c`` runs a.b's ``__init__`` whatever c is)
            for alias in node.names:
                # c may be a module of its own; a compiled one (``_kernels``) has no
                # source here and imports nothing back.
                add(f"{source}.{alias.name}")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(module.tree)
    return found


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return components


def _cycle(graph: dict[str, set[str]], members: list[str]) -> list[str]:
    """One cycle through the component's first member, as the modules along it."""
    start, inside = members[0], set(members)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        step = []
        for v in frontier:
            for w in sorted(graph[v] & inside):
                if w == start:
                    return [*paths[v], start]
                if w not in paths:
                    paths[w] = [*paths[v], w]
                    step.append(w)
        frontier = step
    return members  # (not reached: a component of several members has a cycle)


def _cycles(package: Path = PACKAGE) -> list[str]:
    """Each import cycle among the package's modules, as the modules along it."""
    modules = _load(package)
    graph = {name: _imports(module, modules) for name, module in modules.items()}
    return [
        " -> ".join(_cycle(graph, members)) for members in _components(graph) if len(members) > 1
    ]


def test_no_import_cycle() -> None:
    cycles = _cycles()
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


#: A package whose base module imports nothing of the package: each case adds one
#: import that points back up, the way it may be written, and the test must see it.
_UPWARD = {
    "inside a function": "def f():\n    from pkg.backends import numpy_backend\n",
    "for the type checker": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.backends import numpy_backend\n"
    ),
    "of a module whose package imports the base": (
        "def f():\n    from pkg.backends.numpy_backend import kernels\n"
    ),
}


@pytest.mark.parametrize("upward", list(_UPWARD))
def test_an_upward_import_is_a_cycle(tmp_path: Path, upward: str) -> None:
    """The cycle test sees an import that points back up, wherever it is written."""
    files = {
        "pkg/__init__.py": "",
        "pkg/base.py": "",
        "pkg/backends/__init__.py": "",
        "pkg/backends/numpy_backend/__init__.py": "from pkg import base\n",
        "pkg/backends/numpy_backend/kernels.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert _cycles(tmp_path / "pkg") == []
    (tmp_path / "pkg/base.py").write_text(_UPWARD[upward])
    assert _cycles(tmp_path / "pkg") == [
        "pkg.backends.numpy_backend -> pkg.base -> pkg.backends.numpy_backend"
    ]


# -- (b) cross-references -------------------------------------------------------------------

_ROLE = re.compile(r":(mod|func|class|meth|attr|data|obj|exc|const):`([^`]+)`")


def _docstrings(module: _Module) -> list[tuple[str, list[str], str]]:
    """Each docstring of ``module`` with the classes it sits in and where it is."""
    found = []

    def visit(node: ast.AST, classes: list[str], where: str) -> None:
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            text = ast.get_docstring(node, clean=False)
            if text:
                found.append((text, classes, where))
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, [*classes, child.name], f"{where}.{child.name}")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, classes, f"{where}.{child.name}")

    visit(module.tree, [], module.name)
    return found


class _Resolver:
    def __init__(self, modules: dict[str, _Module]) -> None:
        self.modules = modules

    def exists(self, dotted: str, depth: int = 0, *, imported: bool = False) -> bool:
        """Whether ``dotted`` names a module of the package or something one defines.

        A name a module only imports counts (``imported``) for names looked up from where
        the reference is, and for the package's public names; a full name must be where
        the object is defined (as Sphinx finds it), not where it is imported.
        """
        if depth > 10:
            return False
        if dotted in self.modules:
            return True
        for cut in range(dotted.count("."), 0, -1):
            parts = dotted.split(".")
            module_name, rest = ".".join(parts[:cut]), parts[cut:]
            if module_name in self.modules:
                return self._member(self.modules[module_name], rest, depth, imported)
        return False

    def _member(self, module: _Module, rest: list[str], depth: int, imported: bool) -> bool:
        bound = module.names.get(rest[0])
        if bound is None:
            return False
        if isinstance(bound, str):  # an import: what it imports
            if not (imported or depth or module.name == "onnx_gather"):
                return False
            if not bound.startswith("onnx_gather"):
                return True  # (another library's name: not the package's to check)
            return self.exists(".".join([bound, *rest[1:]]), depth + 1)
        if len(rest) == 1:
            return True
        if isinstance(bound, ast.ClassDef):
            return self._attribute(module, bound, rest[1:], depth)
        return False

    def _attribute(self, module: _Module, cls: ast.ClassDef, rest: list[str], depth: int) -> bool:
        if len(rest) != 1:
            return False
        if rest[0] in _class_members(cls):
            return True
        for base in cls.bases:  # inherited, from a base the package defines
            name = ast.unparse(base)
            first, _, more = name.partition(".")
            bound = module.names.get(first)
            if isinstance(bound, ast.ClassDef) and not more:
                if self._attribute(module, bound, rest, depth + 1):
                    return True
            elif isinstance(bound, str) and self.exists(
                ".".join(filter(None, [bound, more, rest[0]])), depth + 1
            ):
                return True
        return False


def _class_members(cls: ast.ClassDef) -> set[str]:
    members = set()
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            members.add(node.name)
            for inner in ast.walk(node):  # attributes set on self in a method
                if (
                    isinstance(inner, ast.Attribute)
                    and isinstance(inner.value, ast.Name)
                    and inner.value.id == "self"
                    and isinstance(inner.ctx, ast.Store)
                ):
                    members.add(inner.attr)
        elif isinstance(node, ast.Assign):
            members |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            members.add(node.target.id)
    return members


def _external(name: str) -> bool:
    """Whether ``name`` starts with another library's top-level module (numpy, jax)."""
    top = name.partition(".")[0]
    if top == "onnx_gather":
        return False
    if top in _OTHER_LIBRARIES or top in sys.stdlib_module_names:
        return True  # (whether or not this session installs it: NumPy's has no jax)
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


#: The libraries the package's docstrings may name, installed in some sessions only.
_OTHER_LIBRARIES = {
    "numpy", "torch", "jax", "jaxlib", "dask", "cupy", "array_api_compat",
    "array_api_strict", "onnx", "onnxruntime", "openvino", "hypothesis", "ml_dtypes",
    "triton", "onnxscript", "distributed",
}  # fmt: skip


def _target(text: str) -> str:
    """The target of a role's text: ``title <target>`` or the text, without ``~``/``!``."""
    match = re.search(r"<([^>]+)>$", text)
    target = match.group(1) if match else text
    return target.lstrip("~!").removesuffix("()")


def _candidates(module: _Module, classes: list[str], target: str) -> list[tuple[str, bool]]:
    """The full names ``target`` may mean in ``module`` (within ``classes``), each with
    whether a name the module imports counts (for a name looked up from the module).

    Leading dots count as in a relative import, from the module's package; a name without
    them is looked up as Sphinx does: in the enclosing classes, the module, then as given.
    """
    dots = len(target) - len(target.lstrip("."))
    rest = target[dots:]
    if dots:
        base = module.package.split(".")
        base = base[: len(base) - (dots - 1)]
        found = [(".".join([*base, rest]), False)]
        if dots == 1:  # Sphinx also tries the current module first
            found.insert(0, (f"{module.name}.{rest}", True))
        return found
    found = [
        (".".join([module.name, *classes[:i], rest]), True) for i in range(len(classes), -1, -1)
    ]
    return [*found, (rest, False)]


def _stale_references(modules: dict[str, _Module], module: _Module) -> list[str]:
    resolver = _Resolver(modules)
    stale = []
    for text, classes, where in _docstrings(module):
        for role, body in _ROLE.findall(text):
            target = _target(body)
            if not target.startswith(".") and _external(target):
                continue
            candidates = _candidates(module, classes, target)
            if not any(resolver.exists(c, imported=i) for c, i in candidates):
                stale.append(f"{where}: :{role}:`{body}`")
    return stale


def test_cross_references_resolve() -> None:
    modules = _load()
    stale = []
    for module in modules.values():
        stale += [f"{_relative(module.path)}: {ref}" for ref in _stale_references(modules, module)]
    assert not stale, "cross-references to nothing:\n" + "\n".join(stale)


# -- (c) short module docstrings ---------------------------------------------------------------

MEDIAN_LINES = 5
MAX_LINES = 15


def _docstring_lines(module: _Module) -> int:
    text = ast.get_docstring(module.tree)
    return len(text.splitlines()) if text else 0


def test_module_docstrings_are_short() -> None:
    lengths = {_relative(m.path): _docstring_lines(m) for m in _load().values()}
    long = sorted((n, p) for p, n in lengths.items() if n > MAX_LINES)
    assert not long, f"module docstrings over {MAX_LINES} lines:\n" + "\n".join(
        f"{p}: {n}" for n, p in long
    )
    median = statistics.median(lengths.values())
    over = sorted(((n, p) for p, n in lengths.items() if n > MEDIAN_LINES), reverse=True)
    assert median <= MEDIAN_LINES, (
        f"the median module docstring has {median} lines (at most {MEDIAN_LINES}); "
        "the ones over it:\n" + "\n".join(f"{p}: {n}" for n, p in over)
    )


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("onnx_gather._spec.Plan.addressed", True),
        ("onnx_gather._spec.gather.GatherPlan.addressed", True),  # inherited
        ("onnx_gather._spec.Plan.no_such_method", False),
        ("onnx_gather._no_such_module", False),
    ],
)
def test_resolver(target: str, expected: bool) -> None:
    """The resolver itself: it finds what exists and only that."""
    assert _Resolver(_load()).exists(target) is expected


# -- (d) no measurements in the source ----------------------------------------------------------

#: A measured time or speed: a duration (ns, us, µs, ms, s), a ratio (1.5x, 2-3x), a
#: percentage of speed, or a verb of timing before a number.
_MEASURED = re.compile(
    r"[0-9](\.[0-9]+)? ?(ns|us|µs|ms)\b|[0-9](\.[0-9]+)? s\b|[0-9](\.[0-9]+)?x\b"
    r"|[0-9]+% (slower|faster|of)|\b(took|costs?|ran|runs|compiled in) [0-9]"
    r"|x (native|slower|faster)\b"
)


#: A C comment (a timing hides there; C code such as ``npy_int64 s`` would read as one).
_C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def _measured_lines(package: Path = PACKAGE) -> list[str]:
    """Lines with a measured time: every line of the Python, the comments of the C kernel."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _MEASURED.search(line):
                found.append(f"{path.relative_to(package).as_posix()}:{number}: {line.strip()}")
    for path in sorted(p for p in package.rglob("*") if p.suffix in (".c", ".h")):
        text = path.read_text(encoding="utf-8")
        for comment in _C_COMMENT.finditer(text):
            first = text.count("\n", 0, comment.start()) + 1
            for offset, line in enumerate(comment.group().splitlines()):
                if _MEASURED.search(line):
                    where = f"{path.relative_to(package).as_posix()}:{first + offset}"
                    found.append(f"{where}: {line.strip()}")
    return found


def test_no_measurement_in_the_source() -> None:
    """Timings go stale with the next release: the source says why, docs say how much."""
    found = _measured_lines()
    assert not found, "measurements in the source (move them to docs/performance.md):\n" + (
        "\n".join(found)
    )


@pytest.mark.parametrize(
    ("line", "measured"),
    [
        ("# one pass: 2.3 against 5.7 us a call", True),
        ("# a refusal costs 25-50 µs", True),
        ("# ran 1.15-1.3x slower", True),
        ("# (about 0.1 s of compile time)", True),
        ("# 30% slower to compile", True),
        ("# at most 2**16 outputs; axis 0 of 8x4 data", False),
        ("x = torch.empty(*shape)  # the sizes as arguments", False),
    ],
)
def test_measurements_are_found(line: str, measured: bool) -> None:
    assert bool(_MEASURED.search(line)) is measured


def test_measurements_in_c_comments_are_found(tmp_path: Path) -> None:
    """The C kernel's comments are read; its code (``npy_int64 s``) is not."""
    (tmp_path / "og_x.c").write_text(
        "/* Why:\n * Tensor.numpy() costs ~0.5 us a tensor */\nnpy_int64 s = 4;\n"
        "static int x; // took 3 ms\n"
    )
    found = _measured_lines(tmp_path)
    assert [line.split(": ", 1)[0] for line in found] == ["og_x.c:2", "og_x.c:4"]
