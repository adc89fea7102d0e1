/* samsactl's side of SASL: the security settings every connection uses
 * (from --command-config, Kafka's client properties, or --sasl-*), and
 * the PLAIN and SCRAM-SHA-256/512 exchanges after ApiVersions. */
#ifndef SAMSACTL_SASL_H
#define SAMSACTL_SASL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kc_client;
struct kc_conn;

struct kc_security {
    const char *command_config; /* read once, at the first kc_client_init */
    bool loaded;
    char *mechanism;            /* NULL: no SASL (PLAINTEXT) */
    char *username, *password;
    /* security.protocol SSL / SASL_SSL (tls.c) */
    bool tls;
    char *ca_file;      /* PEM trust store; NULL: the system's */
    char *cert_file;    /* PEM client certificate (chain), NULL: none */
    char *key_file;     /* PEM private key (may be cert_file itself) */
    char *key_password; /* of an encrypted key */
    bool verify_host;   /* ssl.endpoint.identification.algorithm https */
};
extern struct kc_security kc_security;

/* Reads Kafka client properties (security.protocol, sasl.mechanism,
 * sasl.jaas.config with username="..." password="...", or librdkafka's
 * sasl.username / sasl.password; for SSL / SASL_SSL the PEM files of
 * ssl.truststore.location (or librdkafka's ssl.ca.location),
 * ssl.keystore.location (key and certificate in one PEM, as Kafka's
 * ssl.keystore.type=PEM) or ssl.certificate.location + ssl.key.location,
 * ssl.key.password, ssl.endpoint.identification.algorithm) from path
 * into kc_security; options given on the command line win. 0 or -1 with
 * one line in err. */
int kc_security_load(const char *path, char *err, size_t errlen);
/* The username and password options of a JAAS login module
 * configuration; returns the number found (each malloc'd). */
int kc_jaas_credentials(const char *jaas, char **username, char **password);

/* Authenticates conn (ApiVersions done) with kc_security's mechanism.
 * 0 or a Kafka error code (SASL_AUTHENTICATION_FAILED, ...). */
int kc_sasl_login(struct kc_client *c, struct kc_conn *conn);

#endif
