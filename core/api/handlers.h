/* Request handlers, one per API; each lives in the file of its family. */
#ifndef SAMSA_API_HANDLERS_H
#define SAMSA_API_HANDLERS_H

#include <stdint.h>

#include "proto/kcodec.h"

struct request;
struct parked;
struct coord_ack;

/* groups.c: pk (not started yet, or from its try_complete) watches the
 * __consumer_offsets partitions a's writes wait on, and from inside
 * try_complete its deadline becomes the writes' (offsets.commit.timeout.ms
 * after them). */
void api_watch_coord_ack(struct parked *pk, const struct coord_ack *a);
/* groups.c: offsets.commit.timeout.ms, the deadline of a coordinator
 * write. */
int64_t api_commit_timeout_ms(const struct request *req);
/* groups.c: Kafka's clientHost, InetAddress.toString() of the peer
 * ("/1.2.3.4"), in req's arena. */
kstr_t api_client_host(struct request *req);

void api_handle_api_versions(struct request *req);      /* apiversions.c */
void api_handle_produce(struct request *req);           /* produce.c */
void api_handle_fetch(struct request *req);             /* fetch.c */
void api_handle_list_offsets(struct request *req);      /* listoffsets.c */
void api_handle_delete_records(struct request *req);    /* deleterecords.c */
void api_handle_describe_producers(struct request *req); /* describeproducers.c */
void api_handle_offset_for_leader_epoch(struct request *req); /* offsetforleaderepoch.c */
void api_handle_describe_log_dirs(struct request *req); /* logdirs.c */
void api_handle_metadata(struct request *req);          /* metadata.c */
void api_handle_create_topics(struct request *req);     /* topics.c */
void api_handle_delete_topics(struct request *req);     /* topics.c */
void api_handle_create_partitions(struct request *req); /* topics.c */
void api_handle_describe_cluster(struct request *req);  /* cluster.c */
void api_handle_describe_configs(struct request *req);   /* configs.c */
void api_handle_alter_configs(struct request *req);      /* configs.c */
void api_handle_incremental_alter_configs(struct request *req); /* configs.c */
void api_handle_describe_quorum(struct request *req);   /* quorum.c */
void api_handle_find_coordinator(struct request *req);  /* groups.c */
void api_handle_join_group(struct request *req);        /* groups.c */
void api_handle_sync_group(struct request *req);        /* groups.c */
void api_handle_heartbeat(struct request *req);         /* groups.c */
void api_handle_leave_group(struct request *req);       /* groups.c */
void api_handle_list_groups(struct request *req);       /* groups.c */
void api_handle_describe_groups(struct request *req);   /* groups.c */
void api_handle_delete_groups(struct request *req);     /* groups.c */
void api_handle_offset_commit(struct request *req);     /* groups.c */
void api_handle_offset_fetch(struct request *req);      /* groups.c */
void api_handle_txn_offset_commit(struct request *req); /* groups.c */
void api_handle_offset_delete(struct request *req);     /* groups.c */
void api_handle_consumer_group_heartbeat(struct request *req); /* consumer_groups.c */
void api_handle_consumer_group_describe(struct request *req);  /* consumer_groups.c */
void api_handle_alter_partition(struct request *req);   /* controlplane.c */
void api_handle_allocate_producer_ids(struct request *req); /* controlplane.c */
void api_handle_update_features(struct request *req);   /* features.c */
void api_handle_init_producer_id(struct request *req);  /* init_producer_id.c */
void api_handle_write_txn_markers(struct request *req); /* txn_markers.c */
/* txn.c */
void api_txn_init_producer_id(struct request *req); /* a transactional id's InitProducerId */
void api_handle_add_partitions_to_txn(struct request *req);
void api_handle_add_offsets_to_txn(struct request *req);
void api_handle_end_txn(struct request *req);
void api_handle_describe_transactions(struct request *req); /* txn_describe.c */
void api_handle_list_transactions(struct request *req);     /* txn_describe.c */
void api_handle_sasl_handshake(struct request *req);    /* sasl.c */
void api_handle_sasl_authenticate(struct request *req); /* sasl.c */
void api_sasl_raw_token(struct request *req);           /* sasl.c: after SaslHandshake v0 */
void api_handle_describe_user_scram_credentials(struct request *req); /* sasl.c */
void api_handle_create_acls(struct request *req);   /* acls.c */
void api_handle_describe_acls(struct request *req); /* acls.c */
void api_handle_delete_acls(struct request *req);   /* acls.c */
void api_handle_alter_user_scram_credentials(struct request *req);    /* sasl.c */
void api_handle_alter_client_quotas(struct request *req);             /* quotas.c */
void api_handle_describe_client_quotas(struct request *req);          /* quotas.c */

#endif
