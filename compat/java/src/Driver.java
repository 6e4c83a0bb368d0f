/*
 * Driver: one Java Redisson client, driven over stdin by the compat tests
 * (compat/test_java_peer.c), in the style of compat/node's peers.
 *
 *     java -cp build/V/classes:build/V/lib/* Driver MODE ADDRESSES [key=value...]
 *
 * or, as the safety harness's Java worker (SafetyWorker.java, its options
 * the same as tests/safety/worker.c's):
 *
 *     java -cp build/V/classes:build/V/lib/* Driver safety OPTIONS...
 *
 * MODE and ADDRESSES: "single redis://host:port"; "sentinel MASTER@a,b,..."
 * (Redisson's sentinel config, compat/test_java_sentinel.c); "cluster
 * redis://host:port,redis://host:port,..." (clusterServersConfig with these
 * seeds and Redisson's default shardedSubscriptionMode, AUTO where the
 * version has it: compat/test_java_cluster.c).
 * Options: watchdog=MS (lockWatchdogTimeout, default 30000), timeout=MS,
 * retries=N and retry_interval=MS (command timeout and retries, Redisson's
 * defaults unless given), scan=MS (the cluster's scanInterval, default
 * 5000), sharded=AUTO|ON|OFF (the cluster's shardedSubscriptionMode, 3.29
 * and newer; default AUTO), max=MS (the guard, default 180000).
 *
 * Each stdin line is a command for one named thread of this JVM:
 *
 *     TID OP KIND NAME [ARGS...]
 *
 * TID names a worker thread (made on first use, kept until exit), because a
 * Redisson lock belongs to the Java thread that took it: the same TID is the
 * same owner. Commands of one TID run in order; different TIDs run at once,
 * so one can wait on a lock while another holds or probes. KIND is lock,
 * fair, read, write, spin, fenced, multi or red; NAME is the lock name, or
 * for multi and red a comma-separated list of names of plain locks.
 *
 *     OP and ARGS                 calls                  answer's fields
 *     lock [LEASE_MS]             lock()                 waited_ms, token,
 *                                                        field
 *     trylock WAIT_MS [LEASE_MS]  tryLock                acquired, token
 *     unlock                      unlock()               ok, t0 (when the
 *                                                        call began), error
 *     force                       forceUnlock()          deleted
 *     probe                       isLocked, isHeldByCurrentThread, getHoldCount
 *                                                        locked, held, holds
 *     contend COUNTER ITER THINK_MS
 *         ITER times: lock, GET COUNTER, sleep 1 ms, SET +1, RPUSH COUNTER:log j,
 *         unlock, sleep THINK_MS                         iterations, ms
 *     bench COUNTER SECONDS
 *         for SECONDS: lock, GET COUNTER, SET +1, unlock, at full speed
 *         (rlock-bench's mixed-java scenario)   acquisitions, ms, waits_us
 *                                               (every lock() call's wait)
 *
 * KIND sem is an RSemaphore (getSemaphore(NAME)), with its own ops:
 *
 *     setpermits N [TTL_MS]       trySetPermits          set
 *     acquire N WAIT_MS           tryAcquire(N, WAIT_MS) acquired, waited_ms
 *                                 (acquire(N) for WAIT_MS -1)
 *     release N                   release(N)             t0
 *     available                   availablePermits()     permits
 *     semcontend COUNTER ITER PERMITS
 *         ITER times: acquire(1), INCR COUNTER (an RAtomicLong), and when
 *         it exceeds PERMITS RPUSH COUNTER:over j; sleep 1 ms, DECR
 *         COUNTER, release(1)                            iterations, ms
 *
 * KIND psem is an RPermitExpirableSemaphore (getPermitExpirableSemaphore):
 *
 *     setpermits N                trySetPermits          set
 *     acquire WAIT_MS LEASE_MS    tryAcquire(wait, lease) id (null: none),
 *                                 (LEASE_MS -1: no lease) waited_ms
 *     release ID                  tryRelease(ID)         released, t0
 *     available                   availablePermits()     permits
 *
 * KIND may also be nonreentrant or nonreentrant_fair (Redisson 4.4+'s
 * getNonReentrantLock, getNonReentrantFairLock: the lock ops above; a
 * refused re-acquire is an "error" event naming
 * IllegalMonitorStateException), or latch, a count-down latch
 * (getCountDownLatch), whose ops are:
 *
 *     setcount N                  trySetCount(N)         set
 *     countdown                   countDown()            t0 (when it began)
 *     await [WAIT_MS]             await() / await(ms)    opened, waited_ms
 *     count                       getCount()             count
 *     delete                      delete()               deleted
 *
 * token is the fenced lock's, null for other kinds; field is the hash field
 * Redisson writes for this thread, "<client id>:<thread id>". Every answer
 * is one JSON
 * line on stdout, {"event":OP,"tid":TID,"t":<epoch ms>,...fields}; the first
 * line is {"event":"ready","version":V} once connected. An unexpected
 * exception becomes {"event":"error","tid":..,"op":..,"error":..}; a refused
 * or timed-out unlock is an answer, with ok false. End of
 * stdin exits; so does the guard, with status 3, after max ms.
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.RedissonMultiLock;
import org.redisson.RedissonRedLock;
import org.redisson.api.RAtomicLong;
import org.redisson.api.RBucket;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.BaseConfig;
import org.redisson.config.ClusterServersConfig;
import org.redisson.config.Config;
import org.redisson.config.SingleServerConfig;

public final class Driver {
    private static final PrintStream OUT =
        new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true,
                        StandardCharsets.UTF_8);

    private final RedissonClient client;
    private final Map<String, ExecutorService> workers = new HashMap<>();

    private Driver(RedissonClient client) {
        this.client = client;
    }

    // ------------------------------------------------------------ events

    /* Appends s to b as a JSON string. */
    private static void quote(StringBuilder b, String s) {
        b.append('"');
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\')
                b.append('\\').append(c);
            else if (c < 0x20)
                b.append(String.format("\\u%04x", (int) c));
            else
                b.append(c);
        }
        b.append('"');
    }

    /* Writes one event; fields alternate name, value (String, Number, Boolean
     * or null). One println per event, under one lock, so that lines from
     * different worker threads never mix. */
    static void emit(String event, String tid, Object... fields) {
        StringBuilder b = new StringBuilder("{\"event\":");
        quote(b, event);
        if (tid != null) {
            b.append(",\"tid\":");
            quote(b, tid);
        }
        b.append(",\"t\":").append(System.currentTimeMillis());
        for (int i = 0; i + 1 < fields.length; i += 2) {
            b.append(',');
            quote(b, (String) fields[i]);
            b.append(':');
            Object v = fields[i + 1];
            if (v == null)
                b.append("null");
            else if (v instanceof Number || v instanceof Boolean)
                b.append(v);
            else if (v instanceof long[])
                appendArray(b, (long[]) v);
            else
                quote(b, v.toString());
        }
        b.append('}');
        synchronized (OUT) {
            OUT.println(b);
        }
    }

    private static void appendArray(StringBuilder b, long[] v) {
        b.append('[');
        for (int i = 0; i < v.length; i++)
            b.append(i > 0 ? "," : "").append(v[i]);
        b.append(']');
    }

    private static String describe(Throwable e) {
        Throwable t = e instanceof InvocationTargetException ? e.getCause() : e;
        String s = t.getClass().getSimpleName() + ": " + t.getMessage();
        // Redisson's timeout messages quote whole scripts: keep lines short
        return s.length() > 240 ? s.substring(0, 240) + "..." : s;
    }

    // ------------------------------------------------------------- locks

    /* The lock object of KIND on NAME. getFencedLock is looked up by
     * reflection so that one source compiles against versions before 3.19,
     * which lack it. */
    private RLock lockOf(String kind, String name) throws Exception {
        switch (kind) {
        case "lock":
            return client.getLock(name);
        case "fair":
            return client.getFairLock(name);
        case "read":
            return client.getReadWriteLock(name).readLock();
        case "write":
            return client.getReadWriteLock(name).writeLock();
        case "spin":
            return client.getSpinLock(name);
        case "fenced":
            return (RLock) RedissonClient.class.getMethod("getFencedLock", String.class)
                .invoke(client, name);
        case "nonreentrant":
        case "nonreentrant_fair": {
            // by reflection: versions before 4.4 lack them
            String getter = kind.equals("nonreentrant") ? "getNonReentrantLock"
                                                        : "getNonReentrantFairLock";
            return (RLock) RedissonClient.class.getMethod(getter, String.class)
                .invoke(client, name);
        }
        case "multi":
        case "red": {
            String[] names = name.split(",");
            RLock[] locks = new RLock[names.length];
            for (int i = 0; i < names.length; i++)
                locks[i] = client.getLock(names[i]);
            return kind.equals("multi") ? new RedissonMultiLock(locks)
                                        : new RedissonRedLock(locks);
        }
        default:
            throw new IllegalArgumentException("unknown kind " + kind);
        }
    }

    /* The fenced lock's current token (getToken), or null for other kinds. */
    private static Long tokenOf(String kind, RLock lock) throws Exception {
        if (!kind.equals("fenced"))
            return null;
        Method m = lock.getClass().getMethod("getToken");
        return (Long) m.invoke(lock);
    }

    /* The hash field this thread's holds are counted in, as Redisson names
     * it (RedissonBaseLock#getLockName): the client's id and the thread's. */
    @SuppressWarnings("deprecation")
    private String fieldOf() {
        return client.getId() + ":" + Thread.currentThread().getId();
    }

    private static long longArg(String[] a, int i, long dflt) {
        return a.length > i ? Long.parseLong(a[i]) : dflt;
    }

    // --------------------------------------------------------------- ops

    private void run(String tid, String[] a) {
        String op = a[1];
        try {
            String kind = a[2];
            String name = a[3];
            if (kind.equals("sem")) {
                runSemaphore(tid, op, client.getSemaphore(name), a);
                return;
            }
            if (kind.equals("psem")) {
                runPermits(tid, op, client.getPermitExpirableSemaphore(name), a);
                return;
            }
            if (kind.equals("latch")) {
                latch(tid, op, client.getCountDownLatch(name), a);
                return;
            }
            RLock lock = lockOf(kind, name);
            switch (op) {
            case "lock": {
                long lease = longArg(a, 4, -1);
                long start = System.nanoTime();
                if (lease > 0)
                    lock.lock(lease, TimeUnit.MILLISECONDS);
                else
                    lock.lock();
                emit("lock", tid, "waited_ms", (System.nanoTime() - start) / 1000000,
                     "token", tokenOf(kind, lock), "field", fieldOf());
                break;
            }
            case "trylock": {
                long waitMs = longArg(a, 4, 0);
                long lease = longArg(a, 5, -1);
                boolean got = lease > 0
                    ? lock.tryLock(waitMs, lease, TimeUnit.MILLISECONDS)
                    : lock.tryLock(waitMs, TimeUnit.MILLISECONDS);
                emit("trylock", tid, "acquired", got, "token",
                     got ? tokenOf(kind, lock) : null);
                break;
            }
            case "unlock": {
                long t0 = System.currentTimeMillis();
                try {
                    lock.unlock();
                    emit("unlock", tid, "ok", true, "t0", t0);
                } catch (IllegalMonitorStateException | org.redisson.client.RedisException e) {
                    // a refusal, or a timeout the latch test provokes
                    emit("unlock", tid, "ok", false, "t0", t0, "error", describe(e));
                }
                break;
            }
            case "force":
                emit("force", tid, "deleted", lock.forceUnlock());
                break;
            case "probe":
                emit("probe", tid, "locked", lock.isLocked(), "held",
                     lock.isHeldByCurrentThread(), "holds", lock.getHoldCount());
                break;
            case "contend":
                contend(tid, lock, a[4], Long.parseLong(a[5]), Long.parseLong(a[6]));
                break;
            case "bench":
                bench(tid, lock, a[4], Double.parseDouble(a[5]));
                break;
            default:
                throw new IllegalArgumentException("unknown op " + op);
            }
        } catch (Throwable e) {
            emit("error", tid, "op", op, "error", describe(e));
        }
    }

    // -------------------------------------------------------- semaphores

    private void runSemaphore(String tid, String op, RSemaphore sem, String[] a)
        throws Exception {
        switch (op) {
        case "setpermits": {
            int permits = Integer.parseInt(a[4]);
            long ttl = longArg(a, 5, 0);
            boolean set = ttl > 0
                ? (Boolean) RSemaphore.class
                      .getMethod("trySetPermits", int.class, java.time.Duration.class)
                      .invoke(sem, permits, java.time.Duration.ofMillis(ttl))
                : sem.trySetPermits(permits);
            emit("setpermits", tid, "set", set);
            break;
        }
        case "acquire": {
            int permits = Integer.parseInt(a[4]);
            long waitMs = longArg(a, 5, 0);
            long start = System.nanoTime();
            boolean got = true;
            if (waitMs < 0)
                sem.acquire(permits);
            else
                got = sem.tryAcquire(permits, waitMs, TimeUnit.MILLISECONDS);
            emit("acquire", tid, "acquired", got, "waited_ms",
                 (System.nanoTime() - start) / 1000000);
            break;
        }
        case "release": {
            long t0 = System.currentTimeMillis();
            sem.release(Integer.parseInt(a[4]));
            emit("release", tid, "t0", t0);
            break;
        }
        case "available":
            emit("available", tid, "permits", sem.availablePermits());
            break;
        case "semcontend":
            semContend(tid, sem, a[4], Long.parseLong(a[5]), Long.parseLong(a[6]));
            break;
        default:
            throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private void runPermits(String tid, String op, RPermitExpirableSemaphore sem,
                            String[] a) throws Exception {
        switch (op) {
        case "setpermits":
            emit("setpermits", tid, "set", sem.trySetPermits(Integer.parseInt(a[4])));
            break;
        case "acquire": {
            long waitMs = Long.parseLong(a[4]);
            long lease = Long.parseLong(a[5]);
            long start = System.nanoTime();
            String id = sem.tryAcquire(waitMs, lease, TimeUnit.MILLISECONDS);
            emit("acquire", tid, "id", id, "waited_ms",
                 (System.nanoTime() - start) / 1000000);
            break;
        }
        case "release": {
            long t0 = System.currentTimeMillis();
            emit("release", tid, "released", sem.tryRelease(a[4]), "t0", t0);
            break;
        }
        case "available":
            emit("available", tid, "permits", sem.availablePermits());
            break;
        default:
            throw new IllegalArgumentException("unknown op " + op);
        }
    }

    /* The exclusion loop of the semaphore tests: the counter says how many
     * hold a permit at once, across every process that runs it. */
    private void semContend(String tid, RSemaphore sem, String counter, long iterations,
                            long permits) throws InterruptedException {
        RAtomicLong inside = client.getAtomicLong(counter);
        long start = System.nanoTime();
        for (long i = 0; i < iterations; i++) {
            sem.acquire(1);
            try {
                if (inside.incrementAndGet() > permits)
                    client.<String>getList(counter + ":over", StringCodec.INSTANCE).add("j");
                Thread.sleep(1);
                inside.decrementAndGet();
            } finally {
                sem.release(1);
            }
        }
        emit("semcontend", tid, "iterations", iterations, "ms",
             (System.nanoTime() - start) / 1000000);
    }

    // ------------------------------------------------------- latches

    /* The count-down latch's ops (see the file comment). */
    private static void latch(String tid, String op, RCountDownLatch latch, String[] a)
            throws InterruptedException {
        switch (op) {
        case "setcount":
            emit(op, tid, "set", latch.trySetCount(Long.parseLong(a[4])));
            break;
        case "countdown": {
            long t0 = System.currentTimeMillis();
            latch.countDown();
            emit(op, tid, "t0", t0);
            break;
        }
        case "await": {
            long start = System.nanoTime();
            boolean opened = true;
            if (a.length > 4)
                opened = latch.await(Long.parseLong(a[4]), TimeUnit.MILLISECONDS);
            else
                latch.await();
            emit(op, tid, "opened", opened, "waited_ms",
                 (System.nanoTime() - start) / 1000000);
            break;
        }
        case "count":
            emit(op, tid, "count", latch.getCount());
            break;
        case "delete":
            emit(op, tid, "deleted", latch.delete());
            break;
        default:
            throw new IllegalArgumentException("unknown latch op " + op);
        }
    }

    /* The counter loop of the mutual-exclusion test: GET and SET are two
     * commands with a pause between, so only the lock keeps increments from
     * being lost. */
    private void contend(String tid, RLock lock, String counter, long iterations,
                         long thinkMs) throws InterruptedException {
        RBucket<String> bucket = client.getBucket(counter, StringCodec.INSTANCE);
        long start = System.nanoTime();
        for (long i = 0; i < iterations; i++) {
            lock.lock();
            try {
                String v = bucket.get();
                Thread.sleep(1);
                bucket.set(Long.toString((v == null ? 0 : Long.parseLong(v)) + 1));
                client.<String>getList(counter + ":log", StringCodec.INSTANCE).add("j");
            } finally {
                lock.unlock();
            }
            Thread.sleep(thinkMs);
        }
        emit("contend", tid, "iterations", iterations, "ms",
             (System.nanoTime() - start) / 1000000);
    }

    /* The Java side of rlock-bench's mixed-java scenario: the critical
     * section of rlock-bench's contended workers (GET then SET +1, two
     * commands) at full speed, no pause, so that both sides compete for the
     * lock alike. Every lock() call's wait is kept, in microseconds, for the
     * benchmark's own percentiles and longest wait. */
    private void bench(String tid, RLock lock, String counter, double seconds) {
        RBucket<String> bucket = client.getBucket(counter, StringCodec.INSTANCE);
        long[] waits = new long[4096];
        int n = 0;
        long start = System.nanoTime();
        long until = start + (long) (seconds * 1e9);
        long end = start;
        while (end < until) {
            long t0 = System.nanoTime();
            lock.lock();
            long waited = System.nanoTime() - t0;
            try {
                String v = bucket.get();
                bucket.set(Long.toString((v == null ? 0 : Long.parseLong(v)) + 1));
            } finally {
                lock.unlock();
            }
            if (n == waits.length)
                waits = java.util.Arrays.copyOf(waits, 2 * n);
            waits[n++] = waited / 1000;
            end = System.nanoTime();
        }
        emit("bench", tid, "acquisitions", n, "ms", (end - start) / 1e6, "waits_us",
             java.util.Arrays.copyOf(waits, n));
    }

    private void dispatch(String line) {
        String[] a = line.trim().split("\\s+");
        if (a.length < 4) {
            emit("error", null, "error", "bad command: " + line);
            return;
        }
        String tid = a[0];
        workers.computeIfAbsent(tid, k -> Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "peer-" + k);
            t.setDaemon(true);
            return t;
        })).execute(() -> run(tid, a));
    }

    // -------------------------------------------------------------- main

    /* The command timeout and retries of options timeout, retries and
     * retry_interval, where given. */
    private static void commandOptions(BaseConfig<?> b, Map<String, String> opt) {
        if (opt.containsKey("timeout"))
            b.setTimeout(Integer.parseInt(opt.get("timeout")));
        if (opt.containsKey("retries"))
            b.setRetryAttempts(Integer.parseInt(opt.get("retries")));
        if (opt.containsKey("retry_interval"))
            b.setRetryInterval(Integer.parseInt(opt.get("retry_interval")));
    }

    /* shardedSubscriptionMode by reflection: one source compiles against
     * versions before 3.29, which lack it (and refuse the option). */
    private static void setShardedMode(ClusterServersConfig s, String mode) {
        try {
            Class<?> e = Class.forName("org.redisson.config.ShardedSubscriptionMode");
            Object v = e.getMethod("valueOf", String.class).invoke(null, mode);
            s.getClass().getMethod("setShardedSubscriptionMode", e).invoke(s, v);
        } catch (ReflectiveOperationException x) {
            throw new IllegalArgumentException("sharded=" + mode + ": " + describe(x));
        }
    }

    /* Also SafetyWorker's (its --uri, made into MODE and ADDRESSES). */
    static Config config(String mode, String addresses, Map<String, String> opt) {
        Config c = new Config();
        c.setLockWatchdogTimeout(Long.parseLong(opt.getOrDefault("watchdog", "30000")));
        // A small JVM starts faster and leaves the 2-core machine to the test.
        c.setThreads(2);
        c.setNettyThreads(4);
        switch (mode) {
        case "single": {
            // A JVM starting on a loaded 2-core machine can be slow to open
            // its first connections: Redisson's 10 s would be tight.
            SingleServerConfig s = c.useSingleServer().setAddress(addresses)
                .setConnectTimeout(30000)
                .setConnectionMinimumIdleSize(2)
                .setConnectionPoolSize(16)
                .setSubscriptionConnectionMinimumIdleSize(1);
            commandOptions(s, opt);
            break;
        }
        case "cluster": {
            // Redisson opens 24 idle connections to every master and to
            // every replica by default: 144 on six nodes, slow to open on a
            // loaded machine, and not needed by a handful of threads.
            ClusterServersConfig s = c.useClusterServers()
                .addNodeAddress(addresses.split(","))
                .setConnectTimeout(30000)
                .setMasterConnectionMinimumIdleSize(2)
                .setMasterConnectionPoolSize(16)
                .setSlaveConnectionMinimumIdleSize(1)
                .setSlaveConnectionPoolSize(4)
                .setSubscriptionConnectionMinimumIdleSize(1);
            if (opt.containsKey("scan"))
                s.setScanInterval(Integer.parseInt(opt.get("scan")));
            if (opt.containsKey("sharded"))
                setShardedMode(s, opt.get("sharded"));
            commandOptions(s, opt);
            break;
        }
        case "sentinel": {
            String[] parts = addresses.split("@", 2);
            c.useSentinelServers().setMasterName(parts[0])
                .addSentinelAddress(parts[1].split(","));
            break;
        }
        default:
            throw new IllegalArgumentException("unknown mode " + mode);
        }
        return c;
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("safety")) {
            SafetyWorker.main(java.util.Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        if (args.length < 2) {
            emit("error", null, "error", "usage: Driver MODE ADDRESSES [key=value...]");
            System.exit(2);
        }
        Map<String, String> opt = new HashMap<>();
        for (int i = 2; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            opt.put(kv[0], kv.length > 1 ? kv[1] : "");
        }
        long max = Long.parseLong(opt.getOrDefault("max", "180000"));
        Thread guard = new Thread(() -> {
            try {
                Thread.sleep(max);
            } catch (InterruptedException e) {
                return;
            }
            emit("error", null, "error", "guard: still running after " + max + " ms");
            Runtime.getRuntime().halt(3);
        });
        guard.setDaemon(true);
        guard.start();

        Driver d;
        try {
            d = new Driver(Redisson.create(config(args[0], args[1], opt)));
        } catch (RuntimeException e) {
            emit("error", null, "error", "connect: " + describe(e));
            Runtime.getRuntime().halt(1);
            return;
        }
        emit("ready", null, "version", Redisson.class.getPackage().getImplementationVersion());
        BufferedReader in =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null;)
            if (!line.isBlank())
                d.dispatch(line);
        // Holds left at end of input run out with their lease, as a killed
        // process's would; the test's Redis is thrown away anyway.
        Runtime.getRuntime().halt(0);
    }
}
