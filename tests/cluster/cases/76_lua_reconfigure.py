"""A Lua authorizer script changed on a running 3-node combined cluster
through IncrementalAlterConfigs (issue 11): authorizer.class.name=lua,acl
on every node, plugin.lua.authorizer.script set at the cluster default
(resource BROKER "") by kafka-python's AlterConfigs through one node.
The policy hides one topic from connections with client id "probe" (the
script sees r.client_id; everything else goes on to the ACL link, where
the nodes' User:ANONYMOUS is a super user).

- v1 in force: each node hides the topic from a probe (raw Metadata v12
  on that node: TOPIC_AUTHORIZATION_FAILED).
- A script that does not compile is refused with INVALID_CONFIG and its
  error, by the node that received it; every node keeps v1.
- v2 (the topic visible) set through node 2: every node switches to it,
  each on its own as it applies the ConfigRecord."""
# limit: 150

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cluster as C  # noqa: E402
from cluster import Failure, check, eq, log  # noqa: E402,F401

S = C.harness.Suite("76_lua_reconfigure", case_limit=120)
CL = None
TOPIC = "clu-lua"
TOPIC_AUTHORIZATION_FAILED = 29
INVALID_CONFIG = 40
SCRIPTS = {}


def policy(hidden):
    return ("function authorize(r)\n"
            "  if r.client_id == 'probe' and r.resource_name == '%s' then return %s end\n"
            "  return nil\n"
            "end\n") % (TOPIC, "false" if hidden else "true")


def setup():
    global CL
    if not os.path.exists(os.path.join(os.path.dirname(os.path.abspath(C.SAMSA_BIN)), "modules", ".libs",
                                       "lua.so")):
        return
    d = os.path.join(C.harness.WORK, "lua-scripts")
    os.makedirs(d, exist_ok=True)
    for name, text in (("v1", policy(True)), ("v2", policy(False)), ("broken", "function authorize(r)\n")):
        SCRIPTS[name] = os.path.join(d, name + ".lua")
        with open(SCRIPTS[name], "w") as f:
            f.write(text)
    CL = C.Cluster(3, overrides=dict(C.FAST, **{
        "authorizer.class.name": "lua,acl",
        "super.users": "User:ANONYMOUS",
        "plugin.lua.authorizer.script": SCRIPTS["v1"],
    }))
    CL.start()
    C.create_topics(CL.node(1), [TOPIC], partitions=1, rf=3)


def need_lua():
    if CL is None:
        raise C.Skip("module lua not built in this build")


def probe_code(node):
    """The topic's error code in a probe's Metadata from node."""
    import kwire
    c = kwire.Conn(node.port, client_id="probe")
    try:
        md = kwire.metadata_v12(c, [TOPIC])
    finally:
        c.close()
    return [t["error_code"] for t in md["topics"] if t["name"] == TOPIC]


def codes():
    return [probe_code(n) for n in CL.nodes]


def until(what, want, limit=15.0):
    deadline = time.monotonic() + C.bound(limit)
    got = None
    while time.monotonic() < deadline:
        got = codes()
        if got == want:
            return
        time.sleep(0.2)
    raise Failure("%s: %s, want %s" % (what, got, want))


def set_script(node, path):
    """AlterConfigs of the cluster default (BROKER "") with kafka-python
    2.0.2 through node (it has no IncrementalAlterConfigs, and
    @platformatic/kafka reads the name "" as broker id 0): (error code,
    message)."""
    from kafka.admin import KafkaAdminClient, ConfigResource, ConfigResourceType
    a = KafkaAdminClient(bootstrap_servers="127.0.0.1:%d" % node.port, request_timeout_ms=int(C.bound(15000)))
    try:
        r = a.alter_configs([ConfigResource(ConfigResourceType.BROKER, "",
                                            configs={"plugin.lua.authorizer.script": path})])
    finally:
        a.close()
    return tuple(r.resources[0][:2])


@S.case
def script_changes_on_every_node():
    need_lua()
    until("v1 on every node", [[TOPIC_AUTHORIZATION_FAILED]] * 3)
    code, msg = set_script(CL.node(3), SCRIPTS["broken"])
    eq(code, INVALID_CONFIG, "a broken script (message %r)" % msg)
    check(msg and msg.startswith("plugin.lua.authorizer.script: ") and "broken.lua:2:" in msg,
          "the refusal names the error: %r", msg)
    time.sleep(0.5)
    eq(codes(), [[TOPIC_AUTHORIZATION_FAILED]] * 3, "every node keeps v1")
    eq(set_script(CL.node(2), SCRIPTS["v2"]), (0, None), "v2 through node 2")
    until("v2 on every node", [[0]] * 3)


if __name__ == "__main__":
    S.run(setup)
