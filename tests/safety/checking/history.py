"""Reading the workers' histories: one JSON object a line, an invoke and a
completion per operation sharing an id (tests/safety/history.c writes them,
and tests/safety/outcome.c says which error is which outcome).

An operation's outcome is one of:
  ok       it happened (completion type "ok")
  fail     it definitely did not happen (completion type "fail")
  info     unknown: it may have happened, or may yet
  pending  unknown too: the invoke has no completion (a process killed with -9)
Unknown operations have no response time (ret_ns is None): for the search
their response lies at +infinity (exclusion.py bounds how late an info
acquire may still take effect).

A killed process may leave its file's last line cut short; that line alone is
ignored (and counted). Any other unreadable line makes the input unreadable.
"""

import json

OUTCOMES = ("ok", "fail", "info")


class HistoryError(Exception):
    """The input cannot be read as histories (exit status 2)."""


class Op:
    """One operation: its invoke joined with its completion, if any."""

    __slots__ = ("id", "proc", "thread", "owner", "lock", "kind", "mode",
                 "op", "inv_ns", "ret_ns", "done_ns", "outcome", "token",
                 "value", "err", "source")

    def __init__(self, line, source):
        self.id = line["id"]
        self.proc = line.get("proc")
        self.thread = line.get("thread")
        self.owner = line.get("owner")
        self.lock = line.get("lock")
        self.kind = line.get("kind")
        self.mode = line.get("mode", "x")
        self.op = line["op"]
        self.inv_ns = line["mono_ns"]
        self.ret_ns = None      # response time, for certain outcomes only
        self.done_ns = None     # when the completion line was written
        self.outcome = "pending"
        self.token = line.get("token")
        self.value = line.get("value")
        self.err = None
        self.source = source

    @property
    def certain(self):
        """True when the outcome is known (ok or fail)."""
        return self.outcome in ("ok", "fail")

    def complete(self, line):
        """Joins the completion line to this invoke."""
        self.outcome = line["type"]
        self.done_ns = line["mono_ns"]
        if self.outcome in ("ok", "fail"):
            self.ret_ns = line["mono_ns"]
        for field in ("token", "value"):
            if line.get(field) is not None:
                setattr(self, field, line[field])
        self.err = line.get("err")

    def describe(self):
        """A short human line: who did what to which lock, when, outcome."""
        ret = "inf" if self.ret_ns is None else self.ret_ns
        extra = ""
        if self.token is not None:
            extra += " token=%s" % self.token
        if self.value is not None:
            extra += " value=%s" % self.value
        if self.err:
            extra += " err=%s" % self.err
        return "%s %s %s(%s) by %s [%s..%s] %s%s" % (
            self.id, self.lock, self.op, self.mode, self.owner,
            self.inv_ns, ret, self.outcome, extra)

    def to_json(self):
        """The operation as a JSON-ready dict, for the examples."""
        return {"id": self.id, "op": self.op, "lock": self.lock,
                "owner": self.owner, "mode": self.mode, "kind": self.kind,
                "outcome": self.outcome, "inv_ns": self.inv_ns,
                "ret_ns": self.ret_ns, "token": self.token,
                "value": self.value, "err": self.err}


class History:
    """All operations of all files, plus what reading them noticed."""

    def __init__(self):
        self.ops = []            # Op, in file order
        self.lost_signals = []   # the watchdog's "lost" lines (dicts)
        self.truncated_lines = 0
        self.orphan_completions = 0
        self.last_ns = 0         # the latest mono_ns seen anywhere

    def unknown_ops(self):
        """Operations whose outcome is unknown (info or pending)."""
        return [o for o in self.ops if not o.certain]


def _parse_lines(path):
    """Yields (line number, dict) for each line of one file; ignores a final
    partial line. Raises HistoryError for anything else unreadable."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise HistoryError("%s: %s" % (path, e.strerror or e))
    lines = data.split(b"\n")
    last = len(lines) - 1
    while last >= 0 and not lines[last].strip():
        last -= 1
    for n, raw in enumerate(lines[:last + 1], 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
            if not isinstance(line, dict):
                raise ValueError("not an object")
        except ValueError as e:
            if n - 1 == last:
                yield n, None   # a killed writer's cut line
                return
            raise HistoryError("%s:%d: not a JSON object (%s)" % (path, n, e))
        yield n, line


def _check_fields(line, path, n):
    """Refuses a line without the fields every line needs."""
    for field in ("id", "type", "op", "mono_ns"):
        if field not in line:
            raise HistoryError("%s:%d: no \"%s\"" % (path, n, field))
    if line["type"] not in ("invoke",) + OUTCOMES:
        raise HistoryError("%s:%d: unknown type %r" % (path, n, line["type"]))
    if not isinstance(line["mono_ns"], int):
        raise HistoryError("%s:%d: mono_ns is not an integer" % (path, n))


def read_histories(paths):
    """Reads every file into one History. Raises HistoryError."""
    history = History()
    open_ops = {}
    for path in paths:
        for n, line in _parse_lines(path):
            if line is None:
                history.truncated_lines += 1
                continue
            _check_fields(line, path, n)
            history.last_ns = max(history.last_ns, line["mono_ns"])
            if line["op"] == "lost":
                history.lost_signals.append(line)
                continue
            key = line["id"]
            if line["type"] == "invoke":
                if key in open_ops:
                    raise HistoryError("%s:%d: id %s invoked twice"
                                       % (path, n, key))
                op = Op(line, "%s:%d" % (path, n))
                open_ops[key] = op
                history.ops.append(op)
                continue
            op = open_ops.get(key)
            if op is None or op.outcome != "pending":
                history.orphan_completions += 1
                continue
            op.complete(line)
    return history
