"""The tuning database (docs/tuning.md, "Database"): JSON lines, one
record per measured candidate, appended as results arrive."""
import datetime
import json
import os
import statistics
import sys

FORMAT = 1
_FIELDS = {"task": str, "target": str, "cpu": str, "trace": list}


def _problem(record):
    """Why `record` is not a valid record, or None."""
    if not isinstance(record, dict):
        return f"a record is a JSON object, got {type(record).__name__}"
    if record.get("format") != FORMAT:
        return f"format {record.get('format')!r} is not this Loom's record format ({FORMAT})"
    for key, kind in _FIELDS.items():
        if not isinstance(record.get(key), kind):
            return f"field '{key}' must be a {kind.__name__}"
    median = record.get("median_us")
    if median is None and "error" not in record:
        return "the record has neither 'median_us' nor 'error'"
    if median is not None and (not isinstance(median, (int, float)) or not median > 0):
        return f"median_us must be a positive time, got {median!r}"
    return None


class Database:
    """The records of a JSON-lines file (created when missing).  A
    malformed line is a warning naming PATH:LINE, and is skipped."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.records = []
        self.warnings = []
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                    except ValueError as e:
                        self._warn(number, f"not JSON ({e})")
                        continue
                    why = _problem(record)
                    if why:
                        self._warn(number, why)
                    else:
                        self.records.append(record)

    def _warn(self, line, why):
        message = f"tuning database {self.path}:{line}: {why}; the record is skipped"
        self.warnings.append(message)
        print(f"loom: warning: {message}", file=sys.stderr)

    def add(self, record):
        """Appends a record (format and time filled in) to the file."""
        record = {"format": FORMAT, **record,
                  "time": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
        why = _problem(record)
        if why:
            raise ValueError(f"not a tuning record: {why}")
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, separators=(",", ":")) + "\n")
        self.records.append(record)
        return record

    def of(self, task, target, cpu):
        """The records of one task on one target and CPU, timed ones fastest first, then the failed."""
        mine = [r for r in self.records if r["task"] == task and r["target"] == target and r["cpu"] == cpu]
        return sorted(mine, key=lambda r: r.get("median_us") or float("inf"))

    def ranked(self, task, target, cpu):
        """[(time, record)] for each trace of the task with a time, fastest
        first: the median of the trace's times (a search measures its best
        again), with the trace's first record, as builds rank them."""
        times, first = {}, {}
        for r in self.records:
            if r["task"] == task and r["target"] == target and r["cpu"] == cpu and r.get("median_us"):
                key = json.dumps(r["trace"])
                times.setdefault(key, []).append(r["median_us"])
                first.setdefault(key, r)
        ranked = [(statistics.median(t), first[k]) for k, t in times.items()]
        return sorted(ranked, key=lambda pair: pair[0])

    def best(self, task, target, cpu):
        """The record of the fastest trace (see ranked), or None."""
        ranked = self.ranked(task, target, cpu)
        return ranked[0][1] if ranked else None
