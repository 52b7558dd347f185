"""YuniKorn's resource arithmetic (``pkg/common/resources/resources.go`` at
apache/yunikorn-core be3bb487), with Go's semantics: a ``None`` is Go's nil
``*Resource``, a missing resource type reads 0.  The preemptor
(:mod:`hierfair.algorithms.yunikorn_preemption`) and the fair policy's
headroom read it; docs/upstream/yunikorn-preemption.md has the reading."""

from __future__ import annotations


Res = dict[str, float] | None  # None is Go's nil *Resource


# -- resources.go, Go semantics ------------------------------------------------------
def _clone(r: Res) -> Res:
    return None if r is None else dict(r)


def is_empty(r: Res) -> bool:
    return not r


def is_zero(r: Res) -> bool:
    return r is None or all(v == 0 for v in r.values())


def add(left: Res, right: Res) -> dict[str, float]:
    out = dict(left or {})
    for k, v in (right or {}).items():
        out[k] = out.get(k, 0) + v
    return out


def sub_only_existing(base: Res, delta: Res) -> Res:
    """``SubOnlyExisting``: only the types of ``base``."""
    if base is None or delta is None:
        return _clone(base)
    return {k: v - delta.get(k, 0) for k, v in base.items()}


def sub_eliminate_negative(left: Res, right: Res) -> dict[str, float]:
    out = dict(left or {})
    for k, v in (right or {}).items():
        out[k] = max(0.0, out.get(k, 0) - v)
    return out


def component_wise_min(left: Res, right: Res) -> Res:
    if left is None or right is None:
        return _clone(right if left is None else left)
    out = dict(left)
    for k, v in right.items():
        out[k] = min(v, left[k]) if k in left else v
    return out


def component_wise_min_only_existing(left: Res, right: Res) -> Res:
    if left is None:
        return None
    if right is None:
        return dict(left)
    return {k: min(v, right[k]) if k in right else v for k, v in left.items()}


def merge_if_not_present(left: Res, right: Res) -> Res:
    if left is None or right is None:
        return _clone(right if left is None else left)
    return {**right, **left}


def fit_in(larger: Res, smaller: Res, skip_undef: bool = False, actual: bool = False) -> bool:
    """``fitIn``: ``FitIn`` (neither flag), ``FitInActual`` (both),
    ``FitInMaxUndef`` (skip_undef): a type missing in ``larger`` reads 0, or
    is skipped; a negative one reads 0 unless ``actual``."""
    larger = larger or {}
    for k, v in (smaller or {}).items():
        if skip_undef and k not in larger:
            continue
        big = larger.get(k, 0)
        if v > (big if actual else max(0, big)):
            return False
    return True


def strictly_ge(larger: Res, smaller: Res) -> bool:
    """``StrictlyGreaterThanOrEquals`` (``smaller`` {} : every value >= 0)."""
    larger, smaller = larger or {}, smaller or {}
    return (all(smaller.get(k, 0) <= v for k, v in larger.items())
            and all(larger.get(k, 0) >= v for k, v in smaller.items()))


def equals(left: Res, right: Res) -> bool:
    if left is None or right is None:
        return left is right
    return all(right.get(k, 0) == v for k, v in left.items()) and \
        all(left.get(k, 0) == v for k, v in right.items())


def equals_or_empty(left: Res, right: Res) -> bool:
    return (is_zero(left) and is_zero(right)) or equals(left, right)


def strictly_only_existing(larger: Res, smaller: Res, or_equal: bool) -> bool:
    """``internalStrictlyOnlyExisting``: ``StrictlyGreaterThanOnlyExisting``
    (or_equal False) and ``...OrEqualsOnlyExisting`` -- only the types of
    ``larger``; an empty ``smaller``: every type of ``larger`` > 0."""
    larger, smaller = larger or {}, smaller or {}
    not_equal = equal = common = False
    for k, v in larger.items():
        if k in smaller:
            common = True
            if smaller[k] > v:
                return False
            equal = True
            not_equal = not_equal or smaller[k] != v
    if not smaller and larger:
        return all(v > 0 for v in larger.values())
    if common:
        return equal if or_equal else not_equal
    return bool(larger) and bool(smaller)


def match_any(left: Res, right: Res) -> bool:
    if left is None or right is None:
        return False
    return any(k in right for k in left)


def is_ask_queue_under_guaranteed(ask: Res, remaining: Res) -> bool:
    """``isAskQueueUnderGuaranteed``: no type of the ask negative in ``remaining``."""
    return not any((remaining or {}).get(k, 0) < 0 for k in (ask or {}))


def is_victim_queue_over_guaranteed(ask: Res, remaining: Res) -> bool:
    """``isVictimQueueOverGuaranteed``: some type of the ask negative in ``remaining``."""
    return any((remaining or {}).get(k, 0) < 0 for k in (ask or {}))


# -- the queue snapshots ---------------------------------------------------------------
