/* The log manager (Kafka's LogManager): the partition logs of this node
 * across its log directories, and the background work on them.
 *
 *   - opening: plog_open with the recovery point, log start offset and
 *     cleaner offset read from each log dir's checkpoint files, on a pool
 *     of num.recovery.threads.per.data.dir threads per log dir when asked
 *     to (logmgr_open_async), so a node with many partitions recovers them
 *     in parallel and serves each as soon as it is ready;
 *   - the flusher (group commit): logs ask for a flush (flush.messages
 *     reached, a segment rolled); flusher threads run plog_flush, which
 *     covers every append made before it, and then tell the log's owner
 *     (the partition: its high watermark and parked produce requests).
 *     Nothing blocks on fsync but the flusher threads;
 *   - the scheduler thread: flush.ms, retention every
 *     log.retention.check.interval.ms (and soon after DeleteRecords),
 *     removal of .deleted files after file.delete.delay.ms, and the
 *     checkpoint files (recovery-point-offset-checkpoint every
 *     log.flush.offset.checkpoint.interval.ms, log-start-offset-checkpoint
 *     every log.flush.start.offset.checkpoint.interval.ms and soon after
 *     the start offset moved, cleaner-offset-checkpoint after cleaning);
 *   - log.cleaner.threads cleaner threads (log/cleaner.h): each picks the
 *     dirtiest compacted log and cleans it, then sleeps
 *     log.cleaner.backoff.ms when nothing is dirty enough;
 *   - log dir failure: a log dir that cannot be read at start, or where a
 *     log hits an I/O error, goes offline: its logs refuse everything with
 *     KAFKA_STORAGE_ERROR, no log is opened or placed there, and the rest
 *     of the node carries on (Kafka's LogDirFailureChannel).
 *
 * flush.messages: 1 makes every acknowledgement wait for its fsync
 * (replica/partition.h, partition_ack_wait); N > 1 asks the flusher for a
 * flush once N messages are unflushed, without holding acknowledgements
 * (Kafka flushes inside the append that reaches N; here no producer
 * waits for it).
 *
 * flush.ms note: Kafka looks for due logs only every
 * log.flush.scheduler.interval.ms (default: never), so flush.ms alone does
 * nothing there; samsa's scheduler wakes when the next log is due.
 *
 * Threads: every function may be called from any thread. A log's
 * callbacks (flushed, opened) run on the manager's threads. */
#ifndef SAMSA_LOG_LOGMGR_H
#define SAMSA_LOG_LOGMGR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/plog.h"

struct logmgr;
struct samsa_config;
struct topic_config;

/* Creates the manager for cfg's log.dirs (reads the broker settings it
 * needs from cfg once; cfg is not kept). Reads each dir's checkpoint
 * files; a dir that cannot be read starts offline (one ERROR line). No
 * thread runs until logmgr_start. The caller owns the result. */
struct logmgr *logmgr_create(const struct samsa_config *cfg);
/* Starts the flusher, scheduler and cleaner threads. */
void logmgr_start(struct logmgr *m);
/* Stops and joins every background thread (pending async opens finish
 * first). Logs stay open: close them with logmgr_close afterwards. */
void logmgr_stop(struct logmgr *m);
/* Writes the final checkpoint files and frees m. Every log must have
 * been closed or deleted. */
void logmgr_destroy(struct logmgr *m);

/* The clean-shutdown marker (Kafka's `.kafka_cleanshutdown`, one per log
 * dir, {"version":0,"brokerEpoch":N,"logsClosed":true}). logmgr_destroy
 * writes it in each online dir after its final checkpoints when every log
 * of the dir closed cleanly (plog_close returned 0) and none is left
 * unaccounted for (a failed open, an unclean close, a log not recovered
 * since an unclean start: logmgr_note_unopened). logmgr_create reads it
 * and removes it (unlink, then an fsync of the dir) before any log
 * opens, so a crash at any later point counts as unclean; while no log
 * of the dir has been closed uncleanly or failed to open since, its logs
 * are opened as cleanly closed (plog_open_opts.clean_shutdown). A dir
 * without it recovers its logs from their recovery points, as after a
 * crash in the middle of a shutdown.
 *
 * The broker epoch the markers carry (KIP-966), set before
 * logmgr_destroy; -1 (the default) when the broker never registered. */
void logmgr_set_broker_epoch(struct logmgr *m, int64_t epoch);
/* The epoch read from the markers at creation: -1 unless every log dir is
 * online and had a marker with one epoch (Kafka's rule). */
int64_t logmgr_previous_broker_epoch(const struct logmgr *m);
/* How many log dirs had a marker saying their logs closed cleanly. */
int logmgr_clean_dirs(const struct logmgr *m);
/* A log on disk in dir that start-up does not open (a partition not
 * hosted here, a stray, an unreadable one): after an unclean start it
 * stays unrecovered, so dir gets no marker at shutdown. */
void logmgr_note_unopened(struct logmgr *m, size_t dir);

/* Codecs for the logs opened from now on (the cleaner and timestamp
 * lookups in compressed batches); c->ctx must outlive the logs. Call
 * before opening any. */
void logmgr_set_codecs(struct logmgr *m, const struct plog_codecs *c);

size_t logmgr_ndirs(const struct logmgr *m);
const char *logmgr_dir(const struct logmgr *m, size_t dir);
bool logmgr_dir_offline(const struct logmgr *m, size_t dir);
/* The size of the volume dir is on and the bytes an unprivileged writer
 * can still use there (Kafka's FileStore total and usable space); false
 * when dir is offline or statvfs fails. statvfs reads counters a local
 * filesystem keeps in memory: it does no I/O. */
