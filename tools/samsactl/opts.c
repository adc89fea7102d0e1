/* Command-line parsing helpers for samsactl (see opts.h). */
#include "opts.h"
#include "sasl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const struct opt_def global_opt_defs[] = {
    {"bootstrap-server", true, OPT_BOOTSTRAP},
    {"command-config", true, OPT_COMMAND_CONFIG},
    {"sasl-mechanism", true, OPT_SASL_MECHANISM},
    {"sasl-username", true, OPT_SASL_USERNAME},
    {"sasl-password", true, OPT_SASL_PASSWORD},
    {"help", false, OPT_HELP},
    {NULL, false, 0},
};

void opt_iter_init(struct opt_iter *it, int argc, char **argv, const struct opt_def *defs, char *err,
                   size_t errlen)
{
    memset(it, 0, sizeof *it);
    it->argc = argc;
    it->argv = argv;
    it->i = 0;
    it->defs = defs;
    it->err = err;
    it->errlen = errlen;
    if (errlen > 0)
        err[0] = '\0';
}

static const struct opt_def *find_def(const struct opt_def *defs, const char *name, size_t len)
{
    for (const struct opt_def *d = defs; d && d->name; d++)
        if (strlen(d->name) == len && memcmp(d->name, name, len) == 0)
            return d;
    return NULL;
}

int opt_next(struct opt_iter *it)
{
    it->name = NULL;
    it->arg = NULL;
    if (it->i >= it->argc)
        return 0;
    const char *a = it->argv[it->i++];
    if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
        snprintf(it->err, it->errlen, "unexpected argument '%s'", a);
        return ARGS_ERROR;
    }
    const char *name = a + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const struct opt_def *d = find_def(it->defs, name, len);
    if (!d)
        d = find_def(global_opt_defs, name, len);
    if (!d) {
        snprintf(it->err, it->errlen, "unknown option '--%.*s'", (int)len, name);
        return ARGS_ERROR;
    }
    it->name = d->name;
    if (!d->has_arg) {
        if (eq) {
            snprintf(it->err, it->errlen, "option '--%s' takes no value", d->name);
            return ARGS_ERROR;
        }
        return d->id;
    }
    if (eq) {
        it->arg = eq + 1;
    } else {
        if (it->i >= it->argc) {
            snprintf(it->err, it->errlen, "option '--%s' requires a value", d->name);
            return ARGS_ERROR;
        }
        it->arg = it->argv[it->i++];
    }
    return d->id;
}

bool global_opt_apply(struct global_opts *g, int id, const char *arg)
{
    switch (id) {
    case OPT_BOOTSTRAP:
        g->bootstrap = arg;
        return true;
    case OPT_COMMAND_CONFIG:
        g->command_config = arg;
        kc_security.command_config = arg;
        return true;
    case OPT_SASL_MECHANISM:
        free(kc_security.mechanism);
        kc_security.mechanism = strdup(arg);
        return true;
    case OPT_SASL_USERNAME:
        free(kc_security.username);
        kc_security.username = strdup(arg);
        return true;
    case OPT_SASL_PASSWORD:
        free(kc_security.password);
        kc_security.password = strdup(arg);
        return true;
    default:
        return false;
    }
}

const char *global_bootstrap(const struct global_opts *g)
{
    if (g && g->bootstrap)
        return g->bootstrap;
    const char *env = getenv("SAMSA_BOOTSTRAP");
    if (env && *env)
        return env;
    return SAMSACTL_DEFAULT_BOOTSTRAP;
}

bool parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s || !*s || isspace((unsigned char)*s))
        return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end != '\0' || v < min || v > max)
        return false;
    *out = (int64_t)v;
    return true;
}

bool parse_i32(const char *s, int32_t min, int32_t max, int32_t *out)
{
    int64_t v;
    if (!parse_i64(s, min, max, &v))
        return false;
    *out = (int32_t)v;
    return true;
}

bool parse_bool_prop(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    return n == 4 && strncasecmp(s, "true", 4) == 0;
}

bool split_kv(struct arena *a, const char *kv, char **key, const char **value)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return false;
    *key = arena_strndup(a, kv, (size_t)(eq - kv));
    *value = eq + 1;
    return true;
}

char *unescape_dup(struct arena *a, const char *s)
{
    size_t n = strlen(s);
    char *out = arena_alloc(a, n + 1);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n) {
            char e = s[i + 1];
            char r = e == 't' ? '\t' : e == 'n' ? '\n' : e == 'r' ? '\r' : e == '\\' ? '\\' : 0;
            if (r) {
                out[j++] = r;
                i++;
                continue;
            }
        }
        out[j++] = s[i];
    }
    out[j] = '\0';
    return out;
}

bool split_csv(struct arena *a, const char *s, char ***out, int *n)
{
    size_t len = strlen(s);
    char *copy = arena_alloc(a, len + 1);
    memcpy(copy, s, len + 1);
    int cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == ',';
    *out = arena_alloc(a, (size_t)cap * sizeof **out);
    *n = 0;
    for (char *item = copy, *comma;; item = comma + 1) {
        comma = strchr(item, ',');
        if (comma)
            *comma = '\0';
        if (!*item)
            return false;
        (*out)[(*n)++] = item;
        if (!comma)
            return true;
    }
}
