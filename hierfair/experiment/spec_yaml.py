"""Reading a spec file's YAML: one :class:`~hierfair.errors.SpecError` naming
the file and line for anything unreadable (missing, not UTF-8, malformed, a
key given twice), never a PyYAML traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from hierfair.errors import SpecError


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice in one mapping (PyYAML keeps
    the last one silently, which hides typos in hand-written specs)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                mark = key_node.start_mark
                raise SpecError(f"line {mark.line + 1}: key given twice", value=key)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: str | Path) -> Any:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError("no such file", file=str(path)) from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[:exc.start].count(b"\n") + 1
        raise SpecError("not UTF-8 text (a spec is YAML in UTF-8)", file=str(path),
                        where=f"line {line}", value=exc.object[exc.start:exc.end]) from None
    except OSError as exc:
        raise SpecError(f"cannot read: {exc.strerror}", file=str(path)) from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - SafeLoader subclass
    except SpecError as exc:
        raise exc.with_file(str(path)) from None
    except RecursionError:
        raise SpecError("malformed YAML: nested too deeply", file=str(path)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or str(exc)
        if mark is None and isinstance(getattr(exc, "position", None), int):
            where = f"line {text.count(chr(10), 0, exc.position) + 1}"  # a bad character
        problem = " ".join(str(problem).split())  # one line, whatever PyYAML wrote
        raise SpecError(f"malformed YAML: {problem}", file=str(path), where=where) from None
