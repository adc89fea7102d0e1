/* Floors for `make bench`: the least work a broker could do to move the
 * same bytes on this machine, measured in the same run as samsa so that
 * ratios survive a change of machine.
 *
 *   floor copy BYTES FILE [REPS]  a child writes BYTES into a loopback TCP
 *                                 socket; this process read()s them and
 *                                 write()s them to FILE (produce's floor)
 *   floor sendfile FILE [REPS]    this process sendfile()s FILE to a
 *                                 loopback socket that a child reads and
 *                                 discards (consume's floor)
 *   floor ports N                 print N loopback ports free right now,
 *                                 for the server the bench starts
 *   floor ktls                    whether this kernel accepts the "tls" ULP
 *                                 on a connected TCP socket, the first step
 *                                 of kernel TLS (OpenSSL's SSL_OP_ENABLE_KTLS
 *                                 does the same); prints ktls=yes|no and why
 *
 * Prints one line of key=value pairs; "server" is the side standing in for
 * the broker. With REPS > 1 the best time and the least CPU over the runs
 * are reported. run.sh runs each floor once, right after the samsa phase it
 * stands for, so both meet the same page-cache and memory conditions. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* large enough that per-call overhead is noise, like a broker that reads
 * whole requests and answers fetches of a partition's max bytes */
#define IO_CHUNK (256 * 1024)
#define SENDFILE_CHUNK (1024 * 1024)

static void die(const char *what)
{
    fprintf(stderr, "floor: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static double self_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
}

static int listen_loopback(int *port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        die("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 1) < 0 ||
        getsockname(s, (struct sockaddr *)&a, &len) < 0)
        die("listen");
    *port = ntohs(a.sin_port);
    return s;
}

static int connect_loopback(int port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) < 0)
        die("connect");
    return s;
}

static void write_all(int fd, const char *p, size_t n, const char *what)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            die(what);
        }
        p += w;
        n -= (size_t)w;
    }
}

struct run {
    double secs, server_cpu, client_cpu;
};

/* Child: the producer, sending pseudo-random bytes. */
static void copy_client(int port, long long bytes)
{
    char *buf = malloc(IO_CHUNK);
    if (!buf)
        die("malloc");
    unsigned x = 2463534242u;
    for (size_t i = 0; i < IO_CHUNK; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (char)x;
    }
    int s = connect_loopback(port);
    while (bytes > 0) {
        size_t n = bytes < IO_CHUNK ? (size_t)bytes : IO_CHUNK;
        write_all(s, buf, n, "send");
        bytes -= (long long)n;
    }
    close(s);
    _exit(0);
}

/* Child: the consumer, reading and dropping everything. */
static void sink_client(int port)
{
    char *buf = malloc(IO_CHUNK);
    if (!buf)
        die("malloc");
    int s = connect_loopback(port);
    for (;;) {
        ssize_t r = read(s, buf, IO_CHUNK);
        if (r == 0)
            break;
        if (r < 0 && errno != EINTR)
            die("sink read");
    }
    _exit(0);
}

static double reap(pid_t pid)
{
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0)
        die("wait4");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "floor: child failed\n");
        exit(1);
    }
    return tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
}

static struct run run_copy(long long bytes, const char *path)
{
    int port;
    int ls = listen_loopback(&port);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0)
        copy_client(port, bytes);
    char *buf = malloc(IO_CHUNK);
    int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!buf || out < 0)
        die(path);
    int s = accept(ls, NULL, NULL);
    if (s < 0)
        die("accept");
    double c0 = self_cpu(), t0 = now_s();
    long long got = 0;
    for (;;) {
        ssize_t r = read(s, buf, IO_CHUNK);
        if (r == 0)
            break;
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die("read");
        }
        write_all(out, buf, (size_t)r, path);
        got += r;
    }
    if (close(out) < 0)
        die(path);
    struct run res = {now_s() - t0, self_cpu() - c0, 0};
    close(s);
    close(ls);
    free(buf);
    res.client_cpu = reap(pid);
    if (got != bytes) {
        fprintf(stderr, "floor: copied %lld of %lld bytes\n", got, bytes);
        exit(1);
    }
    return res;
}

