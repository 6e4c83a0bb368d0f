"""The plain definition of a linearizable lock history, by exhaustive
search with no shortcut, and small random histories to feed it: the oracle
the checker's search is compared with in test_checker.py.
"""

from checking import lease_model
from checking.history import Op


def brute_force_linearizable(ops, horizon=None):
    """The plain definition, with no pruning, cut or heuristic: some order of
    the ok and unknown operations that respects real time, places every ok
    one and any of the unknown ones (an info one no later than horizon after
    its completion line), and that the lease model accepts."""
    inf = float("inf")
    items = []
    for o in ops:
        if o.outcome == "fail":
            continue
        until = inf
        if o.outcome == "info" and horizon is not None:
            until = o.done_ns + horizon
        items.append((o.inv_ns, o.ret_ns if o.outcome == "ok" else inf,
                      o.op == "acquire", o.owner, o.mode, o.outcome == "ok",
                      until))
    failed = set()

    def search(placed, state, latest):
        left = [i for i in range(len(items)) if not placed >> i & 1]
        if all(not items[i][5] for i in left):
            return True
        if (placed, state) in failed:
            return False
        first_ret = min(items[i][1] for i in left)
        for i in left:
            inv, _, acquire, owner, mode, _, until = items[i]
            if inv >= first_ret or until < latest:
                continue
            after = lease_model.step(state, acquire, owner, mode)
            if after is not None and search(placed | 1 << i, after,
                                             max(latest, inv)):
                return True
        failed.add((placed, state))
        return False

    return search(0, lease_model.FREE, -inf)


def random_lock_history(rng, length, overlapping=False):
    """A small random history of acquires and releases on one lock: 2 to 4
    owners, each sequential unless overlapping, any outcome, exclusive or
    read-write."""
    owners = "ABCD"[:rng.randint(2, 4)]
    rw = rng.random() < 0.3
    free_at = {o: rng.randint(0, 5) for o in owners}
    ops = []
    for seq in range(rng.randint(2, length)):
        owner = rng.choice(owners)
        inv = free_at[owner] + rng.randint(0, 3)
        ret = inv + rng.randint(1, 6)
        free_at[owner] = inv + 1 if overlapping else ret + 1
        op = Op({"id": "%s-%d" % (owner, seq), "owner": owner, "lock": "L",
                 "op": rng.choice(("acquire", "release")),
                 "kind": "rw" if rw else "lock",
                 "mode": rng.choice("xr") if rw else "x",
                 "mono_ns": inv}, "random")
        outcome = rng.choices(("ok", "fail", "info", "pending"),
                              (12, 2, 2, 1))[0]
        if outcome != "pending":
            op.complete({"type": outcome, "mono_ns": ret})
        ops.append(op)
    return ops
