/* Security of outgoing inter-node connections: see peer_security.h. */
#include "net/peer_security.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/sasl_client.h"
#include "config.h"
#include "net/kclient.h"
#include "net/tls.h"
#include "util/buf.h"
#include "util/slog.h"

static struct kclient_security broker_sec, controller_sec;
static bool broker_set, controller_set;

static void lower(char *dst, size_t n, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < n; i++)
        dst[i] = (char)(src[i] >= 'A' && src[i] <= 'Z' ? src[i] - 'A' + 'a' : src[i]);
    dst[i] = '\0';
}

/* Fills sec for connections to listener (upper-case name) with the
 * mechanism named by mech_key. */
static int build(const struct samsa_config *cfg, const char *listener, const char *mech_key,
                 struct kclient_security *sec, char *err, size_t errlen)
{
    enum security_protocol proto;
    if (!config_listener_protocol(cfg, listener, &proto)) {
        snprintf(err, errlen, "listener %s: no security protocol in listener.security.protocol.map", listener);
        return -1;
    }
    memset(sec, 0, sizeof *sec);
    sec->listener = xstrdup(listener);
    if (proto == SECURITY_SSL || proto == SECURITY_SASL_SSL) {
        char why[512];
        sec->ssl_ctx = tls_client_ctx_new(cfg, listener, &sec->verify_host, why, sizeof why);
        if (!sec->ssl_ctx) {
            snprintf(err, errlen, "%s (for this node's own connections to its peers)", why);
            return -1;
        }
    }
    if (proto == SECURITY_SASL_PLAINTEXT || proto == SECURITY_SASL_SSL) {
        const char *mech = config_get(cfg, mech_key);
        char why[256];
        struct sasl_client *probe = sasl_client_new(mech ? mech : "", "", "", why, sizeof why);
        if (!probe) {
            snprintf(err, errlen, "%s=%s: listener %s needs a SASL mechanism samsa's nodes speak to each other "
                     "(PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", mech_key, mech ? mech : "", listener);
            return -1;
        }
        sasl_client_free(probe);
        char l[64], m[64], key[200];
        lower(l, sizeof l, listener);
        lower(m, sizeof m, mech);
        snprintf(key, sizeof key, "listener.name.%s.%s.sasl.jaas.config", l, m);
        /* Kafka's brokers read JAAS only with the listener and
         * mechanism prefix; so does samsa */
        const char *jaas = config_get_any(cfg, key);
        if (jaas && !jaas[0])
            jaas = NULL;
        char *user = jaas ? sasl_jaas_option(jaas, "username") : NULL;
        char *pass = jaas ? sasl_jaas_option(jaas, "password") : NULL;
        if (!user || !pass) {
            free(user);
            free(pass);
            snprintf(err, errlen, "listener %s speaks %s: this node logs in to its peers with the username and "
                     "password of %s, which %s", listener, security_protocol_name(proto),
                     key, jaas ? "has no username=\"...\" password=\"...\"" : "is not set");
            return -1;
        }
        sec->sasl_mechanism = xstrdup(mech);
        sec->sasl_username = user;
        sec->sasl_password = pass;
    }
    return 0;
}

int peer_security_setup(const struct samsa_config *cfg, char *err, size_t errlen)
{
    /* a broker fetches from and sends markers to other brokers */
    if (cfg->role_broker) {
        if (build(cfg, cfg->inter_broker_listener_name, "sasl.mechanism.inter.broker.protocol", &broker_sec, err,
                  errlen) < 0)
            return -1;
        broker_set = true;
    }
    if (cfg->n_controller_listener_names) {
        if (build(cfg, cfg->controller_listener_names[0], "sasl.mechanism.controller.protocol", &controller_sec,
                  err, errlen) < 0)
            return -1;
        controller_set = true;
    }
    const struct kclient_security *b = peer_security_broker(), *c = peer_security_controller();
    if (b || c)
        slog_info("connections to peers: brokers over %s%s%s, controllers over %s%s%s",
                  b ? b->listener : "PLAINTEXT", b && b->sasl_mechanism ? " with SASL " : "",
                  b && b->sasl_mechanism ? b->sasl_mechanism : "", c ? c->listener : "PLAINTEXT",
                  c && c->sasl_mechanism ? " with SASL " : "", c && c->sasl_mechanism ? c->sasl_mechanism : "");
    return 0;
}

static const struct kclient_security *secured(const struct kclient_security *s, bool set)
{
    return set && (s->ssl_ctx || s->sasl_mechanism) ? s : NULL;
}

const struct kclient_security *peer_security_broker(void) { return secured(&broker_sec, broker_set); }
const struct kclient_security *peer_security_controller(void) { return secured(&controller_sec, controller_set); }
