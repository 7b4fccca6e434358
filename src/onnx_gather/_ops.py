"""The registry of operators: each operator of the family described once (:class:`Operator`).

The generic layers read it and never ask which operator they run.
"""

from __future__ import annotations

import importlib
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from onnx_gather._memo import Memo
from onnx_gather._spec import gather as _gather
from onnx_gather._spec import gather_elements as _gather_elements
from onnx_gather._spec import gather_nd as _gather_nd
from onnx_gather._spec import openvino_scatter as _openvino_scatter
from onnx_gather._spec import scatter as _scatter
from onnx_gather._spec import scatter_elements as _scatter_elements
from onnx_gather._spec import scatter_nd as _scatter_nd
from onnx_gather._spec import tensor_scatter as _tensor_scatter

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from onnx_gather._spec import Plan


@dataclass(frozen=True, eq=False)
class Operator:
    """One operator of the family: everything the generic layers need to know about it.

    The public functions, ``_api.run``, the command line, the conformance runner and its
    peers, the test tables, the benchmarks and :func:`onnx_gather.run_node` read it.
    OpenVINO's GatherElements-6 is a variant in the registry: its own name, one version
    (6), no opset argument, and equal dims off the axis; it computes what ONNX
    GatherElements does.

    Attributes
    ----------
    name : str
        The public function that runs it: ``"gather"``, ``"openvino.gather_elements"``.
    op_type : str
        The ONNX node type that computes it (OpenVINO's variant: ``"GatherElements"``).
    label : str
        Its name in messages, before the version: ``"Gather"`` gives ``"Gather-13"``.
    versions : dict of int to str
        Each version and what it adds, oldest first.
    bfloat16_from : int or None
        The first version whose data types include bfloat16; None where none does
        (Scatter).
    default_opset : int or None
        The public function's default ``opset``; None where the function takes no opset
        (one version only: OpenVINO's).
    inputs : tuple of str
        The inputs' roles, in the public function's and the ONNX node's order: ``data``,
        ``indices`` (and ``updates`` for scatters; TensorScatter's come before its indices).
    attributes : tuple of (str, int, str or None)
        Each attribute and its default (None: required).
    attribute_since : dict of str to int
        Attributes that a version introduced: a non-default value before it is an error.
    planner : callable
        ``planner(op, version, shapes, dtypes, attributes, check_bounds) -> Plan``.
    method : str
        The backend method that runs a plan: ``backend.<method>(*arrays, plan)``.
    oracle : str
        ``module:attribute`` of its loop oracle (an ``Oracle``), imported on use.
    strategy : str
        ``module:attribute`` of its hypothesis example strategy, imported on use.
    adjoint : str or None
        Its pair in the family, for docs: a gather's gradient is its pair's scatter-add, a
        scatter's gradient to updates is its pair's gather.
    onnx_opset : int or None
        The opset of the ONNX node that computes a variant (OpenVINO's: 13); None: the
        call's own opset.
    equal_off_axis : bool
        GatherElements' variant rule: off the axis the indices' dims must equal data's.
    onnx_index_types : tuple of str
        The index types ONNX lists for the operator (the library takes int32 and int64 for
        all: int32 is JAX's default integer and exact in int64); an ONNX model of the
        operator takes its indices as the widest of these.
    optional_inputs : tuple of str
        The roles of inputs an ONNX node may leave out (TensorScatter's write indices).
    input_names : tuple of str
        The inputs as the operator's text names them, in node order (TensorScatter's
        ``past_cache, update, write_indices``), for messages; empty: the roles.
    opset_keyword : str
        The public function's keyword that selects the version: ``opset``, or
        ``version`` for OpenVINO's (its opset).
    bounded : bool
        Whether an index can be out of range (the public function takes ``check_bounds``);
        False where the operator defines a value for every index (OpenVINO's Gather:
        zeros).
    """

    name: str
    op_type: str
    label: str
    versions: dict[int, str]
    bfloat16_from: int | None
    default_opset: int | None
    inputs: tuple[str, ...]
    attributes: tuple[tuple[str, int | str | None], ...]
    planner: Callable[..., Plan] = field(repr=False)
    method: str
    oracle: str
    strategy: str
    adjoint: str | None = None
    attribute_since: dict[str, int] = field(default_factory=dict)
    onnx_opset: int | None = None
    equal_off_axis: bool = False
    onnx_index_types: tuple[str, ...] = ("int32", "int64")
    #: Inputs an ONNX node may leave out (TensorScatter's write_indices: zeros).
    optional_inputs: tuple[str, ...] = ()
    #: The inputs' names in the operator's text, in node order (empty: ``inputs``).
    input_names: tuple[str, ...] = ()
    #: The public function's keyword for the version to run: ``opset`` (OpenVINO's
    #: functions with versions say ``version``, the OpenVINO opset).
    opset_keyword: str = "opset"
    #: Whether the public function takes ``check_bounds`` (OpenVINO's Gather does not:
    #: an index out of range gives zeros).
    bounded: bool = True
    #: Whether an ONNX node computes it (False: OpenVINO's scatters, which ``op_type``
    #: names as OpenVINO does; no ONNX node has their reductions).
    onnx_node: bool = True
    #: ``(version, op_type)``: from that version on, a model file writes the operator under
    #: another name (Scatter: ScatterElements from 11, where Scatter is deprecated and
    #: ``onnx.checker`` and ONNX Runtime refuse it).
    renamed: tuple[int, str] | None = None
    #: The version each opset resolves to: a table made once, for opsets that exist and
    #: some to come (every call asks; any other opset takes :meth:`resolve`'s checking path).
    newest: dict[int | None, int] = field(init=False, repr=False)
    #: Each version's name in messages ("Gather-13"): made once, not on every uncached call.
    _names: dict[int, str] = field(init=False, repr=False)
    #: Where ``indices`` is among the inputs (TensorScatter's are its third: ONNX's order).
    indices_at: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        numbers = tuple(self.versions)
        newest: dict[int | None, int] = {
            opset: max(v for v in numbers if v <= opset) for opset in range(numbers[0], 64)
        }
        if self.default_opset is None:
            newest = {None: numbers[-1]}
        object.__setattr__(self, "newest", newest)
        names = {v: f"{self.label}-{v}" for v in numbers}
        object.__setattr__(self, "_names", names)
        object.__setattr__(self, "indices_at", self.inputs.index("indices"))
        if not self.input_names:
            object.__setattr__(self, "input_names", self.inputs)

    def in_order(self, data: Any, indices: Any, updates: Any = None) -> tuple[Any, ...]:
        """``data``, ``indices`` (and a scatter's ``updates``) in this operator's input order."""
        by_role = {"data": data, "indices": indices, "updates": updates}
        return tuple(by_role[role] for role in self.inputs)

    def __repr__(self) -> str:
        return f"<operator {self.name}>"

    @property
    def numbers(self) -> tuple[int, ...]:
        """The versions, oldest first."""
        return tuple(self.versions)

    def message_name(self, version: int) -> str:
        """``"Gather-13"``: the operator and version as messages name them."""
        return self._names[version]

    def plan(
        self,
        version: int,
        shapes: tuple[Any, ...],
        dtypes: tuple[Any, ...],
        attributes: tuple[Any, ...],
        check_bounds: bool,
        *,
        kept: bool = True,
        names: Callable[[Any], str] | None = None,
    ) -> Plan:
        """The call's plan by the operator's planner, which checks everything; kept if ``kept``.

        The library's one plan cache: ``_api`` asks it when a call is not in its cache of
        bound calls, and torch's recorded operator when the graph runs. Not ``kept`` while
        a compiler traces the caller's Python (Dynamo would guard on the cache, and
        recompile as it grows), nor for symbolic shapes, which cannot be keys. ``dtypes``
        are ONNX type names, or a library's dtypes that ``names`` names (only on a miss:
        the key holds them as they are).
        """
        if not kept:
            return self._planned(version, shapes, dtypes, attributes, check_bounds, names)
        for a in attributes:  # (not a plain int or str, an ``__index__`` object, may change)
            if type(a) is not int and type(a) is not str:
                return self._planned(version, shapes, dtypes, attributes, check_bounds, names)
        key = (self, version, shapes, dtypes, attributes, check_bounds)
        try:
            plan = _PLANS.get(key)
        except TypeError:  # (symbolic sizes, or an unhashable attribute: not kept)
            return self._planned(version, shapes, dtypes, attributes, check_bounds, names)
        if plan is None:
            plan = self._planned(version, shapes, dtypes, attributes, check_bounds, names)
            _PLANS.put(key, plan)
        return plan

    def _planned(
        self,
        version: int,
        shapes: tuple[Any, ...],
        dtypes: tuple[Any, ...],
        attributes: tuple[Any, ...],
        check_bounds: bool,
        names: Callable[[Any], str] | None,
    ) -> Plan:
        if names is not None:
            dtypes = tuple(names(d) for d in dtypes)
        return self.planner(self, version, shapes, dtypes, attributes, check_bounds)

    def resolve(self, opset: Any) -> int:
        """The version a model importing ``opset`` runs: the newest one not newer than it.

        Raises
        ------
        TypeError
            If ``opset`` is not an integer.
        ValueError
            If ``opset`` is older than the operator's first version.
        """
        known = self.newest.get(opset) if type(opset) is int or opset is None else None
        if known is not None:
            return known
        if isinstance(opset, bool):
            msg = f"{self.opset_keyword} must be an int, got {opset!r}"
            raise TypeError(msg)
        try:
            number: int = operator.index(opset)
        except TypeError:
            msg = (
                f"{self.opset_keyword} must be an int, got {opset!r} of type {type(opset).__name__}"
            )
            raise TypeError(msg) from None
        usable = [v for v in self.numbers if v <= number]
        if not usable:
            msg = (
                f"opset {number} has no {self.label}: the operator exists from opset "
                f"{self.numbers[0]} on (versions {', '.join(map(str, self.numbers))})"
            )
            raise ValueError(msg)
        return usable[-1]

    def onnx_model(
        self,
        opset: int | None,
        types: Sequence[str],
        shapes: Sequence[Sequence[int | str] | None],
        attributes: Mapping[str, Any],
    ) -> Any:
        """A model of one node of this operator (an ``onnx.ModelProto``; needs onnx).

        Parameters
        ----------
        opset : int or None
            The model's opset import (None: the default); a variant computed by an ONNX
            node of another opset (OpenVINO's: 13) uses that one.
        types : sequence of str
            Each input's type name (``"float32"``, ``"int64"``, ``"string"``), in the
            order of ``inputs``; the output has data's.
        shapes : sequence
            Each input's dims: ints, or names for symbolic dims; None for unknown rank.
        attributes : mapping
            The node's attributes by name.
        """
        helper = importlib.import_module("onnx.helper")
        tensor_types = importlib.import_module("onnx").TensorProto

        def elem(name: str) -> int:
            return int(getattr(tensor_types, _ONNX_TYPE_NAMES.get(name, "UNDEFINED")))

        number = self.onnx_opset or (self.default_opset if opset is None else opset)
        assert number is not None  # an operator without a default opset has onnx_opset
        version = self.resolve(number) if self.onnx_opset is None else number
        # An attribute a later version introduced does not exist in this one: left out
        # (the planner has made sure that it holds its default then).
        given = {
            name: value
            for name, value in attributes.items()
            if self.attribute_since.get(name, 0) <= version
        }
        node = helper.make_node(self.op_type, list(self.inputs), ["out"], **given)
        inputs = [
            helper.make_tensor_value_info(role, elem(kind), None if dims is None else list(dims))
            for role, kind, dims in zip(self.inputs, types, shapes, strict=True)
        ]
        output = helper.make_tensor_value_info("out", elem(types[0]), None)
        graph = helper.make_graph([node], self.name, inputs, [output])
        opsets = [helper.make_opsetid("", number)]
        try:
            ir_version = helper.find_min_ir_version_for(opsets)
        except ValueError:
            ir_version = 3  # opsets 2-4 came with no release of their own: IR 3, like opset 1
        return helper.make_model(graph, opset_imports=opsets, ir_version=ir_version)

    def exported_node(
        self, opset: int, attributes: Sequence[Any], dtype: str
    ) -> tuple[str, int, dict[str, Any]]:
        """The node a model file of ``opset`` holds for a call: type, version and attributes.

        An exporter writes each call as this one node (docs/exporting.md).
        ``attributes`` are a plan's (:meth:`onnx_gather._spec.Plan.attributes`), in the
        registry's order; ``dtype`` is data's type name. The version is the newest not
        newer than ``opset``; an attribute it does not have yet is left out where it holds
        its default.

        Raises
        ------
        ValueError
            If ``opset`` has no version of the operator, or the version lacks an attribute
            the call gives another value than its default; the message names the opset.
        TypeError
            If the version's types do not include data's (bfloat16 before 13).
        """
        version = self.resolve(opset)
        values: dict[str, Any] = {}
        # (zip stops at the operator's own: Scatter's plan is ScatterElements', whose
        # reduction it always holds as none)
        for (name, default), value in zip(self.attributes, attributes, strict=False):
            since = self.attribute_since.get(name, 0)
            if since <= version:
                values[name] = str(value) if isinstance(value, str) else int(value)
            elif value != default:
                msg = (
                    f"{self.label}: {name}={value} cannot be exported at opset {opset}: "
                    f"{self.message_name(version)} has no {name} (opset {since} adds it)"
                )
                raise ValueError(msg)
        if dtype == "bfloat16" and (self.bfloat16_from is None or version < self.bfloat16_from):
            msg = (
                f"{self.label}: data of type bfloat16 cannot be exported at opset {opset}: "
                f"{self.message_name(version)} has no bfloat16"
                + (f" (opset {self.bfloat16_from} adds it)" if self.bfloat16_from else "")
            )
            raise TypeError(msg)
        op_type = self.op_type
        if self.renamed is not None and version >= self.renamed[0]:
            op_type = self.renamed[1]
        return op_type, version, values

    def load(self, what: str) -> Any:
        """The object named by the ``oracle`` or ``strategy`` field, imported now."""
        module, _, attribute = getattr(self, what).partition(":")
        return getattr(importlib.import_module(module), attribute)

    def keywords(
        self, attributes: Mapping[str, Any], opset: int | None, check_bounds: bool
    ) -> dict[str, Any]:
        """The public function's keywords for a call.

        The attributes, ``check_bounds`` where it takes one (:attr:`bounded`), and the
        version keyword for ``opset`` (None: the function's default; ignored by an
        operator without versions to choose from).
        """
        keywords: dict[str, Any] = dict(attributes)
        if self.bounded:
            keywords["check_bounds"] = check_bounds
        if self.default_opset is not None and opset is not None:
            keywords[self.opset_keyword] = opset
        return keywords

    def function(self) -> Callable[..., Any]:
        """The public function that runs this operator."""
        module, _, name = f"onnx_gather.{self.name}".rpartition(".")
        fn: Callable[..., Any] = getattr(importlib.import_module(module), name)
        return fn


