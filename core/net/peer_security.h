/* The security this node uses on the connections it opens to its peers:
 * towards brokers (replica fetchers, the transaction marker sender) the
 * inter-broker listener's protocol (inter.broker.listener.name or
 * security.inter.broker.protocol) with sasl.mechanism.inter.broker.protocol;
 * towards controllers (Raft, broker heartbeats, AlterPartition) the
 * first controller listener's protocol with
 * sasl.mechanism.controller.protocol. TLS settings are the listener's
 * ssl.* keys (listener.name.<l>.ssl.* first, as Kafka's); SASL
 * credentials are the username and password of the listener's
 * listener.name.<l>.<mechanism>.sasl.jaas.config (Kafka's brokers take
 * JAAS only with that prefix).
 * Built once at startup; the results live for the process. */
#ifndef SAMSA_NET_PEER_SECURITY_H
#define SAMSA_NET_PEER_SECURITY_H

#include <stddef.h>

struct samsa_config;
struct kclient_security;

/* 0, or -1 with one line in err naming the listener and key at fault
 * (a mechanism samsa cannot speak, missing credentials, a key store that
 * does not load). */
int peer_security_setup(const struct samsa_config *cfg, char *err, size_t errlen);
/* Towards brokers and towards controllers; NULL means PLAINTEXT (also
 * before setup, as in unit tests). */
const struct kclient_security *peer_security_broker(void);
const struct kclient_security *peer_security_controller(void);

#endif
