/*
 * SafetyWorker: the Java Redisson client process of the safety harness
 * (tests/safety), the mixed fleet's counterpart of safety_worker: the same
 * options, the same operations, the same history lines, so that the
 * checker reads both alike. Run through the compat driver:
 *
 *     java -cp build/V/classes:build/V/lib/* Driver safety
 *          --uri URI [--uri URI...] --store URI --process NAME
 *          --kind lock|fair|rw|fenced|redlock --history FILE [--threads N] [--names N] [--seconds S | --ops N]
 *          [--lease-ms L] [--wait-ms W] [--hold-ms H] [--seed N]
 *          [--watchdog-ms W] [--sync-replicas N] [--queue on|off]
 *          [--fence-script FILE]
 *
 * --uri is an rlock URI: redis://host:port, redis+sentinel://h:p,h:p/master
 * or redis+cluster://h:p,h:p (valkey spellings too), made into Redisson's
 * single, sentinel or cluster config as Driver.config() makes them. Each
 * actor is a Java thread, the owner of its locks as in Redisson: owner is
 * "<client id>:<thread id>", what Redisson writes in the lock hash.
 *
 * --kind redlock takes one --uri per independent master, as the C worker
 * does, and one RedissonClient each; an acquire is a RedissonRedLock over
 * the RLock of the same name on every master (safety:redlock:N), made once
 * per actor and name, as the C worker makes its rlock_redlock_new. Each
 * master then holds what a plain RLock writes there, the hash field named
 * by that master's client id and the thread id, as rlock's Redlock writes
 * through its per-master clients: the two exclude each other. The owner in
 * the history is the first client's, as in the C worker. RedissonRedLock's
 * unlock ignores every master's error, so its release is always ok.
 * --sync-replicas N > 0 sets checkLockSyncedSlaves (Redisson's default is
 * on, rlock's off: both are set to the same). --queue is accepted and
 * ignored: Redisson has no waiter queue. --async is refused (exit 2), and
 * so are several --uri for another kind than redlock, and fenced on a
 * version without getFencedLock (before 3.19). Redisson has no lost-lock signal: no "lost" lines.
 *
 * How outcomes map (as tests/safety/outcome.c, in Java's terms):
 *   acquire  true: ok; false: fail RLOCK_ETIMEDOUT; an exception: info
 *            with its class name (timeout, connection: unknown outcome)
 *   release  returns: ok; IllegalMonitorStateException (not held by this
 *            thread: nothing released): fail RLOCK_ENOTOWNER; any other
 *            exception: info
 *   store    ok; an error reply: fail FENCED (the fencing store refused the
 *            token) or ESTORE; a timeout or connection error: info EIO
 *
 * mono_ns is System.nanoTime(), which on Linux is CLOCK_MONOTONIC, the C
 * worker's clock; wall_ms is System.currentTimeMillis(). Lines are appended
 * to the history file (O_APPEND) one write each. Exit status: 0 when it ran
 * to its end; 2 on bad arguments; 1 when it could not start. SIGTERM: the
 * actors stop after the operation under way, and the worker exits 0.
 */
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.redisson.Redisson;
import org.redisson.RedissonRedLock;
import org.redisson.api.RLock;
import org.redisson.api.RScript;
import org.redisson.api.RedissonClient;
import org.redisson.client.RedisConnectionException;
import org.redisson.client.RedisException;
import org.redisson.client.RedisTimeoutException;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

final class SafetyWorker {
    private static final List<String> KINDS =
        Arrays.asList("lock", "fair", "rw", "fenced", "redlock");
    /* The C worker's WORKER_MAX_URIS: a Redlock's masters. */
    private static final int MAX_URIS = 5;

    /* Options, with the C worker's defaults. */
    private final List<String> uris = new ArrayList<>();
    private String storeUri, process, kind, historyPath, fenceScriptPath;
    private int threads = 4, names = 2, syncReplicas = 0;
    private long seconds = 0, ops = 0, leaseMs = -1, waitMs = 3000, holdMs = 5;
    private long watchdogMs = 30000, seed = System.nanoTime();

