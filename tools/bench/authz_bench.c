/* Authorization decisions per second with 10 000 ACLs (tools/bench/authz.sh):
 * uncached (the ACL matcher, auth/acl.c, on every call: the literal name,
 * each of its prefixes and the wildcard looked up in the sorted set), and
 * cached (authz_decide with a connection's cache, the path a request
 * takes; here each decision also takes an image reference, which the
 * server's hits skip by reading the controller's ACL generation), against
 * a floor: one hash-map lookup of the same names.
 *
 *   authz_bench [ACLS [DECISIONS]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth/acl.h"
#include "auth/authz.h"
#include "config.h"
#include "controller/image.h"
#include "controller/image_build.h"
#include "net/conn.h"
#include "plugin/registry.h"
#include "proto/gen/access_control_entry_record.h"
#include "proto/gen/kmeta.h"
#include "util/buf.h"
#include "util/hmap.h"

#define NAMES 64 /* the resources one connection asks about */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct mimage *img;
static struct mimage *image_of(void *arg)
{
    (void)arg;
    return mimage_ref(img);
}

int main(int argc, char **argv)
{
    int nacls = argc > 1 ? atoi(argv[1]) : 10000;
    long n = argc > 2 ? atol(argv[2]) : 2000000;
    /* 10 000 ACLs over 1000 users: literal topic ACLs (half), prefixed
     * topic ACLs (a quarter), group ACLs, and some DENYs */
    struct mi_draft *d = mi_draft_begin(NULL, NULL, 1);
    char name[64], principal[64];
    for (int i = 0; i < nacls; i++) {
        access_control_entry_record_t r;
        access_control_entry_record_init(&r);
        memset(r.id.b, 0, sizeof r.id.b);
        memcpy(r.id.b, &i, sizeof i);
        int kind = i % 4;
        r.resource_type = kind == 3 ? 3 : 2;
        r.pattern_type = kind == 2 ? 4 : 3;
        snprintf(name, sizeof name, kind == 2 ? "team-%d-" : kind == 3 ? "group-%d" : "topic-%d", i);
        snprintf(principal, sizeof principal, "User:u%d", i % 1000);
        r.resource_name = KSTR(name);
        r.principal = KSTR(principal);
        r.host = KSTR("*");
        r.operation = (int8_t)(kind == 1 ? 4 : 3);
        r.permission_type = (int8_t)(i % 50 == 7 ? 2 : 3);
        char err[128];
        if (mi_draft_apply(d, i, KMETA_ACCESS_CONTROL_ENTRY_RECORD, 0, &r, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
    }
    img = mi_draft_finish(d);
    char names[NAMES][64];
    struct hmap floor_map;
    hmap_init(&floor_map);
    for (int i = 0; i < NAMES; i++) {
        snprintf(names[i], sizeof names[i], i % 2 ? "team-%d-orders" : "topic-%d", (i * 157) % nacls);
        hmap_put(&floor_map, names[i], strlen(names[i]), (void *)1);
    }
    const char *who = "User:u7";
    size_t lens[NAMES];
    for (int i = 0; i < NAMES; i++)
        lens[i] = strlen(names[i]);

    volatile long sink = 0;
    double t0 = now();
    for (long i = 0; i < n; i++)
        sink += hmap_get(&floor_map, names[i % NAMES], lens[i % NAMES]) != NULL;
    double floor_s = now() - t0;

    t0 = now();
    for (long i = 0; i < n; i++)
        sink += acl_authorize(img->acls, who, "127.0.0.1", 3, 2, names[i % NAMES], lens[i % NAMES], false, NULL, NULL);
    double uncached_s = now() - t0;

    struct samsa_config *cfg = config_new();
    char err[256];
    config_set(cfg, "authorizer.class.name", "acl", err, sizeof err);
    struct plugin_registry *reg = plugin_registry_new(NULL);
    if (authz_setup(cfg, reg, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    authz_set_image_source(image_of, NULL);
    struct conn *c = xcalloc(1, sizeof *c);
    struct authz_subject s = {who, "127.0.0.1", "SASL_PLAINTEXT", "bench", 0, 9};
    t0 = now();
    for (long i = 0; i < n; i++)
        sink += authz_decide(&s, ACL_OP_READ, ACL_RES_TOPIC, names[i % NAMES], lens[i % NAMES], false, c);
    double cached_s = now() - t0;
    (void)sink;

    printf("ACLs: %d, decisions per measurement: %ld, %d resource names (half prefixed matches)\n", nacls, n, NAMES);
    printf("floor (hash-map lookup of the name): %.0f /s\n", n / floor_s);
    printf("uncached (ACL matcher):              %.0f /s  (%.2fx the floor's time)\n", n / uncached_s,
           uncached_s / floor_s);
    printf("cached (authz_decide, one connection): %.0f /s  (%.2fx the floor's time)\n", n / cached_s,
           cached_s / floor_s);
    authz_conn_free(c);
    free(c);
    authz_reset();
    plugin_registry_free(reg);
    config_free(cfg);
    hmap_free(&floor_map);
    mimage_release(img);
    return 0;
}
