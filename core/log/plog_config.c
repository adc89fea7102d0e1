/* One copy of each distinct log config, shared by the logs that use it
 * (issue 12: a 112-byte copy in every log was 11 MB at 100 000
 * partitions; the partitions of a topic all have the same config, most
 * topics the defaults). Interned by value: plog_open and
 * plog_set_config look the config up in a process-wide table and take a
 * reference, so a topic config change is copy on write (each log of the
 * topic moves to the new shared copy, the old one goes when its last log
 * leaves it) and a log with a config of its own (an override, the
 * metadata log) simply has a copy nobody else shares. */
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log/plog_internal.h"
#include "util/buf.h"
#include "util/hmap.h"

struct cfg_entry {
    struct plog_config c; /* first: the logs point here */
    long refs;            /* under cfg_table_lock */
};

static pthread_mutex_t cfg_table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hmap cfg_table; /* the config's bytes -> struct cfg_entry */

/* The config's bytes with the tail padding zeroed, so equal configs
 * compare equal byte for byte. */
static void normalise(struct plog_config *k, const struct plog_config *c)
{
    memset(k, 0, sizeof *k);
    memcpy(k, c, offsetof(struct plog_config, fsync_each_append) + sizeof c->fsync_each_append);
}

const struct plog_config *plog_config_intern(const struct plog_config *c)
{
    struct plog_config k;
    normalise(&k, c);
    pthread_mutex_lock(&cfg_table_lock);
    struct cfg_entry *e = hmap_get(&cfg_table, &k, sizeof k);
    if (!e) {
        e = xcalloc(1, sizeof *e);
        memcpy(&e->c, &k, sizeof k);
        hmap_put(&cfg_table, &k, sizeof k, e);
    }
    e->refs++;
    pthread_mutex_unlock(&cfg_table_lock);
    return &e->c;
}

void plog_config_release(const struct plog_config *c)
{
    if (!c)
        return;
    struct cfg_entry *e = (struct cfg_entry *)c;
    pthread_mutex_lock(&cfg_table_lock);
    if (--e->refs == 0) {
        hmap_del(&cfg_table, &e->c, sizeof e->c);
        if (hmap_count(&cfg_table) == 0)
            hmap_free(&cfg_table);
        free(e);
    }
    pthread_mutex_unlock(&cfg_table_lock);
}