    /* clients[0] is the client of every kind but redlock, which has one
     * per --uri. */
    private RedissonClient[] clients;
    private RedissonClient client, store;
    private FileOutputStream history;
    private String fenceScript;
    private final AtomicBoolean stop = new AtomicBoolean();
    private long deadlineNs;

    // ------------------------------------------------------------ options

    private static void usage(String why) {
        System.err.println("Driver safety: " + why);
        System.err.println("usage: Driver safety --uri URI [--uri URI...] --store URI"
                           + " --process NAME --kind lock|fair|rw|fenced|redlock"
                           + " --history FILE [--threads N]"
                           + " [--names N] [--seconds S | --ops N] [--lease-ms L]"
                           + " [--wait-ms W] [--hold-ms H] [--seed N] [--watchdog-ms W]"
                           + " [--sync-replicas N] [--queue on|off] [--fence-script FILE]");
        Runtime.getRuntime().halt(2);
    }

    private static long number(String option, String text, long lo, long hi) {
        try {
            long v = Long.parseLong(text);
            if (v >= lo && v <= hi)
                return v;
        } catch (NumberFormatException e) {
            // reported below
        }
        usage(option + ": " + text + " is not a number in [" + lo + ", " + hi + "]");
        return lo;
    }

    private void parse(String[] args) {
        for (int i = 0; i < args.length; i++) {
            String o = args[i];
            if (o.equals("--async"))
                usage("--async: the Java worker has no async mode");
            if (i + 1 >= args.length)
                usage(o + ": a value is needed");
            String v = args[++i];
            switch (o) {
            case "--uri":
                if (uris.size() == MAX_URIS)
                    usage("too many --uri");
                uris.add(v);
                break;
            case "--store": storeUri = v; break;
            case "--process": process = v; break;
            case "--kind": kind = v; break;
            case "--history": historyPath = v; break;
            case "--threads": threads = (int) number(o, v, 1, 256); break;
            case "--names": names = (int) number(o, v, 1, 1024); break;
            case "--seconds": seconds = number(o, v, 1, 86400 * 7); break;
            case "--ops": ops = number(o, v, 1, Long.MAX_VALUE / 2); break;
            case "--lease-ms": leaseMs = number(o, v, -1, 1L << 50); break;
            case "--wait-ms": waitMs = number(o, v, 0, 1 << 30); break;
            case "--hold-ms": holdMs = number(o, v, 0, 1 << 30); break;
            case "--seed": seed = number(o, v, 0, Long.MAX_VALUE); break;
            case "--watchdog-ms": watchdogMs = number(o, v, 30, Integer.MAX_VALUE); break;
            case "--sync-replicas": syncReplicas = (int) number(o, v, 0, 64); break;
            case "--queue":
                if (!v.equals("on") && !v.equals("off"))
                    usage("--queue must be on or off");
                break;
            case "--fence-script": fenceScriptPath = v; break;
            default: usage("unknown option " + o);
            }
        }
        if (uris.isEmpty() || storeUri == null || process == null || kind == null
            || historyPath == null)
            usage("--uri, --store, --process, --kind and --history are needed");
        if (!process.matches("[A-Za-z0-9_.-]{1,32}"))
            usage("--process: 1-32 of A-Z a-z 0-9 _ . -");
        if (!KINDS.contains(kind))
            usage("--kind must be lock, fair, rw, fenced or redlock");
        if (!kind.equals("redlock") && uris.size() != 1)
            usage("only --kind redlock takes several --uri");
        if (leaseMs == 0)
            usage("--lease-ms must be -1 or positive");
        if (seconds > 0 && ops > 0)
            usage("--seconds or --ops, not both");
        if (seconds == 0 && ops == 0)
            seconds = 10;
    }

