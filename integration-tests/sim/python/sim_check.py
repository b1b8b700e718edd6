#!/usr/bin/env python3
"""Checks the cluster simulator (`mongo-sim`) with PyMongo, an independent official driver.

For each topology it spawns the simulator binary, reads the connection string from the first
line of its stdout, runs the scenarios below with PyMongo, and prints PASS/FAIL per scenario:

  standalone  ping, insert and find
  rs          discovery seeded only by a secondary; insert/find on the primary; a `secondary`
              read that reaches a secondary (proved by command monitoring); `simStepDown`
              followed by a write that succeeds on the new primary
  sharded     ping, insert and find through mongos
  lb          ping, insert and find with `loadBalanced=true`
  secure      a 2-member set over TLS (generated certificates, `tlsCAFile`) with users:
              unauthenticated insert fails with 13 Unauthorized; SCRAM-SHA-256, SCRAM-SHA-1 and
              negotiated authentication work; a wrong password fails with 18

Every wait is bounded, every simulator process is killed on exit (even on failure or Ctrl-C),
and the exit status is non-zero if any scenario failed. Run it with `make sim-check-python`.
"""

import argparse
import atexit
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import uuid

from bson import ObjectId
from pymongo import MongoClient, ReadPreference, monitoring
from pymongo.errors import OperationFailure, PyMongoError

# Short timeouts keep a broken simulator from hanging the run; heartbeats at the 500 ms minimum
# make topology changes (stepdown) visible quickly.
CLIENT_OPTS = dict(serverSelectionTimeoutMS=5000, heartbeatFrequencyMS=500, connectTimeoutMS=5000,
                   socketTimeoutMS=10000)
STARTUP_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 5.0

PROCS = []  # every simulator spawned, killed at exit whatever happens
RESULTS = []  # (topology, scenario, passed, detail)


