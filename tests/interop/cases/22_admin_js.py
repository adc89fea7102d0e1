"""Admin with the Node clients: js/admin_kafkajs.mjs (kafkajs 2.2.4) and
js/admin_platformatic.mjs (@platformatic/kafka 1.35.0), each against its
own samsa. Their per-case lines are shown indented under the case."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Server, Suite, Failure, HERE, NODE, run  # noqa: E402

S = Suite("admin_js", case_limit=150)


def run_js(script, *args):
    p = run([NODE, os.path.join(HERE, "js", script)] + list(args), limit=120, check_rc=False)
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    fails = []
    for line in out.splitlines():
        s = line.strip()
        if s.startswith(("PASS ", "FAIL ", "SKIP ")):
            print("      js: " + s, flush=True)
            if s.startswith("FAIL "):
                fails.append(s[5:])
        else:
            print("    " + line, flush=True)
    if err.strip():
        print("    stderr:\n      " + err.strip()[-3000:].replace("\n", "\n      "), flush=True)
    if p.returncode != 0:
        raise Failure("%s exited %d; failed: %s" % (script, p.returncode, "; ".join(fails) or "(no case line)"))


@S.case
def kafkajs_admin():
    srv = Server(name="kafkajs")
    run_js("admin_kafkajs.mjs", srv.bootstrap)
    srv.stop()


@S.case
def platformatic_admin():
    srv = Server({"num.partitions": "2"}, name="platformatic")
    run_js("admin_platformatic.mjs", srv.bootstrap, "2")
    srv.stop()


if __name__ == "__main__":
    S.run()
