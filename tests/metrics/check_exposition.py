"""check_exposition.py: rlock's Prometheus text, read by Prometheus's own
Python client parser (prometheus_client.parser), must say what the snapshot
says.

    check_exposition.py EXPOSITION.txt SNAPSHOT.json   (a sample's)
    check_exposition.py --url URL [--acquires N]   (a live /metrics)

With a snapshot, every sample is compared with the snapshot's value; a live
endpoint (examples/async_server) is checked for shape and for exactly N
acquisitions. Exits 0 when it parses and agrees, 1 when not, 77 (skip) when
prometheus_client is missing.
"""
import json
import math
import sys
import urllib.request

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("check_exposition: prometheus_client is not installed "
          "(python3-prometheus-client): skipped")
    sys.exit(77)

COUNTERS = {
    # family (as the parser names it: without _total) -> {labels: field}
    "rlock_acquires": {
        (("result", "immediate"),): "acquired_immediately",
        (("result", "after_wait"),): "acquired_after_wait",
        (("result", "timeout"),): "acquire_timeouts",
        (("result", "error"),): "acquire_errors",
    },
    "rlock_releases": {(): "releases"},
    "rlock_unlock_messages": {(): "unlock_messages"},
    "rlock_unlock_messages_unused": {(): "unlock_messages_unused"},
    "rlock_rechecks_found_free": {(): "rechecks_found_free"},
    "rlock_renewals": {(): "renewals_sent"},
    "rlock_renewals_failed": {(): "renewals_failed"},
    "rlock_locks_lost": {
        (("reason", "gone"),): "lost_gone",
        (("reason", "taken"),): "lost_taken",
        (("reason", "expired"),): "lost_expired",
        (("reason", "abandoned"),): "lost_abandoned",
    },
    "rlock_reconnects": {(): "reconnects"},
    "rlock_round_trips": {(): "round_trips"},
    "rlock_script_reloads": {(): "script_reloads"},
    "rlock_cluster_redirects": {
        (("kind", "moved"),): "cluster_moved",
        (("kind", "ask"),): "cluster_ask",
    },
    "rlock_cluster_tryagain": {(): "cluster_tryagain"},
}
HISTOGRAMS = {"rlock_wait_seconds": "wait", "rlock_hold_seconds": "hold"}
GAUGES = {"rlock_lease_margin_min_seconds"}


def fail(why):
    print(f"check_exposition: {why}")
    sys.exit(1)


def parse(text):
    families = {}
    for fam in text_string_to_metric_families(text):
        if fam.name in families:
            fail(f"family {fam.name} appears twice")
        if not fam.documentation:
            fail(f"family {fam.name} has no HELP")
        families[fam.name] = fam
    want = set(COUNTERS) | set(HISTOGRAMS) | GAUGES
    if set(families) != want:
        fail(f"families {sorted(families)}, expected {sorted(want)}")
    for name in COUNTERS:
        if families[name].type != "counter":
            fail(f"{name} is a {families[name].type}, not a counter")
        for s in families[name].samples:
            if not s.name.endswith("_total"):
                fail(f"counter sample {s.name} does not end in _total")
    for name in HISTOGRAMS:
        if families[name].type != "histogram":
            fail(f"{name} is a {families[name].type}, not a histogram")
    return families


def check_histogram_shape(fam):
    """Cumulative buckets, +Inf last and equal to _count."""
    buckets, count, total = [], None, None
    for s in fam.samples:
        if s.name.endswith("_bucket"):
            buckets.append((float(s.labels["le"]), s.value))
        elif s.name.endswith("_count"):
            count = s.value
        elif s.name.endswith("_sum"):
            total = s.value
    if count is None or total is None or not buckets:
        fail(f"{fam.name} lacks _bucket, _sum or _count")
    les = [le for le, _ in buckets]
    if les != sorted(les) or not math.isinf(les[-1]):
        fail(f"{fam.name}: le bounds out of order or no +Inf: {les}")
    values = [v for _, v in buckets]
    if values != sorted(values):
        fail(f"{fam.name}: buckets not cumulative: {values}")
    if values[-1] != count:
        fail(f"{fam.name}: +Inf bucket {values[-1]} != _count {count}")
    return buckets, count, total


def check_against(families, snap):
    for name, by_labels in COUNTERS.items():
        seen = {tuple(sorted(s.labels.items())): s.value
                for s in families[name].samples}
        if set(seen) != set(by_labels):
            fail(f"{name}: label sets {sorted(seen)}")
        for labels, field in by_labels.items():
            if seen[labels] != snap[field]:
                fail(f"{name}{dict(labels)} = {seen[labels]}, "
                     f"snapshot {field} = {snap[field]}")
    for name, field in HISTOGRAMS.items():
        buckets, count, total = check_histogram_shape(families[name])
        h = snap[field]
        if count != h["count"]:
            fail(f"{name}_count {count} != {h['count']}")
        if abs(total - h["sum_us"] / 1e6) > 1e-6 * max(1, total):
            fail(f"{name}_sum {total} != {h['sum_us']} us")
        for le, value in buckets:
            if math.isinf(le):
                continue
            want = sum(b["n"] for b in h["buckets"]
                       if 0 <= b["le_us"] <= round(le * 1e6))
            if value != want:
                fail(f"{name} le={le}: {value}, snapshot says {want}")
    margin = families["rlock_lease_margin_min_seconds"].samples[0].value
    want = snap["lease_margin_min_ms"]
    if (want < 0) != math.isnan(margin) or (want >= 0 and
                                            margin != want / 1000):
        fail(f"lease margin {margin}, snapshot {want} ms")


def main(argv):
    if len(argv) >= 3 and argv[1] == "--url":
        with urllib.request.urlopen(argv[2], timeout=10) as r:
            ctype = r.headers.get("Content-Type", "")
            text = r.read().decode("utf-8")
        if not ctype.startswith("text/plain"):
            fail(f"Content-Type {ctype!r}, expected text/plain")
        families = parse(text)
        for name in HISTOGRAMS:
            check_histogram_shape(families[name])
        acquired = sum(s.value for s in families["rlock_acquires"].samples
                       if s.labels["result"] in ("immediate", "after_wait"))
        if len(argv) > 4 and argv[3] == "--acquires" and \
                acquired != int(argv[4]):
            fail(f"{acquired} acquisitions, expected {argv[4]}")
        print(f"check_exposition: {len(families)} families from {argv[2]}, "
              f"{acquired:.0f} acquisitions")
        return 0
    if len(argv) != 3:
        print(__doc__)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        text = f.read()
    with open(argv[2], encoding="utf-8") as f:
        snap = json.load(f)
    families = parse(text)
    check_against(families, snap)
    print(f"check_exposition: {len(families)} families parse and agree "
          "with the snapshot")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