class Sim:
    """One running `mongo-sim` process and the URI it printed."""

    def __init__(self, binary, args):
        self.args = args
        self.log = tempfile.NamedTemporaryFile(prefix="mongo-sim-", suffix=".log", delete=False)
        # stdin is a pipe we keep open: the simulator exits on stdin EOF, so it also dies if this
        # script is killed with SIGKILL and cannot run its cleanup.
        self.proc = subprocess.Popen([binary] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log)
        PROCS.append(self)
        self.uri = self._read_uri()

    def _read_uri(self):
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        line = b""
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RuntimeError(f"mongo-sim {' '.join(self.args)}: no URI within {STARTUP_TIMEOUT_S} s")
            ready, _, _ = select.select([self.proc.stdout], [], [], remaining)
            if not ready:
                continue
            byte = os.read(self.proc.stdout.fileno(), 1)
            if not byte:
                try:
                    status = self.proc.wait(STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    status = "still running, stdout closed"
                raise RuntimeError(f"mongo-sim {' '.join(self.args)} exited before printing its URI "
                                   f"(status {status}); log:\n{self.log_tail()}")
            line += byte
        uri = line.decode().strip()
        if not uri.startswith("mongodb://"):
            raise RuntimeError(f"first stdout line is not a URI: {uri!r}")
        return uri

    def log_tail(self, lines=20):
        try:
            with open(self.log.name, "rb") as f:
                return b"".join(f.readlines()[-lines:]).decode(errors="replace")
        except OSError:
            return "(no log)"

    def stop(self):
        """Stops the process (SIGTERM, then SIGKILL) and removes its log; safe to call twice."""
        if self in PROCS:
            PROCS.remove(self)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(STOP_TIMEOUT_S)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.log.close()
        if os.path.exists(self.log.name):
            os.unlink(self.log.name)


def stop_all():
    while PROCS:
        PROCS.pop().stop()


class CommandLog(monitoring.CommandListener):
    """Records (command name, server address) of every command a client starts."""

    def __init__(self):
        self.events = []

    def started(self, event):
        self.events.append((event.command_name, event.connection_id))

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass

    def addresses(self, name):
        return [addr for (cmd, addr) in self.events if cmd == name]


def address(host):
    """'127.0.0.1:27017' -> ('127.0.0.1', 27017), PyMongo's address form."""
    h, p = host.rsplit(":", 1)
    return (h, int(p))


def hosts_of(uri):
    """The seed list of a mongodb:// URI."""
    rest = uri[len("mongodb://"):]
    return rest.split("/", 1)[0].split("?", 1)[0].split(",")


def find_counts(host):
    """Per-member `find` counts from the simulator's `simCounters` admin command."""
    with MongoClient(host, directConnection=True, **CLIENT_OPTS) as direct:
        reply = direct.admin.command("simCounters")
    return [m.get("commands", {}).get("find", 0) for m in reply["members"]]


def wait_until(what, predicate, timeout_s=10.0, interval_s=0.1):
    """Polls `predicate` until it returns a truthy value, or fails after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except PyMongoError as e:
            last_error = e
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}"
                         + (f" (last error: {last_error})" if last_error else ""))


def scenario(topology, name):
    """Decorator: runs a scenario function, recording PASS/FAIL instead of propagating."""

    def wrap(fn):
        def run(*args, **kwargs):
            start = time.monotonic()
            try:
                detail = fn(*args, **kwargs) or ""
                RESULTS.append((topology, name, True, detail))
                print(f"PASS  {topology:<10} {name}  {detail} ({time.monotonic() - start:.1f} s)", flush=True)
            except Exception as e:  # any failure of a scenario is reported, not fatal
                RESULTS.append((topology, name, False, str(e)))
                print(f"FAIL  {topology:<10} {name}: {e}", flush=True)
                if os.environ.get("SIM_CHECK_VERBOSE"):
                    traceback.print_exc()

        return run

    return wrap


def insert_find(client, topology):
    """Inserts a fresh document and reads it back; checks the round trip field by field."""
    coll = client["sim_check"][f"docs_{topology}"]
    doc = {"_id": ObjectId(), "token": uuid.uuid4().hex, "n": 42, "nested": {"a": [1, 2, 3]}}
    result = coll.insert_one(dict(doc))
    assert result.inserted_id == doc["_id"], f"inserted id {result.inserted_id} != {doc['_id']}"
    found = coll.find_one({"_id": doc["_id"]})
    assert found == doc, f"find returned {found!r}, expected {doc!r}"
    return doc


def check_simple(topology, binary, args):
    """ping + insert + find against a topology reached through one URI."""
    try:
        sim = Sim(binary, args)
    except Exception as e:
        RESULTS.append((topology, "start", False, str(e)))
        print(f"FAIL  {topology:<10} start: {e}", flush=True)
        return

    @scenario(topology, "ping, insert, find")
    def run():
        with MongoClient(sim.uri, **CLIENT_OPTS) as client:
            reply = client.admin.command("ping")
            assert reply.get("ok") == 1, f"ping replied {reply}"
            insert_find(client, topology)
            return f"via {sim.uri}"

    @scenario(topology, "compressors=zlib")
    def zlib():
        # The simulator agrees to zlib and compresses its replies; PyMongo must read them.
        with MongoClient(sim.uri, compressors="zlib", **CLIENT_OPTS) as client:
            insert_find(client, topology)
            big = client["sim_check"]["zlib"]
            big.insert_one({"_id": 1, "x": "z" * 100_000})
            assert len(big.find_one({"_id": 1})["x"]) == 100_000
            counters = client.admin.command("simCounters")["total"]
            assert counters["compressedReplies"] >= 2, f"no compressed replies: {counters}"
            return f"{counters['compressedReplies']} compressed replies"

    try:
        run()
        zlib()
    finally:
        sim.stop()


def check_replica_set(binary):
    topology = "rs"
    try:
        sim = Sim(binary, ["rs", "--members", "3"])
    except Exception as e:
        RESULTS.append((topology, "start", False, str(e)))
        print(f"FAIL  {topology:<10} start: {e}", flush=True)
        return
    hosts = hosts_of(sim.uri)
    state = {}

    @scenario(topology, "discover from a secondary seed, insert/find on the primary")
    def discover():
        assert len(hosts) == 3, f"expected 3 hosts in {sim.uri}"
        # Ask any member who the primary is, to pick a seed that is certainly a secondary.
        with MongoClient(hosts[0], directConnection=True, **CLIENT_OPTS) as direct:
            hello = direct.admin.command("hello")
        primary = hello.get("primary")
        assert primary in hosts, f"hello.primary {primary!r} not among {hosts}"
        secondary = next(h for h in hosts if h != primary)
        log = CommandLog()
        client = MongoClient(f"mongodb://{secondary}/?replicaSet=rs0", event_listeners=[log],
                             **CLIENT_OPTS)
        state.update(client=client, log=log, primary=primary)
        doc = insert_find(client, topology)
        inserts = log.addresses("insert")
        assert inserts == [address(primary)], f"insert went to {inserts}, primary is {primary}"
        state["doc"] = doc
        return f"seed {secondary}, primary {primary}"

    @scenario(topology, "secondary read reaches a secondary")
    def secondary_read():
        client, log, primary = state["client"], state["log"], state["primary"]
        wait_until("two secondaries known", lambda: len(client.secondaries) == 2)
        coll = client["sim_check"].get_collection("docs_rs", read_preference=ReadPreference.SECONDARY)
        before = len(log.addresses("find"))
        counts_before = find_counts(hosts[0])
        coll.find_one({"_id": state["doc"]["_id"]})
        counts_after = find_counts(hosts[0])
        finds = log.addresses("find")[before:]
        assert len(finds) == 1, f"expected one find, saw {finds}"
        target = finds[0]
        assert target != address(primary) and target in {address(h) for h in hosts}, \
            f"secondary read went to {target}, primary is {primary}"
        # The simulator's own per-member counters must agree with the driver's events.
        served = [i for i, (b, a) in enumerate(zip(counts_before, counts_after)) if a != b]
        member = [address(h) for h in hosts].index(target)
        assert served == [member] and counts_after[member] - counts_before[member] == 1, \
            f"simCounters find counts {counts_before} -> {counts_after}, expected +1 on member {member}"
        return f"find sent to {target[0]}:{target[1]} (member {member}; simCounters agree)"

    @scenario(topology, "simStepDown, then the next write succeeds on the new primary")
    def stepdown():
        client, log, old = state["client"], state["log"], state["primary"]
        try:
            client.admin.command({"simStepDown": 1, "gapMS": 500})
        except PyMongoError as e:
            # A stepdown may close the connection that carried it; the effect is what counts.
            print(f"      (simStepDown raised {type(e).__name__}: {e}; continuing)")
        # Bounded: the driver must notice the new primary through its heartbeats.
        new = wait_until("a new primary", lambda: client.primary if client.primary not in
                         (None, address(old)) else None, timeout_s=15)
        before = len(log.addresses("insert"))
        doc = insert_find(client, "rs")
        inserts = log.addresses("insert")[before:]
        assert inserts and inserts[-1] == new, f"write went to {inserts}, new primary is {new}"
        # Check on the new primary itself that it is primary and holds the write.
        new_host = f"{new[0]}:{new[1]}"
        with MongoClient(new_host, directConnection=True, **CLIENT_OPTS) as direct:
            hello = direct.admin.command("hello")
            assert hello.get("isWritablePrimary") is True, f"{new_host} hello: {hello}"
            found = direct["sim_check"]["docs_rs"].find_one({"_id": doc["_id"]})
            assert found == doc, f"{new_host} has {found!r}, expected {doc!r}"
        return f"primary {old} -> {new_host}"

    try:
        discover()
        if "client" in state:
            secondary_read()
            stepdown()
    finally:
        if "client" in state:
            state["client"].close()
        sim.stop()


def check_secure(binary):
    topology = "secure"
    try:
        sim = Sim(binary, ["rs", "--members", "2", "--tls-test-certs", "--user", "ann:s3cret",
                           "--user", "bob:pa ss"])
    except Exception as e:
        RESULTS.append((topology, "start", False, str(e)))
        print(f"FAIL  {topology:<10} start: {e}", flush=True)
        return

    def with_user(user, password, extra=""):
        from urllib.parse import quote_plus
        uri = sim.uri.replace("mongodb://", f"mongodb://{quote_plus(user)}:{quote_plus(password)}@", 1)
        return uri + extra

    @scenario(topology, "TLS without credentials: ping works, insert is Unauthorized")
    def unauthenticated():
        assert "tls=true" in sim.uri and "tlsCAFile=" in sim.uri, sim.uri
        with MongoClient(sim.uri, **CLIENT_OPTS) as client:
            assert client.admin.command("ping").get("ok") == 1
            try:
                client["sim_check"]["secure"].insert_one({"x": 1})
            except OperationFailure as e:
                assert e.code == 13, f"code {e.code}: {e}"
                return f"code {e.code}: {e.details.get('errmsg')}"
            raise AssertionError("unauthenticated insert succeeded")

    @scenario(topology, "SCRAM-SHA-256, SCRAM-SHA-1 and negotiated auth over TLS")
    def authenticated():
        for user, password, mech in [("ann", "s3cret", "SCRAM-SHA-256"), ("ann", "s3cret", "SCRAM-SHA-1"),
                                     ("bob", "pa ss", None)]:
            extra = f"&authMechanism={mech}" if mech else ""
            with MongoClient(with_user(user, password, extra), **CLIENT_OPTS) as client:
                insert_find(client, "secure")
                status = client.admin.command("connectionStatus")
                users = status["authInfo"]["authenticatedUsers"]
                assert users == [{"user": user, "db": "admin"}], f"{mech}: {status}"
        return "3 logins"

    @scenario(topology, "wrong password fails with AuthenticationFailed")
    def wrong_password():
        with MongoClient(with_user("ann", "nope"), **CLIENT_OPTS) as client:
            try:
                client.admin.command("ping")
            except OperationFailure as e:
                assert e.code == 18, f"code {e.code}: {e}"
                return f"code {e.code}: {e.details.get('errmsg')}"
            raise AssertionError("ping with a wrong password succeeded")

    try:
        unauthenticated()
        authenticated()
        wrong_password()
    finally:
        sim.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_bin = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "target",
                               "debug", "mongo-sim")
    parser.add_argument("--sim", default=default_bin, help="path to the mongo-sim binary")
    parser.add_argument("--only", choices=["standalone", "rs", "sharded", "lb", "secure"], action="append",
                        help="run only these topologies (repeatable)")
    opts = parser.parse_args()
    if not os.access(opts.sim, os.X_OK):
        sys.exit(f"mongo-sim not found at {opts.sim}: build it with "
                 "`cargo build -p mongo-sim`")
    atexit.register(stop_all)
    # SIGTERM (e.g. from make or CI) unwinds through the finally blocks and atexit as well.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    import pymongo
    print(f"sim_check: PyMongo {pymongo.version}, simulator {opts.sim}", flush=True)
    selected = opts.only or ["standalone", "rs", "sharded", "lb", "secure"]
    if "standalone" in selected:
        check_simple("standalone", opts.sim, ["standalone"])
    if "rs" in selected:
        check_replica_set(opts.sim)
    if "sharded" in selected:
        check_simple("sharded", opts.sim, ["sharded", "--mongos", "2"])
    if "lb" in selected:
        check_simple("lb", opts.sim, ["lb", "--services", "2"])
    if "secure" in selected:
        check_secure(opts.sim)
    stop_all()

    passed = sum(1 for r in RESULTS if r[2])
    failed = len(RESULTS) - passed
    print(f"sim_check: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