    /* An rlock URI as Driver.config()'s mode and addresses. */
    private static String[] redissonAddresses(String uri) {
        java.util.regex.Matcher m = java.util.regex.Pattern
            .compile("(?i)(redis|valkey)(\\+sentinel|\\+cluster)?://([^/]+)(/([^/]+))?/?")
            .matcher(uri);
        if (!m.matches())
            usage("--uri: " + uri + " is not redis://, redis+sentinel:// or redis+cluster://");
        List<String> hosts = new ArrayList<>();
        for (String h : m.group(3).split(","))
            hosts.add("redis://" + h);
        String mode = m.group(2) == null ? "single" : m.group(2).substring(1).toLowerCase();
        switch (mode) {
        case "single":
            if (hosts.size() != 1 || m.group(5) != null)
                usage("--uri: one host, and no /db");
            return new String[] {"single", hosts.get(0)};
        case "sentinel":
            if (m.group(5) == null)
                usage("--uri: a sentinel URI names its master");
            return new String[] {"sentinel", m.group(5) + "@" + String.join(",", hosts)};
        default:
            return new String[] {"cluster", String.join(",", hosts)};
        }
    }

    // ------------------------------------------------------------ history

    /* Appends one line: fields alternate name and value (String, Number or
     * null: left out). One write per line, so lines never interleave. */
    private void line(String id, String type, String op, Actor a, Object... fields) {
        StringBuilder b = new StringBuilder(256);
        b.append("{\"id\":\"").append(id).append("\",\"type\":\"").append(type)
            .append("\",\"op\":\"").append(op).append("\",\"proc\":\"").append(process)
            .append("\",\"thread\":").append(a.index).append(",\"owner\":\"").append(a.owner)
            .append("\",\"lock\":\"").append(a.lock).append("\",\"kind\":\"").append(kind)
            .append("\",\"mode\":\"").append(a.mode).append("\",\"mono_ns\":")
            .append(System.nanoTime()).append(",\"wall_ms\":").append(System.currentTimeMillis());
        for (int i = 0; i + 1 < fields.length; i += 2) {
            Object v = fields[i + 1];
            if (v == null)
                continue;
            b.append(",\"").append(fields[i]).append("\":");
            if (v instanceof Number)
                b.append(v);
            else
                b.append('"').append(v).append('"');
        }
        b.append("}\n");
        byte[] bytes = b.toString().getBytes(StandardCharsets.UTF_8);
        synchronized (this) {
            try {
                history.write(bytes);
            } catch (IOException e) {
                System.err.println("Driver safety: history: " + e.getMessage());
            }
        }
    }

    // ------------------------------------------------------------- actors

    /* One thread's state: its operation under way. */
    private final class Actor implements Runnable {
        final int index;
        final Random rng;
        /* This thread's Redlock per name, made on first use. */
        final RLock[] redlocks = new RLock[names];
        String owner = "", lock = "";
        int nameIndex;
        char mode = 'x';
        long seq = 1, token = 0, value = 0, done = 0;
        boolean readOk;

        Actor(int index) {
            this.index = index;
            this.rng = new Random(seed * 7919 + index);
        }

        String id(long s) {
            return process + "-" + index + "-" + s;
        }

        @SuppressWarnings("deprecation")
        public void run() {
            owner = client.getId() + ":" + Thread.currentThread().getId();
            while (!stop.get() && (ops > 0 ? done < ops : System.nanoTime() < deadlineNs))
                operation();
        }

        private RLock handle() throws Exception {
            switch (kind) {
            case "fair":
                return client.getFairLock(lock);
            case "rw":
                return mode == 'r' ? client.getReadWriteLock(lock).readLock()
                                   : client.getReadWriteLock(lock).writeLock();
            case "fenced":
                return (RLock) RedissonClient.class.getMethod("getFencedLock", String.class)
                    .invoke(client, lock);
            case "redlock":
                return redlock();
            default:
                return client.getLock(lock);
            }
        }

