/* Client quota enforcement, as Kafka's ClientQuotaManager: a client's
 * produced bytes (Produce requests) and fetched bytes (Fetch responses)
 * are recorded into a rate shared by every connection its quota covers
 * (util/rate.h: quota.window.num samples of quota.window.size.seconds),
 * and a client over its bound is told how long to back off
 * (throttle_time_ms) and its connection muted for that long (KIP-219).
 *
 * The hot path stays cheap: the manager follows the published images'
 * quota generation (quota_mgr_follow, atomics). With no quota set
 * nothing is looked up; otherwise each connection caches the quota
 * resolved for its principal and client id (controller/image.h's
 * mimage_quota_lookup) and the rate it feeds, until the quota
 * generation, the client id or the principal changes. Recording locks
 * that rate's own mutex only. */
#ifndef SAMSA_API_QUOTA_MGR_H
#define SAMSA_API_QUOTA_MGR_H

#include <stdbool.h>
#include <stdint.h>

struct broker;
struct request;
struct conn;
struct mimage;
struct samsa_config;

/* What is measured: produced bytes, fetched bytes, and handler time in
 * percent-seconds (request_percentage: Kafka's RequestQuotaManager). */
enum quota_kind { QUOTA_PRODUCE, QUOTA_FETCH, QUOTA_REQUEST, QUOTA_NKINDS };

struct quota_mgr;

/* The node's manager (broker.quotas); window from cfg's quota.window.*.
 * quota_mgr_destroy frees it and its rates (after the workers stop). */
struct quota_mgr *quota_mgr_create(const struct samsa_config *cfg);
void quota_mgr_destroy(struct quota_mgr *m);

/* A new image is published (main's image hook): notes whether it has
 * quotas and their generation. NULL m is ignored. */
void quota_mgr_follow(struct quota_mgr *m, const struct mimage *img);
/* Records bytes of kind for req's client at the present time and
 * returns the throttle time in ms (0: within its quota, or none
 * applies). Requests without a client connection (forwarded in an
 * envelope) are not counted. Worker only. */
int64_t quota_record(struct request *req, enum quota_kind kind, double bytes);
/* The most bytes of kind req's client's quota lets through in its
 * window: bound * (quota.window.num - 1) * quota.window.size.seconds
 * (Kafka's getMaxValueInQuotaWindow; a fetch is capped by it); INT64_MAX
 * when no quota applies. */
int64_t quota_max_in_window(struct request *req, enum quota_kind kind);
/* Takes back bytes recorded for req (Kafka's unrecordQuotaSensor: a
 * throttled fetch answered without its records). */
void quota_unrecord(struct request *req, enum quota_kind kind, double bytes);
/* Mutes req's connection for ms after its response (KIP-219). */
void quota_throttle(struct request *req, int64_t ms);
/* request_percentage: whether req's handler time is to be measured
 * (some quota is set: one atomic load), and the measure of a handler
 * that ran ns nanoseconds on its worker: recorded, and the throttle time
 * returned, at most one quota window (Kafka's bound; 0 within the
 * quota). api/dispatch.c records it when the answer is written and puts
 * it into the answer's throttle_time_ms, as Kafka's
 * sendResponseMaybeThrottle does. Requests on controller listeners are
 * exempt, as Kafka's inter-broker ones. */
bool quota_request_timed(const struct request *req);
int64_t quota_request_record(struct request *req, int64_t ns);
/* connection_creation_rate (the net's conn_throttle hook, main thread):
 * counts a new connection from ip against its IP quota (its own, else
 * the default IP's) and returns how long to hold it before closing it
 * unserved when over (bounded by the quota's whole window), else 0.
 * A refused connection is not counted. */
int64_t quota_conn_throttle(struct broker *b, const char *ip);
/* controller_mutation_rate (Kafka's ControllerMutationQuotaManager), on
 * the active controller for one admin request (req: a client's, or one a
 * broker forwarded, with the principal and client id it carried): a
 * token bucket per user/client id refilled at the quota, holding at most
 * quota.window.num windows' worth (the burst). Strict (the request's
 * version is at least the API's strict one): a topic is refused with
 * THROTTLING_QUOTA_EXCEEDED while the bucket is below zero, else
 * accepted whatever it takes; permissive: always accepted, and a bucket
 * below zero is a throttle time. */
struct quota_mutation {
    struct quota_mgr *m;
    struct quota_sensor *s; /* NULL: no quota */
    double bound;
    bool strict;
    int64_t throttle_ms;
};
void quota_mutation_begin(struct request *req, bool strict, struct quota_mutation *mq);
/* Before a mutation: 0, or THROTTLING_QUOTA_EXCEEDED (strict, bucket
 * below zero; mq->throttle_ms set). */
int16_t quota_mutation_check(struct quota_mutation *mq);
/* A mutation of permits partitions was accepted: taken from the bucket
 * (permissive: mq->throttle_ms set when it goes below zero). */
void quota_mutation_add(struct quota_mutation *mq, double permits);
/* Frees c's cached quota state (the net's conn_free hook calls it). */
void quota_conn_free(struct conn *c);

#endif
