"""Depth-first search whose first path is a greedy rule: exact where the greedy is stuck.

The repair modes that create load rather than move it (set-rf's new followers, demote's new
leaders) place one partition at a time on the least loaded broker that has room. That rule
can fill the one broker a later partition needed. Here each partition's options come least
loaded first, so the first path is the greedy plan, unchanged where it succeeds; where a
partition has no option left the search goes back to the previous one. Within the budget it
either finds a placement or proves that none exists.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import TypeVar

Choice = TypeVar("Choice")


class Exhausted(Exception):
    """Every combination of options was tried; ``partition`` most often had none left."""

    def __init__(self, partition: int) -> None:
        super().__init__(partition)
        self.partition = partition


class OutOfBudget(Exception):
    """The budget ran out first; ``partition`` is where the search was then."""

    def __init__(self, partition: int) -> None:
        super().__init__(partition)
        self.partition = partition


def first_fit(parts: list[int], options: Callable[[int], Iterator[Choice]],
              apply: Callable[[int, Choice, int], None], budget: int) -> list[Choice]:
    """One option per partition, in order. ``options(p)`` lists p's options given the
    choices so far (``apply(p, option, +1)`` made them, ``-1`` takes one back)."""
    if not parts:
        return []
    stack = [options(parts[0])]
    chosen: list[Choice] = []
    stuck: Counter[int] = Counter()
    tried = 0
    while len(chosen) < len(parts):
        option = next(stack[-1], None)
        if option is None:
            stuck[parts[len(stack) - 1]] += 1
            stack.pop()
            if not stack:
                raise Exhausted(stuck.most_common(1)[0][0])
            apply(parts[len(chosen) - 1], chosen.pop(), -1)
            continue
        tried += 1
        if tried > budget:
            raise OutOfBudget(parts[len(chosen)])
        apply(parts[len(chosen)], option, +1)
        chosen.append(option)
        if len(chosen) < len(parts):
            stack.append(options(parts[len(chosen)]))
    return chosen
