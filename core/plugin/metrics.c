#include "plugin/metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

struct metric {
    char *name;
    char *help;
    enum metric_type type;
    _Atomic int64_t value;
    struct metric *_Atomic next;
};

/* A singly linked list: registration is rare (startup), lookups by name
 * rarer still; readers walk the list published through an atomic head
 * so a reader never needs the lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct metric *_Atomic head;
static struct metric *tail;

struct metric *metrics_find(const char *name)
{
    for (struct metric *m = atomic_load(&head); m; m = atomic_load(&m->next))
        if (strcmp(m->name, name) == 0)
            return m;
    return NULL;
}

struct metric *metrics_register(const char *name, enum metric_type type, const char *help)
{
    if (!name || !*name || (type != METRIC_COUNTER && type != METRIC_GAUGE))
        return NULL;
    pthread_mutex_lock(&lock);
    struct metric *m = metrics_find(name);
    if (m) {
        pthread_mutex_unlock(&lock);
        return m->type == type ? m : NULL;
    }
    m = xcalloc(1, sizeof *m);
    m->name = xstrdup(name);
    m->help = xstrdup(help ? help : "");
    m->type = type;
    atomic_init(&m->value, 0);
    atomic_init(&m->next, NULL);
    if (tail)
        atomic_store(&tail->next, m);
    else
        atomic_store(&head, m);
    tail = m;
    pthread_mutex_unlock(&lock);
    return m;
}

void metric_add(struct metric *m, int64_t delta)
{
    if (!m || (m->type == METRIC_COUNTER && delta < 0))
        return;
    atomic_fetch_add_explicit(&m->value, delta, memory_order_relaxed);
}

void metric_set(struct metric *m, int64_t value)
{
    if (!m || m->type != METRIC_GAUGE)
        return;
    atomic_store_explicit(&m->value, value, memory_order_relaxed);
}

int64_t metric_value(const struct metric *m)
{
    return m ? atomic_load_explicit(&((struct metric *)m)->value, memory_order_relaxed) : 0;
}

const char *metric_name(const struct metric *m) { return m->name; }
enum metric_type metric_type(const struct metric *m) { return m->type; }
const char *metric_help(const struct metric *m) { return m->help; }

void metrics_foreach(int (*fn)(void *arg, const struct metric *m), void *arg)
{
    for (struct metric *m = atomic_load(&head); m; m = atomic_load(&m->next))
        if (fn(arg, m))
            return;
}
