"""Pairwise NCCL runs: which node pairs to run, and which node is slow.

The pairing is a ring over the job's nodes in Slurm's order: node i runs with node i+1 (and
the last with the first). Every node then sits in exactly two pairs, with two different
partners. A single pair below the rest cannot say which of its two nodes is slow; a node
whose *both* pairs are slow can: its neighbours each still have one good pair. The ring's
pairs run in rounds of disjoint pairs (two rounds for an even node count, three for an odd
one), so a round takes as long as one pair, not the whole ring.

A node is flagged when every pair it is in sits below the median of all pairs by more than
the margin. The median is a healthy pair's figure while fewer than half of the pairs touch a
slow node: a slow node touches 2 of N pairs, so with 5 or more nodes one slow node always
shows; with 3 or 4 nodes only a large deficit does, and 2 nodes (one pair) cannot tell.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

DEFAULT_MARGIN = 0.10
"""Judgement, not a published figure: nccl-tests' out-of-place and in-place bus bandwidth of one
run differ by up to ~5% at mid sizes (awsome-distributed-training's 2 x p5 table), so a pair 10%
under the median is beyond run-to-run noise."""

MIN_NODES_FOR_SLOW = 3
RELIABLE_NODES_FOR_SLOW = 5


def ring(hosts: list[str] | tuple[str, ...]) -> list[tuple[str, str]]:
    """The ring's pairs, in order: (h0, h1), (h1, h2), ..., (h[n-1], h0); one pair for two nodes."""
    n = len(hosts)
    if n < 2:
        return []
    if n == 2:
        return [(hosts[0], hosts[1])]
    return [(hosts[i], hosts[(i + 1) % n]) for i in range(n)]


def rounds(hosts: list[str] | tuple[str, ...]) -> list[list[tuple[str, str]]]:
    """The ring's pairs in rounds whose pairs share no node (the job runs each round's pairs at once)."""
    pairs = ring(hosts)
    if len(pairs) <= 1:
        return [pairs] if pairs else []
    n = len(hosts)
    even = [pairs[i] for i in range(0, n - 1, 2)]
    odd = [pairs[i] for i in range(1, n - 1, 2)]
    last = pairs[n - 1]
    if n % 2 == 0:
        return [even, odd + [last]]
    return [even, odd, [last]]


@dataclass(frozen=True)
class SlowNode:
    host: str
    pairs: dict[str, float]
    """Partner -> the pair's bus bandwidth (GB/s)."""
    median: float
    margin: float

    @property
    def worst_fraction(self) -> float:
        return max(self.pairs.values()) / self.median


def slow_nodes(values: dict[tuple[str, str], float], margin: float = DEFAULT_MARGIN) -> tuple[list[SlowNode], str | None]:
    """Nodes every pair of which sits below the median by more than ``margin``, and a note when the
    pairs are too few to tell (None otherwise)."""
    if not 0 < margin < 1:
        raise ValueError(f"margin {margin} is not between 0 and 1 (0.10 = 10% below the median)")
    hosts = sorted({h for pair in values for h in pair})
    if len(hosts) < MIN_NODES_FOR_SLOW or len(values) < MIN_NODES_FOR_SLOW:
        return [], (f"{len(hosts)} nodes in {len(values)} pair(s): slow-node detection needs at least "
                    f"{MIN_NODES_FOR_SLOW} nodes (a pair alone cannot say which of its nodes is slow)")
    mid = median(values.values())
    limit = mid * (1 - margin)
    flagged = []
    for host in hosts:
        mine = {(b if a == host else a): v for (a, b), v in values.items() if host in (a, b)}
        if len(mine) >= 2 and all(v < limit for v in mine.values()):
            flagged.append(SlowNode(host, mine, mid, margin))
    note = None
    if len(hosts) < RELIABLE_NODES_FOR_SLOW:
        note = (f"{len(hosts)} nodes: a slow node touches 2 of {len(values)} pairs, so the median may itself be "
                f"slow; only a large deficit shows (5 or more nodes give a reliable median)")
    return flagged, note