#: ONNX's ``TensorProto`` name of each type name the family uses.
_ONNX_TYPE_NAMES = {
    "bool": "BOOL", "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64",
    "uint8": "UINT8", "uint16": "UINT16", "uint32": "UINT32", "uint64": "UINT64",
    "float16": "FLOAT16", "bfloat16": "BFLOAT16", "float32": "FLOAT", "float64": "DOUBLE",
    "complex64": "COMPLEX64", "complex128": "COMPLEX128", "string": "STRING",
}  # fmt: skip

_ORACLE = "onnx_gather._conformance.oracle:"
_STRATEGY = "onnx_gather._conformance.strategies:"

#: The one plan cache (:meth:`Operator.plan`), by operator, version, shapes, dtypes,
#: attributes and check_bounds.
_PLANS: Memo[tuple[Any, ...], Plan] = Memo(1024)


GATHER = Operator(
    name="gather",
    op_type="Gather",
    label="Gather",
    versions={1: "the operator", 11: "negative indices (documented)", 13: "bfloat16"},
    bfloat16_from=13,
    default_opset=13,
    inputs=("data", "indices"),
    attributes=(("axis", 0),),
    planner=_gather.plan,
    method="gather",
    oracle=_ORACLE + "GATHER",
    strategy=_STRATEGY + "gather_examples",
    adjoint=None,
)
GATHER_ELEMENTS = Operator(
    name="gather_elements",
    op_type="GatherElements",
    label="GatherElements",
    versions={11: "the operator", 13: "bfloat16"},
    bfloat16_from=13,
    default_opset=13,
    inputs=("data", "indices"),
    attributes=(("axis", 0),),
    planner=_gather_elements.plan,
    method="gather_elements",
    oracle=_ORACLE + "GATHER_ELEMENTS",
    strategy=_STRATEGY + "gather_elements_examples",
    adjoint="scatter_elements",
)
OPENVINO_GATHER_ELEMENTS = Operator(
    name="openvino.gather_elements",
    op_type="GatherElements",
    label="OpenVINO GatherElements",
    versions={6: "the operator (OpenVINO opset 6)"},
    bfloat16_from=6,  # OpenVINO lists "any supported type"
    default_opset=None,
    inputs=("data", "indices"),
    attributes=(("axis", None),),
    planner=_gather_elements.plan,
    method="gather_elements",
    oracle=_ORACLE + "OPENVINO_GATHER_ELEMENTS",
    strategy=_STRATEGY + "openvino_gather_elements_examples",
    adjoint=None,
    onnx_opset=13,
    equal_off_axis=True,
)
GATHER_ND = Operator(
    name="gather_nd",
    op_type="GatherND",
    label="GatherND",
    versions={11: "the operator", 12: "batch_dims", 13: "bfloat16"},
    bfloat16_from=13,
    default_opset=13,
    inputs=("data", "indices"),
    attributes=(("batch_dims", 0),),
    attribute_since={"batch_dims": 12},
    planner=_gather_nd.plan,
    method="gather_nd",
    oracle=_ORACLE + "GATHER_ND",
    strategy=_STRATEGY + "gather_nd_examples",
    adjoint="scatter_nd",
    onnx_index_types=("int64",),
)
OPENVINO_GATHER_ND = Operator(
    name="openvino.gather_nd",
    op_type="GatherND",
    label="OpenVINO GatherND",
    versions={
        5: "the operator (OpenVINO opset 5): the output's batch dims flattened into one",
        8: "the output keeps the batch dims (OpenVINO opset 8), as ONNX GatherND",
    },
    bfloat16_from=5,  # OpenVINO lists "any supported type"
    default_opset=8,
    inputs=("data", "indices"),
    attributes=(("batch_dims", 0),),
    planner=_gather_nd.openvino_plan,
    method="gather_nd",
    oracle=_ORACLE + "OPENVINO_GATHER_ND",
    strategy=_STRATEGY + "openvino_gather_nd_examples",
    adjoint=None,
    onnx_opset=13,
    onnx_index_types=("int64",),
    opset_keyword="version",
)
OPENVINO_GATHER = Operator(
    name="openvino.gather",
    op_type="Gather",
    label="OpenVINO Gather",
    versions={
        7: "the operator (OpenVINO opset 7), batch_dims; indices in [0, s-1], others give zeros",
        8: "negative indices (OpenVINO opset 8): [-s, s-1], others give zeros",
    },
    bfloat16_from=7,  # OpenVINO lists "any supported type"
    default_opset=8,
    inputs=("data", "indices"),
    attributes=(("axis", None), ("batch_dims", 0)),
    planner=_gather.openvino_plan,
    method="openvino_gather",
    oracle=_ORACLE + "OPENVINO_GATHER",
    strategy=_STRATEGY + "openvino_gather_examples",
    adjoint=None,
    onnx_opset=13,  # (ONNX Gather-13 computes it where batch_dims is 0 and no index is invalid)
    opset_keyword="version",
    bounded=False,
)

