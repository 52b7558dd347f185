"""YuniKorn preemption (algorithms/yunikorn_preemption.py) against upstream's
assertions, apache/yunikorn-core be3bb487 pkg/scheduler/objects/
preemption_test.go; hand traces in docs/upstream/yunikorn-preemption.md."""

from __future__ import annotations

from pathlib import Path

import pytest

import hierfair
from hierfair.algorithms.yunikorn_preemption import (
    Preemptor,
    QueueTree,
    Snapshot,
    Victim,
    victim_order,
)
from hierfair.algorithms.yunikorn_resources import (
    is_ask_queue_under_guaranteed,
    is_victim_queue_over_guaranteed,
    strictly_only_existing,
)

SPEC = Path(__file__).resolve().parents[1] / "experiments" / "prod-u2-yunikorn-preemption.yaml"

# TestIsAskQueueUnderGuaranteed / TestIsVictimQueueOverGuaranteed: (ask, queue, under, over)
CASES = [
    ({"first": 1}, {"first": 10}, True, False),
    ({"first": 1}, {"first": 0}, True, False),
    ({"first": 1}, {"first": -10}, False, True),
    ({"first": 1, "second": 1}, {"first": 10, "second": -10}, False, True),
    ({"first": 1}, {"first": 10, "second": -10}, True, False),
    ({"first": 1}, {"first": -10, "second": 10}, False, True),
    ({"first": 1, "third": 1}, {"first": 10}, True, False),
    ({"first": 1, "third": 1}, {"first": -10}, False, True),
]


@pytest.mark.parametrize("ask,queue,under,over", CASES)
def test_guarantee_checks(ask: dict, queue: dict, under: bool, over: bool) -> None:
    assert is_ask_queue_under_guaranteed(ask, queue) is under
    assert is_victim_queue_over_guaranteed(ask, queue) is over


def test_strictly_only_existing() -> None:
    # the shortfall test of TryPreemption: an ask of 5 against victims of 4
    assert strictly_only_existing({"first": 5}, {"first": 4, "pods": 2}, or_equal=False)
    assert not strictly_only_existing({"first": 5}, {"first": 5, "pods": 2}, or_equal=False)
    assert strictly_only_existing({"first": 5}, {}, or_equal=False)  # empty: all > 0
    assert strictly_only_existing({"first": 5}, {"first": 5}, or_equal=True)
    assert not strictly_only_existing({"first": 4}, {"first": 5}, or_equal=True)


def test_victim_order_newest_first() -> None:
    old = Victim(0, 2, 0, {"first": 5}, 0, create=0.0, start=0.0)
    new = Victim(1, 2, 1, {"first": 5}, 0, create=60.0, start=60.0)
    assert sorted([old, new], key=victim_order) == [new, old]


def _remaining_guaranteed_tree() -> tuple[Snapshot, Snapshot, Snapshot]:
    """root.parent (guaranteed 10) with child1 (guaranteed 5, using 10) and
    the ask's child2 (guaranteed 5, using 0): TestTryPreemptionOnNode."""
    root = Snapshot(0, "root", False, {"first": 10, "pods": 2}, None, None)
    parent = Snapshot(1, "root.parent", False, {"first": 10, "pods": 2}, {"first": 10}, None, root)
    child2 = Snapshot(3, "root.parent.child2", True, {}, {"first": 5}, None, parent)
    child1 = Snapshot(2, "root.parent.child1", True, {"first": 10, "pods": 2}, {"first": 5}, None,
                      parent, ask_queue=child2)
    parent.ask_queue = child2.ask_queue = child2
    return parent, child1, child2


def test_remaining_guaranteed_by_hand() -> None:
    parent, child1, child2 = _remaining_guaranteed_tree()
    # the ask queue is short of its guarantee: its ancestor reports nil
    assert parent.remaining_guaranteed() is None
    assert child1.remaining_guaranteed() == {"first": -5}
    assert child2.remaining_guaranteed() == {"first": 5}
    # one of child1's allocations gone: 5 over guaranteed 5 is no longer preemptable
    child1.remove_allocation({"first": 5, "pods": 1})
    assert child1.preemptable() == {"pods": 1}
    child1.remove_allocation({"first": 5, "pods": 1})
    assert child1.preemptable() == {}


def _on_node_tree(n1_first: float = 5.0) -> QueueTree:
    v1 = Victim(10, 2, 0, {"first": 5, "pods": 1}, 0, 0.0, 0.0)
    v2 = Victim(11, 2, 1, {"first": 5, "pods": 1}, 0, 60.0, 60.0)
    return QueueTree(parent=[-1, 0, 1, 1], children=[[1], [2, 3], [], []],
                     paths=["root", "root.parent", "root.parent.child1", "root.parent.child2"],
                     allocated=[{"first": 10, "pods": 2}] * 3 + [{}],
                     guaranteed=[None, {"first": 10}, {"first": 5}, {"first": 5}],
                     max=[{"first": 10, "pods": 2}, {"first": 20}, {"first": 10}, {"first": 10}],
                     offset=[0, 0, 0, 0], running={2: [v1, v2]})