bool logmgr_dir_space(const struct logmgr *m, size_t dir, int64_t *total, int64_t *usable);
/* Takes dir offline (one ERROR line with why), as after an I/O error. */
void logmgr_fail_dir(struct logmgr *m, size_t dir, const char *why);

/* Called after a flush moved the log's recovery point; ctx is the
 * owner's. Runs on a flusher thread: must be quick. */
typedef void (*logmgr_flushed_fn)(void *ctx, struct plog *l);

/* Opens (creating when missing) the log "<dir>/<name>" with the
 * checkpointed offsets and registers it for background work. Returns a
 * Kafka error code (KERR_KAFKA_STORAGE_ERROR for an offline dir; an I/O
 * error takes the dir offline). The log is released with logmgr_close or
 * logmgr_delete, never plog_close/plog_delete directly. */
int logmgr_open(struct logmgr *m, size_t dir, const char *name, const kuuid_t *topic_id,
                const struct plog_config *cfg, logmgr_flushed_fn flushed, void *ctx, struct plog **out);

/* logmgr_open for one of many logs being created: nothing is fsynced
 * (plog_open_opts.defer_sync), so creations share their syncs. The
 * creation is durable once logmgr_sync_created(m, dir, l) and then
 * logmgr_sync_dir(m, dir) returned 0; it must not be acknowledged
 * before. Those two return 0 or KERR_KAFKA_STORAGE_ERROR: an I/O error
 * takes the dir offline, a want of descriptors (retried a few times)
 * does not. Any thread; different logs in parallel. */
int logmgr_open_deferred(struct logmgr *m, size_t dir, const char *name, const kuuid_t *topic_id,
                         const struct plog_config *cfg, logmgr_flushed_fn flushed, void *ctx, struct plog **out);
int logmgr_sync_created(struct logmgr *m, size_t dir, struct plog *l);
int logmgr_sync_dir(struct logmgr *m, size_t dir);

/* The same on the recovery pool: done(ctx, rc, log) runs on a pool
 * thread when the log is open (log NULL when rc != 0). topic_id and cfg
 * are copied. id_on_disk: the caller has just read the log's
 * partition.metadata and it holds topic_id (plog_open_opts). */
typedef void (*logmgr_opened_fn)(void *ctx, int rc, struct plog *l);
void logmgr_open_async(struct logmgr *m, size_t dir, const char *name, const kuuid_t *topic_id, bool id_on_disk,
                       const struct plog_config *cfg, logmgr_flushed_fn flushed, logmgr_opened_fn done,
                       void *ctx);

/* Bracket a batch of logmgr_open_async calls: the pool's one line
 * ("N log(s) opened in T ms") waits for the release, so that it counts
 * the whole batch even when the pool drains the first opens before the
 * last is queued. Holds nest. */
void logmgr_opens_hold(struct logmgr *m);
void logmgr_opens_release(struct logmgr *m);

/* Waits until no open started with logmgr_open_async is pending, or
 * timeout_ms passed. Returns how many are still pending. start-up waits a
 * little so that a quick restart serves every partition from its first
 * request, as Kafka does, while a long recovery does not keep the healthy
 * partitions offline. */
int logmgr_wait_opens(struct logmgr *m, int64_t timeout_ms);

/* While a run of the pool's opens lasts longer than ms (5 000 unless
 * set), it logs its progress every ms: "opening logs: N of M done".
 * Tests shorten it. */
void logmgr_set_progress_interval_ms(struct logmgr *m, int64_t ms);

/* Unregisters l (waiting for background work on it to finish), notes its
 * final offsets for the checkpoints and closes it. */
void logmgr_close(struct logmgr *m, struct plog *l, bool clean);
/* Unregisters l, forgets its checkpoint entries and deletes it
 * (plog_delete). */
int logmgr_delete(struct logmgr *m, struct plog *l);

/* Applies a topic config change to a registered log. */
int logmgr_set_config(struct logmgr *m, struct plog *l, const struct plog_config *cfg);

/* The log config from a topic's effective config. */
void logmgr_config_from_topic(const struct topic_config *tc, struct plog_config *out);

/* Runs retention and purges .deleted files on every log now (tests and
 * benchmarks; the scheduler does it by itself). */
void logmgr_run_retention(struct logmgr *m);
/* The scheduler's retention check, once, at wall time now_ms: retention
 * on the logs whose due time (plog_retention_due) came or whose
 * retention_wanted hook ran since their last check (only those with
 * wanted_only: DeleteRecords), each then filed under its next due time.
 * Returns how many logs it looked at. The scheduler calls it every
 * log.retention.check.interval.ms; exposed for tests. */
size_t logmgr_retention_tick(struct logmgr *m, int64_t now_ms, bool wanted_only);
/* A cleaner thread's step: cleans the filthiest compacted log that
 * wants it (Kafka's choice) once. True when segments were cleaned.
 * Exposed for tests. */
bool logmgr_clean_one(struct logmgr *m, int64_t now_ms);
/* What the background scans cost so far (tests, benchmarks). */
struct logmgr_scan_stats {
    uint64_t retention_visits; /* logs retention ticks looked at */
    uint64_t cleaner_visits;   /* logs whose cleanable state the cleaners computed */
    size_t retention_logs;     /* logs with a retention due time now */
    size_t compacted_logs;     /* logs the cleaners consider */
    size_t uncleanable_logs;   /* of those, left alone after an unreadable batch */
};
void logmgr_scan_stats(struct logmgr *m, struct logmgr_scan_stats *out);
/* Writes the checkpoint files now. */
void logmgr_write_checkpoints(struct logmgr *m);

#endif
