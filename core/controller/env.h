/* What the controller (controller.c, brokers.c, snapshot.c, ...) uses of
 * the node, a narrow view instead of struct broker: filled by main (or a
 * test), copied by controller_open. The config slot, the strings and the
 * hooks' arg outlive the controller. */
#ifndef SAMSA_CONTROLLER_ENV_H
#define SAMSA_CONTROLLER_ENV_H

#include <stddef.h>
#include <stdint.h>

struct kclient_security;
struct mimage;
struct park_hub;
struct samsa_config;

struct controller_env {
    /* Where the broker config in effect lives (the node's, read by every
     * layer). The controller loads it atomically and publishes a dynamic
     * broker config change by storing a new config there (see
     * controller_close for who owns which). */
    struct samsa_config *_Atomic *cfg;
    int32_t node_id;
    const char *cluster_id;      /* "" (or NULL) when not known yet */
    /* Where clients reach this broker (the first advertised listener,
     * registered with the controller); port -1: none. */
    const char *advertised_host; /* NULL: "" */
    int32_t advertised_port;
    const char *rack;            /* "" (or NULL) when broker.rack is unset */
    /* Where done operations and forwarded requests are announced
     * (net/park.h: park_notify); NULL without a network layer. */
    struct park_hub *wake;
    /* how Raft and broker heartbeats reach the controllers
     * (net/kclient.h); NULL: PLAINTEXT */
    const struct kclient_security *to_controllers;

    /* What the controller tells the rest of the node, without knowing
     * it (NULL when nobody listens). On the controller's publisher
     * thread, each newly applied image: the hosted partitions follow it;
     * 0, or -1 with one line in err (retried at the next image). */
    int (*image_published)(void *arg, const struct mimage *img, char *err, size_t errlen);
    /* Any thread: this broker is registered and unfenced (the broker
     * listeners may open). */
    void (*broker_ready)(void *arg);
    /* The loop thread: the broker could not register within
     * initial.broker.registration.timeout.ms (logged); the node shuts
     * down and exits non-zero, as Kafka's broker does. */
    void (*broker_registration_failed)(void *arg);
    /* Loop thread (or controller_open): a dynamic broker config change
     * was published into *cfg (old: the config it replaced; both stay
     * valid until controller_close). */
    void (*config_published)(void *arg, const struct samsa_config *old, const struct samsa_config *now);
    /* KIP-966 (BrokerRegistration's PreviousBrokerEpoch): at start, the
     * broker epoch this node had at its last clean shutdown, -1 when
     * unknown (the log dirs' clean-shutdown markers, log/logmgr.h); at a
     * clean stop of a registered broker, its epoch, which the log dirs'
     * markers then carry. NULL: none. */
    int64_t (*previous_broker_epoch)(void *arg);
    void (*broker_epoch_final)(void *arg, int64_t epoch);
    void *hook_arg;              /* the hooks' */
};

#endif
