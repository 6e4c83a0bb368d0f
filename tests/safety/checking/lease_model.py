"""The sequential specification of a lock with leases, which the search
checks histories against.

State: (writer, write count, readers), readers a sorted tuple of
(owner, count). An exclusive lock (lock, fair, fenced, redlock) only ever has
a writer; a read-write lock also has readers. Counts make reentrancy legal,
as in Redisson, although the workers do not use it.

A holder's lease may run out at any moment, which frees what it held. Rather
than a spontaneous "expire" step, each acquire expires exactly the holds that
stand in its way: keeping a hold never forbids anything later (it can still
run out later), so this is the most permissive choice, and it keeps the model
deterministic. Hence an acquire is always possible, and only a release can be
refused: release(o) needs o to hold that mode at that instant.

Redisson's rules kept here: the writer may also take the read lock and may
re-enter the write lock. One leniency: a reader that takes the write lock
keeps its own read holds (Redisson makes it wait for them to go, so a
later release of that read hold is possible only if the hold had expired
and the release should fail). The workers never upgrade, and with it an
owner's holds only ever matter to that owner's releases of the same mode,
which the search's shortcuts and the cuts rely on.
"""

FREE = (None, 0, ())


def _readers_add(readers, owner):
    """readers with owner's count raised by one."""
    out = []
    added = False
    for who, count in readers:
        if who == owner:
            out.append((who, count + 1))
            added = True
        else:
            out.append((who, count))
    if not added:
        out.append((owner, 1))
        out.sort()
    return tuple(out)


def _readers_remove(readers, owner):
    """readers with owner's count lowered by one, or None if it has none."""
    out = []
    found = False
    for who, count in readers:
        if who == owner:
            found = True
            if count > 1:
                out.append((who, count - 1))
        else:
            out.append((who, count))
    return tuple(out) if found else None


def _kills(keep, writer, readers, owner):
    """True if expiring the writer and the readers other than owner loses a
    hold in keep."""
    if not keep:
        return False
    if writer is not None and (writer, "x") in keep:
        return True
    return any(who != owner and (who, "r") in keep for who, _ in readers)


def step(state, acquire, owner, mode, keep=()):
    """The state after the operation, or None if the model forbids it.

    acquire: True for acquire, False for release; mode: "x" or "r".
    keep: (owner, mode) holds the caller knows must survive (their next
    operation is a release nothing else can make good); an acquire that
    would expire one of them is refused, as it leads nowhere."""
    writer, wcount, readers = state
    if acquire:
        if mode == "x":
            if writer == owner:
                return (writer, wcount + 1, readers)
            # every other hold ran out
            if _kills(keep, writer, readers, owner):
                return None
            return (owner, 1, tuple(r for r in readers if r[0] == owner))
        if writer is not None and writer != owner:
            if _kills(keep, writer, (), owner):
                return None
            writer, wcount = None, 0       # the other writer's lease ran out
        return (writer, wcount, _readers_add(readers, owner))
    if mode == "x":
        if writer != owner:
            return None
        if wcount > 1:
            return (writer, wcount - 1, readers)
        return (None, 0, readers)
    rest = _readers_remove(readers, owner)
    if rest is None:
        return None
    return (writer, wcount, rest)
