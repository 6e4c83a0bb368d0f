"""Fencing tokens: per lock, an acquire that returned before another was
invoked must carry a smaller token (real-time order), and no two
acquisitions may share one. Each acquire that breaks this is reported once,
with the earlier acquire that shows it.
"""

import bisect


def check_tokens(ops):
    """{lock: [(earlier Op, later Op), ...]}: acquire-ok pairs out of
    order."""
    by_lock = {}
    for o in ops:
        if o.op == "acquire" and o.outcome == "ok" and o.token is not None:
            by_lock.setdefault(o.lock, []).append(o)
    out = {}
    for lock, acqs in by_lock.items():
        acqs.sort(key=lambda o: o.ret_ns)
        rets = [o.ret_ns for o in acqs]
        best = []          # best[i]: the acquire with the largest token
        for o in acqs:     # among acqs[:i+1]
            if not best or o.token > best[-1].token:
                best.append(o)
            else:
                best.append(best[-1])
        pairs = []
        seen_tokens = {}
        for o in sorted(acqs, key=lambda o: o.inv_ns):
            i = bisect.bisect_left(rets, o.inv_ns)
            if i > 0 and best[i - 1].token >= o.token:
                pairs.append((best[i - 1], o))
                continue
            twin = seen_tokens.get(o.token)
            if twin is not None and twin.owner != o.owner:
                pairs.append((twin, o))
            seen_tokens.setdefault(o.token, o)
        out[lock] = pairs
    return out