        @SuppressWarnings("deprecation")
        private RLock redlock() {
            if (redlocks[nameIndex] == null) {
                RLock[] perMaster = new RLock[clients.length];
                for (int i = 0; i < clients.length; i++)
                    perMaster[i] = clients[i].getLock(lock);
                redlocks[nameIndex] = new RedissonRedLock(perMaster);
            }
            return redlocks[nameIndex];
        }

        /* tryLock, or the fenced lock's tryLockAndGetToken (by reflection:
         * versions before 3.19 lack it). */
        private boolean acquire(RLock l) throws Exception {
            if (!kind.equals("fenced"))
                return l.tryLock(waitMs, leaseMs, TimeUnit.MILLISECONDS);
            Long t = (Long) l.getClass()
                .getMethod("tryLockAndGetToken", long.class, long.class, TimeUnit.class)
                .invoke(l, waitMs, leaseMs, TimeUnit.MILLISECONDS);
            token = t == null ? 0 : t;
            return t != null;
        }

        private void operation() {
            nameIndex = rng.nextInt(names);
            lock = "safety:" + kind + ":" + nameIndex;
            mode = kind.equals("rw") && rng.nextInt(3) != 0 ? 'r' : 'x';
            token = 0;
            readOk = false;
            done++;
            String id = id(seq++);
            line(id, "invoke", "acquire", this);
            RLock l;
            boolean got;
            try {
                l = handle();
                got = acquire(l);
            } catch (Throwable e) {
                line(id, "info", "acquire", this, "err", name(e));
                pause(100);
                return;
            }
            if (!got) {
                line(id, "fail", "acquire", this, "err", "RLOCK_ETIMEDOUT");
                return;
            }
            line(id, "ok", "acquire", this, "token", tokenField());
            read();
            pause(rng.nextInt((int) Math.min(holdMs, Integer.MAX_VALUE - 1) + 1));
            if (mode == 'x' && readOk)
                write();
            id = id(seq++);
            line(id, "invoke", "release", this);
            try {
                l.unlock();
                line(id, "ok", "release", this);
            } catch (IllegalMonitorStateException e) {
                line(id, "fail", "release", this, "err", "RLOCK_ENOTOWNER");
            } catch (Throwable e) {
                line(id, "info", "release", this, "err", name(e));
            }
        }

        private Long tokenField() {
            return token > 0 ? token : null;
        }

        private void read() {
            String id = id(seq++);
            line(id, "invoke", "read", this, "token", tokenField());
            try {
                String v = storeAccess("read", null);
                value = v == null ? 0 : Long.parseLong(v);
                readOk = true;
                line(id, "ok", "read", this, "token", tokenField(), "value", value);
            } catch (Throwable e) {
                line(id, storeType(e), "read", this, "token", tokenField(), "err", storeErr(e));
            }
        }

        private void write() {
            String id = id(seq++);
            long v = value + 1;
            line(id, "invoke", "write", this, "token", tokenField(), "value", v);
            try {
                storeAccess("write", Long.toString(v));
                line(id, "ok", "write", this, "token", tokenField(), "value", v);
            } catch (Throwable e) {
                line(id, storeType(e), "write", this, "token", tokenField(), "value", v,
                     "err", storeErr(e));
            }
        }

        /* GET or SET of the counter, or the fencing store's script. */
        private String storeAccess(String op, String v) {
            String counter = "safety:counter:" + lock;
            if (token > 0) {
                List<Object> keys = Arrays.asList(counter, "safety:fence:" + lock);
                Object[] argv = v == null ? new Object[] {op, Long.toString(token)}
                                          : new Object[] {op, Long.toString(token), v};
                Object r = store.getScript(StringCodec.INSTANCE)
                    .eval(RScript.Mode.READ_WRITE, fenceScript, RScript.ReturnType.VALUE, keys, argv);
                return r == null ? null : r.toString();
            }
            org.redisson.api.RBucket<String> b = store.getBucket(counter, StringCodec.INSTANCE);
            if (v == null)
                return b.get();
            b.set(v);
            return v;
        }
    }

