# shellcheck shell=bash
# Sourced by the shell benches: the helpers they share.

# free_ports N: N free loopback ports, on one line.
free_ports() {
    python3 -c 'import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
[x.bind(("127.0.0.1", 0)) for x in s]
print(*[x.getsockname()[1] for x in s])' "$1"
}

# cpu_ns PID: the on-CPU time of all of PID's threads so far, in ns, from
# schedstat (exact, where /proc/PID/stat counts 10 ms ticks); printf
# %.0f because awk's %d stops at 2^31.
cpu_ns() {
    cat "/proc/$1/task/"*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'
}