static struct run run_sendfile(const char *path, long long *bytes)
{
    int in = open(path, O_RDONLY);
    struct stat stt;
    if (in < 0 || fstat(in, &stt) < 0)
        die(path);
    *bytes = stt.st_size;
    int port;
    int ls = listen_loopback(&port);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0)
        sink_client(port);
    int s = accept(ls, NULL, NULL);
    if (s < 0)
        die("accept");
    double c0 = self_cpu(), t0 = now_s();
    off_t off = 0;
    while (off < stt.st_size) {
        long long left = (long long)(stt.st_size - off);
        ssize_t w = sendfile(s, in, &off, left < SENDFILE_CHUNK ? (size_t)left : SENDFILE_CHUNK);
        if (w < 0 && errno != EINTR)
            die("sendfile");
        if (w == 0)
            break;
    }
    close(s);
    struct run res = {now_s() - t0, self_cpu() - c0, 0};
    close(ls);
    close(in);
    res.client_cpu = reap(pid);
    return res;
}

/* Ports the kernel hands out for :0 are free at that instant; all N
 * sockets stay bound until printed so the N ports differ. */
static int print_ports(int n)
{
    int fds[16];
    if (n < 1 || n > 16)
        return 2;
    for (int i = 0; i < n; i++) {
        int port;
        fds[i] = listen_loopback(&port);
        printf("%s%d", i ? " " : "", port);
    }
    printf("\n");
    for (int i = 0; i < n; i++)
        close(fds[i]);
    return 0;
}

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

/* kTLS starts with setsockopt(TCP_ULP, "tls") on an established socket:
 * ENOENT means the kernel has no tls ULP (CONFIG_TLS off and no module). */
static int probe_ktls(void)
{
    int port;
    int l = listen_loopback(&port);
    int c = connect_loopback(port);
    int a = accept(l, NULL, NULL);
    if (a < 0)
        die("accept");
    int rc = setsockopt(c, SOL_TCP, TCP_ULP, "tls", sizeof "tls");
    int err = errno;
    char ulps[256] = "?";
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_available_ulp", "r");
    if (f) {
        if (!fgets(ulps, sizeof ulps, f))
            ulps[0] = 0;
        ulps[strcspn(ulps, "\n")] = 0;
        fclose(f);
    }
    if (rc == 0)
        printf("ktls=yes tcp_available_ulp=\"%s\"\n", ulps);
    else
        printf("ktls=no setsockopt_tcp_ulp_tls=\"%s\" tcp_available_ulp=\"%s\"\n", strerror(err), ulps);
    close(a);
    close(c);
    close(l);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "ktls"))
        return probe_ktls();
    if (argc == 3 && !strcmp(argv[1], "ports"))
        return print_ports(atoi(argv[2]));
    if (argc < 3 || (strcmp(argv[1], "copy") && strcmp(argv[1], "sendfile"))) {
        fputs("usage: floor copy BYTES FILE [REPS] | floor sendfile FILE [REPS] | floor ports N | floor ktls\n",
              stderr);
        return 2;
    }
    int copy = !strcmp(argv[1], "copy");
    if (copy && argc < 4) {
        fputs("usage: floor copy BYTES FILE [REPS]\n", stderr);
        return 2;
    }
    long long bytes = copy ? atoll(argv[2]) : 0;
    const char *path = copy ? argv[3] : argv[2];
    int reps = argc > (copy ? 4 : 3) ? atoi(argv[copy ? 4 : 3]) : 1;
    if (reps < 1)
        reps = 1;
    if (copy && bytes <= 0) {
        fputs("floor: BYTES must be positive\n", stderr);
        return 2;
    }
    struct run best = {1e30, 1e30, 1e30};
    for (int i = 0; i < reps; i++) {
        struct run r = copy ? run_copy(bytes, path) : run_sendfile(path, &bytes);
        if (r.secs < best.secs)
            best.secs = r.secs;
        if (r.server_cpu < best.server_cpu)
            best.server_cpu = r.server_cpu;
        if (r.client_cpu < best.client_cpu)
            best.client_cpu = r.client_cpu;
    }
    printf("mode=%s bytes=%lld reps=%d seconds=%.6f server_cpu=%.6f client_cpu=%.6f mb_per_s=%.2f\n",
           argv[1], bytes, reps, best.secs, best.server_cpu, best.client_cpu,
           best.secs > 0 ? (double)bytes / best.secs / 1e6 : 0.0);
    return 0;
}
