/* __consumer_offsets: which partition holds a group, and its records in
 * Kafka's own schemas (a key and a value, each an int16 version followed
 * by the generated struct): OffsetCommitKey (version 1) with
 * OffsetCommitValue (version 3, or 1 when an expiry is set), and
 * GroupMetadataKey (version 2) with GroupMetadataValue (version 3), as
 * Kafka's GroupCoordinatorRecordHelpers writes them. A null value is a
 * tombstone (deleted offset or group). */
#ifndef SAMSA_COORD_RECORDS_H
#define SAMSA_COORD_RECORDS_H

#include <stdbool.h>
#include <stdint.h>

#include "coord/consumer.h"
#include "proto/gen/consumer_group_current_member_assignment_value.h"
#include "proto/gen/consumer_group_member_metadata_value.h"
#include "proto/gen/consumer_group_metadata_value.h"
#include "proto/gen/consumer_group_partition_metadata_value.h"
#include "proto/gen/consumer_group_target_assignment_member_value.h"
#include "proto/gen/consumer_group_target_assignment_metadata_value.h"
#include "proto/gen/group_metadata_key.h"
#include "proto/gen/group_metadata_value.h"
#include "proto/gen/offset_commit_key.h"
#include "proto/gen/offset_commit_value.h"
#include "proto/kcodec.h"
#include "util/buf.h"

struct cgroup;
struct cg_offset;

#define COORD_OFFSETS_TOPIC "__consumer_offsets"

/* Java's String.hashCode over the UTF-16 code units of a UTF-8 string
 * (malformed bytes count as U+FFFD, as Java's decoder replaces them). */
int32_t coord_java_hash(const char *s, size_t len);
/* Kafka's GroupCoordinatorService.partitionFor:
 * Utils.abs(groupId.hashCode()) % n, Utils.abs mapping MIN_VALUE to 0. */
int32_t coord_partition_for(kstr_t group, int32_t n);

/* Record key/value bytes, appended to out. */
void crec_offset_key(struct buf *out, kstr_t group, kstr_t topic, int32_t partition);
void crec_offset_value(struct buf *out, const struct cg_offset *o);
void crec_group_key(struct buf *out, kstr_t group);
/* The group as it is, with assign[i] for members[i] (NULL: their own). */
void crec_group_value(struct buf *out, const struct cgroup *g, const kbytes_t *assign);

/* The records of a consumer group (KIP-848), key version = kind: the
 * keys of ConsumerGroupMetadataKey (3) ... ConsumerGroupCurrentMember-
 * AssignmentKey (8), member is the member id of the member kinds. */
void crec_ccg_key(struct buf *out, enum ccg_rec kind, kstr_t group, kstr_t member);
/* The value of kind for g (m for the member kinds). */
void crec_ccg_value(struct buf *out, enum ccg_rec kind, const struct cgroup *g, const struct ccg_member *m);

enum crec_kind {
    CREC_OTHER = 0, /* a key version samsa does not keep (share groups...) */
    CREC_OFFSET,
    CREC_GROUP,
    CREC_CCG, /* a consumer group record: ccg_kind says which */
};

struct crec {
    enum crec_kind kind;
    int16_t key_version;
    bool tombstone;
    offset_commit_key_t okey;
    offset_commit_value_t ovalue;
    group_metadata_key_t gkey;
    group_metadata_value_t gvalue;
    /* CREC_CCG */
    enum ccg_rec ccg_kind;
    kstr_t ccg_group, ccg_member;
    consumer_group_metadata_value_t cmeta;
    consumer_group_partition_metadata_value_t cpmeta;
    consumer_group_member_metadata_value_t cmember;
    consumer_group_target_assignment_metadata_value_t ctmeta;
    consumer_group_target_assignment_member_value_t ctmember;
    consumer_group_current_member_assignment_value_t ccurrent;
};

/* Decodes one record (strings point into key/value; arrays from a).
 * 0, or -1 when the bytes do not parse. */
int crec_parse(kbytes_t key, kbytes_t value, struct arena *a, struct crec *out);

#endif
