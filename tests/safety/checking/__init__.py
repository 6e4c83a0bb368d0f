"""The safety checker's parts (tests/safety/checker.py is the entry point).

history      reads the workers' JSON-lines histories into operations
lease_model  what a lock with leases may do: the sequential specification
wgl          the linearizability search (Wing & Gong / Lowe, memoized)
exclusion    mutual exclusion per lock: cuts, searches, proven violations
counters     lost updates on the critical sections' counters
tokens       fencing tokens in real-time order
liveness     waiters after the faults are healed
report       the summary and the JSON object
"""
