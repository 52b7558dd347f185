"""Errors a user can act on.

Every error raised for bad input carries where the problem is (file, field path
or line) and the offending value, and renders as one line.  The CLI prints that
line and exits with status 2 -- never a traceback.
"""

from __future__ import annotations

import re
from typing import Any


class HierfairError(Exception):
    """Base class of errors caused by the user's input, not by a bug."""

    exit_code = 2


class EnvironmentProblem(HierfairError):
    """The machine, not the input, stops the work: a Dask scheduler that
    cannot be reached, an optional dependency not installed."""

    exit_code = 69  # EX_UNAVAILABLE in sysexits.h: "a service is unavailable"


class RunFailed(HierfairError):
    """A run failed and the sweep was asked to stop there (``run -x``)."""

    exit_code = 1

    def __init__(self, row: dict[str, Any], traceback_file: Any) -> None:
        self.row = row
        self.traceback_file = traceback_file
        super().__init__(f"{row['spec']}/{row['run']}: {row['status']}: {row['error']}")


class SpecError(HierfairError):
    """A spec (or trace) is malformed: names file, location and value."""

    def __init__(self, message: str, *, file: str | None = None, where: str | None = None,
                 value: Any = ..., also: tuple[SpecError, ...] = ()) -> None:
        self.message = message
        self.file = file
        self.where = where
        self.value = value
        #: further problems found in the same pass (validate reports them all)
        self.also = also
        super().__init__(self.line())

    @classmethod
    def combine(cls, errors: list[SpecError]) -> SpecError:
        """One error carrying every problem in ``errors`` (repeats dropped)."""
        flat = list(dict.fromkeys(e for err in errors for e in err.problems()))
        first = flat[0]
        return cls(first.message, file=first.file, where=first.where, value=first.value,
                   also=tuple(flat[1:]))

    def problems(self) -> list[SpecError]:
        """This problem and the others found with it, each a one-problem error."""
        one = SpecError(self.message, file=self.file, where=self.where, value=self.value)
        return [one, *(p for e in self.also for p in e.problems())]

    def with_file(self, file: str) -> SpecError:
        """The same error, naming ``file`` unless it already names one (a
        trace file's error keeps the trace's name)."""
        return SpecError(self.message, file=self.file or file, where=self.where,
                         value=self.value, also=tuple(e.with_file(file) for e in self.also))

    def line(self) -> str:
        """This problem as one line: file: where: message (got value)."""
        parts = [p for p in (self.file, self.where) if p]
        head = ": ".join(parts)
        tail = self.message if self.value is ... else f"{self.message} (got {_show(self.value)})"
        return _printable(f"{head}: {tail}" if head else tail)

    def __str__(self) -> str:
        return "\n".join(p.line() for p in self.problems())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SpecError) and other.line() == self.line() \
            and other.also == self.also

    def __hash__(self) -> int:
        return hash(self.line())


def did_you_mean(value: Any, choices: Any) -> str:
    """' did you mean 'x'?' for the choice nearest ``value``, or ''."""
    import difflib

    close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1)
    return f" did you mean {close[0]!r}?" if close else ""


class PolicyError(RuntimeError):
    """A policy broke the scheduling protocol (a bug in the algorithm, not the input)."""


def _printable(text: str) -> str:
    """Control characters (a key written as "\x1e") escaped: the error stays one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _show(value: Any) -> str:
    """The value's repr, at most 80 characters: its middle elided, so that a
    long path keeps its file name (and a long list its last item)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:38] + "..." + text[-39:]


#: The names pydantic gives the branches of a union type in an error's location
#: (``duration.constrained-float``): not fields, so not shown.
_UNION_BRANCH = re.compile(r"^(constrained-\w+|list\[.*\]|dict\[.*\]|function-\w+\[.*\]|"
                           r"literal\[.*\]|nullable\[.*\]|tuple\[.*\]|float|int|str|bool|"
                           r"bytes|none|<\w+>)$")  # <tag>: a discriminated union's branch


def _fields(loc: tuple[Any, ...] | list[Any]) -> list[Any]:
    return [p for p in loc if isinstance(p, int) or not _UNION_BRANCH.match(str(p))]


def format_loc(loc: tuple[Any, ...] | list[Any], prefix: str = "") -> str:
    """``('workload', 'jobs', 2, 'demand')`` -> ``workload.jobs[2].demand``."""
    out = prefix
    for part in _fields(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def from_pydantic(exc: Any, prefix: str = "", model: Any = None) -> SpecError:
    """Every problem of a pydantic ``ValidationError`` as one :class:`SpecError`
    (:meth:`SpecError.problems` lists them).

    ``model`` (the validated class) lets an unknown key be answered with the
    nearest allowed key and the keys that are allowed there.
    """
    out: dict[str, SpecError] = {}
    for err in exc.errors():
        where = format_loc(err["loc"], prefix) or None
        if str(where) in out:  # the branches of one union field fail together: one problem
            continue
        kind = err["type"]
        if kind == "extra_forbidden":
            message, value = "unknown key", err["loc"][-1]
            allowed = _allowed_keys(model, err["loc"][:-1]) if model is not None else None
            if allowed:
                message += f";{did_you_mean(value, allowed)} allowed here: {', '.join(allowed)}"
        elif kind == "missing":
            message, value = "required field is missing", ...
        else:
            message, value = str(err["msg"]).removeprefix("Value error, "), err.get("input", ...)
        out[str(where)] = SpecError(message, where=where, value=value)
    return SpecError.combine(list(out.values()))


def _allowed_keys(model: Any, loc: tuple[Any, ...]) -> list[str] | None:
    """Field names of the pydantic model found by following ``loc`` from ``model``."""
    from typing import get_args

    from pydantic import BaseModel

    def models_in(annotation: Any) -> list[type[BaseModel]]:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return [annotation]
        return [m for arg in get_args(annotation) for m in models_in(arg)]

    current: Any = model
    for part in loc:
        if isinstance(part, int) or current is None:
            continue
        field = current.model_fields.get(part)
        if field is None:
            # a dict key (a node name, say): stay on the value model
            continue
        found = models_in(field.annotation)
        current = found[0] if found else None
    return list(current.model_fields) if current is not None else None