SCATTER_ELEMENTS = Operator(
    name="scatter_elements",
    op_type="ScatterElements",
    label="ScatterElements",
    versions={
        11: "the operator",
        13: "bfloat16",
        16: "reduction add, mul",
        18: "reduction max, min (the library takes them from 16, as exporters and ORT do)",
    },
    bfloat16_from=13,
    default_opset=18,
    inputs=("data", "indices", "updates"),
    attributes=(("axis", 0), ("reduction", "none")),
    attribute_since={"reduction": 16},
    planner=_scatter_elements.plan,
    method="scatter_elements",
    oracle=_ORACLE + "SCATTER_ELEMENTS",
    strategy=_STRATEGY + "scatter_elements_examples",
    adjoint="gather_elements",
)
SCATTER_ND = Operator(
    name="scatter_nd",
    op_type="ScatterND",
    label="ScatterND",
    versions={
        11: "the operator",
        13: "bfloat16",
        16: "reduction add, mul",
        18: "reduction max, min (the library takes them from 16, as exporters and ORT do)",
    },
    bfloat16_from=13,
    default_opset=18,
    inputs=("data", "indices", "updates"),
    attributes=(("reduction", "none"),),
    attribute_since={"reduction": 16},
    planner=_scatter_nd.plan,
    method="scatter_nd",
    oracle=_ORACLE + "SCATTER_ND",
    strategy=_STRATEGY + "scatter_nd_examples",
    adjoint="gather_nd",
    onnx_index_types=("int64",),
)