def test_on_node_one_victim_first_node() -> None:
    """TestTryPreemptionOnNode: one victim of the two; without a predicate
    plugin the first node wins (upstream's mock accepts node2 only)."""
    free = [{"first": 0, "pods": 0}, {"first": 0, "pods": 0}]
    out = Preemptor(_on_node_tree(), 3, {"first": 5, "pods": 1}, 0, free, lambda i: True,
                    nodes_tried=True).run()
    assert [v.task for v in out.victims] == [10] and out.node == 0
    # node1 cannot hold the ask (FitInNode): node2 and its victim alloc2
    out = Preemptor(_on_node_tree(), 3, {"first": 5, "pods": 1}, 0, free, lambda i: i == 1,
                    nodes_tried=True).run()
    assert [v.task for v in out.victims] == [11] and out.node == 1


def test_node_with_capacity_lesser_than_ask() -> None:
    """TestTryPreemption_NodeWithCapacityLesserThanAsk: no node can hold 6."""
    tree = _on_node_tree()
    tree = QueueTree(tree.parent, tree.children, tree.paths, tree.allocated,
                     [None, {"first": 10}, {"first": 5}, {"first": 6}], tree.max, tree.offset,
                     tree.running)
    free = [{"first": 0, "pods": 0}, {"first": 0, "pods": 0}]
    out = Preemptor(tree, 3, {"first": 6, "pods": 1}, 0, free, lambda i: False, True).run()
    assert out.victims == []


def test_no_guarantee_no_preemption() -> None:
    """TestCheckPreemptionQueueGuaranteesWithNoGuaranteedResources "NoGuaranteed":
    neither the ask's queue nor its parent has a guarantee."""
    tree = _on_node_tree()
    tree = QueueTree(tree.parent, tree.children, tree.paths, tree.allocated,
                     [None, None, {"first": 5}, None], tree.max, tree.offset, tree.running)
    p = Preemptor(tree, 3, {"first": 5, "pods": 1}, 0, [{"first": 0}] * 2, lambda i: True, True)
    assert not p.check_queue_guarantees()
    assert p.run().reason == "PreemptionDoesNotGuarantee"


@pytest.fixture(scope="module")
def u2(tmp_path_factory: pytest.TempPathFactory) -> object:
    out = tmp_path_factory.mktemp("u2")
    hierfair.run(str(SPEC), out=str(out), jobs=1)
    return hierfair.load(str(out / "prod-u2-yunikorn-preemption"))


def _victims(u2: object, label: str) -> list[str]:
    pre = u2.preemptions  # type: ignore[attr-defined]
    jobs = u2.jobs  # type: ignore[attr-defined]
    names = dict(zip(jobs[jobs.label == label].job, jobs[jobs.label == label].name))
    return sorted(names[j] for j in pre[pre.label == label].job)


def test_u2_victims(u2: object) -> None:
    """The victims of each scenario, by name, as upstream asserts them
    (on-node's mock predicate is the ask's placement constraint)."""
    assert _victims(u2, "yunikorn-fair") == sorted([
        "n-alloc2",                 # TestTryPreemptionOnNode (node2 only)
        "q-alloc2",                 # TestTryPreemptionOnQueue
        "p-alloc1", "p-alloc2",     # ..._OnQueue_VictimsAvailable_LowerPriority
        "d-alloc2", "d-alloc4",     # ..._OnQueue_VictimsOnDifferentNodes
    ])                              # ..._VictimsAvailable_InsufficientResource: none
    assert _victims(u2, "yunikorn-no-preemption") == []
    pre = u2.preemptions  # type: ignore[attr-defined]
    times = sorted(pre[pre.label == "yunikorn-fair"].time.unique().tolist())
    assert times == [91.0, 2091.0, 4151.0, 6092.0]  # each ask's submission + 30 s


def test_u2_victims_with_an_eviction_latency(tmp_path: Path) -> None:
    """With evictions taking 5 s the same victims go, once each: a task in
    flight is no victim (``IsPreempted``) and counts as its queues'
    preempting resource, not as their usage (upstream's allocated -
    preempting)."""
    import yaml

    spec = yaml.safe_load(SPEC.read_text())
    spec["preemption"] = {"mode": "restart", "eviction_latency": 5}
    spec["algorithms"] = [spec["algorithms"][0]]
    spec.pop("claims")
    spec.pop("report", None)
    hierfair.run(spec, out=str(tmp_path), jobs=1)
    res = hierfair.load(str(tmp_path / "prod-u2-yunikorn-preemption"))
    names = dict(zip(res.jobs.job, res.jobs.name))
    assert sorted(names[j] for j in res.preemptions.job) == sorted([
        "n-alloc2", "q-alloc2", "p-alloc1", "p-alloc2", "d-alloc2", "d-alloc4"])
