"""Old id (in the file) -> new id (in this database), for one model. Rows are dumped in id
order and inserted in that order, so the map is monotone and mostly made of runs: a run of
consecutive old ids given consecutive new ids is kept as one entry. A study's million
conversations loaded in one go are one run, not a million dictionary entries."""

from __future__ import annotations

from array import array
from bisect import bisect_right


class IdMap:
    def __init__(self) -> None:
        self._old = array("q")  # first old id of each run, ascending
        self._new = array("q")  # its new id
        self._len = array("q")  # the run's length
        self._extra: dict[int, int] = {}  # ids added out of order (rare: reserved ids)

    def add(self, old: int, new: int) -> None:
        if self._old and old <= self._old[-1] + self._len[-1] - 1:
            self._extra[old] = new
            return
        if self._old and old == self._old[-1] + self._len[-1]:
            if new == self._new[-1] + self._len[-1]:
                self._len[-1] += 1
                return
        self._old.append(old)
        self._new.append(new)
        self._len.append(1)

    def get(self, old: int) -> int | None:
        if old in self._extra:
            return self._extra[old]
        i = bisect_right(self._old, old) - 1
        if i >= 0 and old < self._old[i] + self._len[i]:
            return self._new[i] + (old - self._old[i])
        return None

    def __contains__(self, old: int) -> bool:
        return self.get(old) is not None

    def __len__(self) -> int:
        return sum(self._len) + len(self._extra)

    @property
    def runs(self) -> int:
        return len(self._old)