SCATTER = Operator(
    name="scatter",
    op_type="Scatter",
    label="Scatter",
    versions={
        9: "the operator",
        11: "deprecated: ScatterElements-11 under its old name (negative indices)",
    },
    bfloat16_from=None,
    default_opset=11,
    inputs=("data", "indices", "updates"),
    attributes=(("axis", 0),),
    planner=_scatter.plan,
    method="scatter_elements",
    oracle=_ORACLE + "SCATTER",
    renamed=(11, "ScatterElements"),
    strategy=_STRATEGY + "scatter_examples",
    adjoint="gather_elements",
)

OPENVINO_SCATTER_UPDATE = Operator(
    name="openvino.scatter_update",
    op_type="ScatterUpdate",
    label="OpenVINO ScatterUpdate",
    versions={3: "the operator (OpenVINO opset 3): slices along axis, indices in [0, s-1]"},
    bfloat16_from=3,  # OpenVINO lists "any numeric type"
    default_opset=None,
    inputs=("data", "indices", "updates"),
    attributes=(("axis", None),),
    planner=_openvino_scatter.update_plan,
    method="openvino_scatter_update",
    oracle=_ORACLE + "OPENVINO_SCATTER_UPDATE",
    strategy=_STRATEGY + "openvino_scatter_update_examples",
    onnx_node=False,
)
OPENVINO_SCATTER_ELEMENTS_UPDATE = Operator(
    name="openvino.scatter_elements_update",
    op_type="ScatterElementsUpdate",
    label="OpenVINO ScatterElementsUpdate",
    versions={
        3: "the operator (OpenVINO opset 3): overwrite only",
        12: "reduction sum, prod, min, max, mean; use_init_val (OpenVINO opset 12)",
    },
    bfloat16_from=3,  # OpenVINO lists "any supported type"
    default_opset=12,
    inputs=("data", "indices", "updates"),
    attributes=(("axis", None), ("reduction", "none"), ("use_init_val", True)),
    attribute_since={"reduction": 12, "use_init_val": 12},
    planner=_openvino_scatter.elements_plan,
    method="openvino_scatter_elements_update",
    oracle=_ORACLE + "OPENVINO_SCATTER_ELEMENTS_UPDATE",
    strategy=_STRATEGY + "openvino_scatter_elements_update_examples",
    opset_keyword="version",
    onnx_node=False,
)
OPENVINO_SCATTER_ND_UPDATE = Operator(
    name="openvino.scatter_nd_update",
    op_type="ScatterNDUpdate",
    label="OpenVINO ScatterNDUpdate",
    versions={
        3: "the operator (OpenVINO opset 3): overwrite only",
        15: "reduction sum, sub, prod, min, max (OpenVINO opset 15)",
    },
    bfloat16_from=3,  # OpenVINO lists "any numeric type"
    default_opset=15,
    inputs=("data", "indices", "updates"),
    attributes=(("reduction", "none"),),
    attribute_since={"reduction": 15},
    planner=_openvino_scatter.nd_plan,
    method="openvino_scatter_nd_update",
    oracle=_ORACLE + "OPENVINO_SCATTER_ND_UPDATE",
    strategy=_STRATEGY + "openvino_scatter_nd_update_examples",
    opset_keyword="version",
    onnx_node=False,
)