    private static String name(Throwable e) {
        Throwable t = e instanceof java.lang.reflect.InvocationTargetException ? e.getCause() : e;
        return t.getClass().getSimpleName();
    }

    /* A store access's outcome: an error reply did not run ("fail"); a
     * timeout or a lost connection may have ("info"). */
    private static String storeType(Throwable e) {
        return e instanceof RedisException && !(e instanceof RedisTimeoutException)
                   && !(e instanceof RedisConnectionException) ? "fail" : "info";
    }

    private static String storeErr(Throwable e) {
        if (storeType(e).equals("info"))
            return "EIO";
        String m = e.getMessage();
        return m != null && m.contains("FENCED") ? "FENCED" : "ESTORE";
    }

    private static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // --------------------------------------------------------------- main

    /* The fencing store's script: --fence-script, else the rlock tree's
     * tests/safety/fence_store.lua, found from this class's location
     * (compat/java/build/V/classes). */
    private String readFenceScript() throws Exception {
        Path p = fenceScriptPath != null ? Paths.get(fenceScriptPath)
            : Paths.get(SafetyWorker.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                  .resolve("../../../../../tests/safety/fence_store.lua").normalize();
        return new String(Files.readAllBytes(p), StandardCharsets.UTF_8);
    }

    private static RedissonClient connect(String[] addr, long watchdogMs, int syncReplicas) {
        Map<String, String> opt = new HashMap<>();
        opt.put("watchdog", Long.toString(watchdogMs));
        Config c = Driver.config(addr[0], addr[1], opt);
        c.setCheckLockSyncedSlaves(syncReplicas > 0);
        return Redisson.create(c);
    }

    static void main(String[] args) {
        SafetyWorker w = new SafetyWorker();
        w.parse(args);
        w.run();
    }

    private void run() {
        List<String[]> addrs = new ArrayList<>();
        for (String uri : uris)
            addrs.add(redissonAddresses(uri));
        String[] storeAddr = redissonAddresses(storeUri);
        if (!storeAddr[0].equals("single"))
            usage("--store must be redis://host:port");
        try {
            if (kind.equals("fenced")) {
                try {
                    RedissonClient.class.getMethod("getFencedLock", String.class);
                } catch (NoSuchMethodException e) {
                    usage("--kind fenced: Redisson "
                          + Redisson.class.getPackage().getImplementationVersion()
                          + " has no fenced lock");
                }
                fenceScript = readFenceScript();
            }
            history = new FileOutputStream(historyPath, true);
            store = connect(storeAddr, 30000, 0);
            clients = new RedissonClient[addrs.size()];
            for (int i = 0; i < clients.length; i++)
                clients[i] = connect(addrs.get(i), watchdogMs, syncReplicas);
            client = clients[0];
        } catch (Exception e) {
            System.err.println("Driver safety: cannot start: " + name(e) + ": " + e.getMessage());
            Runtime.getRuntime().halt(1);
        }
        System.err.println("Driver safety " + process + ": --seed " + seed);
        deadlineNs = System.nanoTime() + seconds * 1000000000L;
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            ts[i] = new Thread(new Actor(i), "safety-" + i);
            ts[i].start();
        }
        // SIGTERM: stop the actors after their operation, write, exit 0
        Thread finisher = new Thread(() -> {
            stop.set(true);
            finish(ts);
        });
        Runtime.getRuntime().addShutdownHook(finisher);
        finish(ts);
    }

    /* Joins the actors, syncs the history and exits 0 (also from the
     * shutdown hook: halt skips the JVM's own exit status for SIGTERM). */
    private void finish(Thread[] ts) {
        for (Thread t : ts) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        synchronized (this) {
            try {
                history.getFD().sync();
                history.close();
            } catch (IOException e) {
                // already closed by the other path
            }
        }
        Runtime.getRuntime().halt(0);
    }
}