TENSOR_SCATTER = Operator(
    name="tensor_scatter",
    op_type="TensorScatter",
    label="TensorScatter",
    versions={24: "the operator (ONNX 1.19)"},
    bfloat16_from=24,
    default_opset=24,
    inputs=("data", "updates", "indices"),  # past_cache, update, write_indices
    attributes=(("axis", -2), ("mode", "linear")),
    planner=_tensor_scatter.plan,
    method="tensor_scatter",
    oracle=_ORACLE + "TENSOR_SCATTER",
    strategy=_STRATEGY + "tensor_scatter_examples",
    optional_inputs=("indices",),
    input_names=("past_cache", "update", "write_indices"),
    onnx_index_types=("int64",),
)

#: Every operator, in the order tables list them.
OPERATORS: tuple[Operator, ...] = (
    GATHER,
    GATHER_ELEMENTS,
    OPENVINO_GATHER_ELEMENTS,
    GATHER_ND,
    OPENVINO_GATHER_ND,
    OPENVINO_GATHER,
    SCATTER_ELEMENTS,
    SCATTER_ND,
    SCATTER,
    TENSOR_SCATTER,
    OPENVINO_SCATTER_UPDATE,
    OPENVINO_SCATTER_ELEMENTS_UPDATE,
    OPENVINO_SCATTER_ND_UPDATE,
)
#: Operators by public name.
BY_NAME: Mapping[str, Operator] = {op.name: op for op in OPERATORS}
#: The public names, in table order (the column headers of ``python -m onnx_gather check``).
OPS = tuple(BY_NAME)
#: The ONNX operators of the default domain, by op_type (variants are not ONNX's).
BY_ONNX_OP_TYPE: Mapping[str, Operator] = {
    op.op_type: op for op in OPERATORS if op.onnx_opset is None and op.onnx_node
}
#: The ONNX operator that each backend method computes, for exporters: a variant's call,
#: and the inner calls OpenVINO's functions are made of, are written as its node
#: (:meth:`Operator.exported_node`). (ScatterElements before Scatter: its first operator.)
ONNX_BY_METHOD: Mapping[str, Operator] = {
    op.method: op for op in reversed(OPERATORS) if op.onnx_opset is None and op.onnx_node
}


#: Each operator and version by its name in messages and plans ("GatherND-13"; a recorded
#: graph names its operator so).
BY_MESSAGE_NAME: Mapping[str, tuple[Operator, int]] = {
    op.message_name(v): (op, v) for op in OPERATORS for v in op.numbers
}


def onnx_operator(op: Operator, method: str) -> Operator:
    """The ONNX operator whose node computes a call of ``op`` that runs backend ``method``.

    ``op`` itself where it is ONNX's; else (OpenVINO's GatherElements-6 and GatherND, and
    the inner calls of the ONNX operators OpenVINO's functions are made of, whose plans
    carry the OpenVINO function's name) the ONNX operator of ``method``.
    """
    if op.onnx_opset is None and op.onnx_node:
        return op
    return ONNX_BY_METHOD[method]


def get(op: str | Operator) -> Operator:
    """The operator named ``op`` (a public name), or ``op`` itself."""
    if isinstance(op, Operator):
        return op
    try:
        return BY_NAME[op]
    except KeyError:
        msg = f"unknown operator {op!r}; known: {', '.join(OPS)}"
        raise ValueError(msg) from None


def call(
    op: str | Operator,
    *arrays: Any,
    opset: int | None = None,
    check_bounds: bool = True,
    **attributes: Any,
) -> Any:
    """Run ``op`` through its public function.

    ``arrays`` in the operator's input order; ``attributes`` by name (the operator's
    defaults where left out); ``opset`` is the model's opset import, None for the
    function's default (ignored by an operator without versions to choose from).
    """
    operator_ = get(op)
    return operator_.function()(*arrays, **operator_.keywords(attributes, opset, check_bounds))


#: ``AttributeProto.AttributeType`` by number, for messages (no onnx import needed).
_ATTRIBUTE_TYPES = (
    "UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS", "STRINGS",
    "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS",
)  # fmt: skip
_INT, _STRING = 2, 3


def node_attributes(op: Operator, node: Any) -> dict[str, Any]:
    """The attributes of ONNX ``node`` (an ``onnx.NodeProto``) that ``op`` has, by name.

    An attribute the node leaves out keeps its default (a required one is a ValueError);
    an attribute ``op`` does not have, one given twice, one that refers to an enclosing
    function's attribute (``ref_attr_name``) or whose string is not UTF-8 is a ValueError
    naming it; one of another type than the operator's (a FLOAT or INTS ``axis``) a
    TypeError naming both types, as ONNX Runtime refuses them ("Mismatched attribute
    type"). Read from the proto's fields, so no onnx import is needed: integers (``axis``,
    ``batch_dims``) and strings (``reduction``).
    """
    defaults = dict(op.attributes)
    values: dict[str, Any] = {}
    where = f"{op.op_type} node {node.name!r}"
    for attribute in node.attribute:
        name = attribute.name
        if name not in defaults:
            msg = (
                f"{where} has an attribute {name!r}, which {op.op_type} does not have "
                f"(its attributes: {', '.join(defaults) or 'none'})"
            )
            raise ValueError(msg)
        if name in values:
            msg = f"{where} has the attribute {name!r} more than once"
            raise ValueError(msg)
        if attribute.ref_attr_name:
            msg = (
                f"{where}: attribute {name!r} refers to the attribute "
                f"{attribute.ref_attr_name!r} of an enclosing function (ref_attr_name), "
                "which a node run on its own cannot resolve; give its value instead"
            )
            raise ValueError(msg)
        # Only the operator's default tells the type: a string, or an int (a required
        # attribute, OpenVINO's axis, is an int too).
        want = _STRING if isinstance(defaults[name], str) else _INT
        if attribute.type != want:
            got = attribute.type
            got_name = _ATTRIBUTE_TYPES[got] if 0 <= got < len(_ATTRIBUTE_TYPES) else str(got)
            msg = (
                f"{where}: attribute {name!r} is of type {got_name}, expected "
                f"{_ATTRIBUTE_TYPES[want]}"
            )
            raise TypeError(msg)
        if want == _STRING:
            try:
                values[name] = attribute.s.decode()
            except UnicodeDecodeError:
                msg = f"{where}: attribute {name!r} is not UTF-8 text: {attribute.s!r}"
                raise ValueError(msg) from None
        else:
            values[name] = int(attribute.i)
    for name, default in defaults.items():
        if name not in values:
            if default is None:
                msg = f"{where} lacks its required attribute {name!r}"
                raise ValueError(msg)
            values[name] = default
    return values
