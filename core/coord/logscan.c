/* Reading a coordinator partition back (see logscan.h). */
#include "coord/logscan.h"

#include <errno.h>
#include <stdbool.h>
#include <unistd.h>

#include "log/plog.h"
#include "plugin/codec.h"
#include "proto/kerr.h"
#include "proto/record_batch.h"
#include "replica/partition.h"
#include "util/buf.h"
#include "util/sfile.h"
#include "util/slog.h"

/* The scan itself: fn for plain records (coord_log_scan), or fns
 * (coord_log_scan_txn: transactional records and markers too). */
static int scan(struct partition *p, struct plugin_registry *plugins, int32_t buffer, const char *what,
                void (*fn)(void *arg, int64_t offset, kbytes_t key, kbytes_t value), const struct coord_scan_fns *fns,
                void *arg)
{
    struct plog *l = p->log;
    int64_t off = plog_log_start_offset(l);
    int64_t end = plog_log_end_offset(l);
    struct buf data = BUF_INIT, dec = BUF_INIT;
    int err = 0;
    while (off < end) {
        struct plog_read_result rr;
        err = plog_read(l, off, buffer, true, -1, &rr);
        if (err)
            break;
        if (rr.len <= 0) {
            if (rr.file)
                sfile_unref(rr.file);
            break;
        }
        buf_reset(&data);
        uint8_t *dst = buf_extend(&data, (size_t)rr.len);
        size_t got = 0;
        while (got < (size_t)rr.len) {
            ssize_t n = pread(rr.file->fd, dst + got, (size_t)rr.len - got, rr.file_pos + (off_t)got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                err = KERR_KAFKA_STORAGE_ERROR;
                break;
            }
            got += (size_t)n;
        }
        sfile_unref(rr.file);
        if (err)
            break;
        size_t pos = 0;
        while (pos < data.len) {
            size_t size;
            if (rb_frame(data.data + pos, data.len - pos, &size) != 0)
                break;
            struct rb_header h;
            if (rb_parse_header(data.data + pos, size, &h) != 0) {
                pos += size;
                continue;
            }
            const uint8_t *batch = data.data + pos;
            pos += size;
            if (rb_last_offset(&h) < off)
                continue;
            if (!fns && (rb_is_control(&h) || rb_is_transactional(&h)))
                continue;
            if (rb_is_control(&h)) {
                /* Kafka reads a marker's first record only */
                struct rb_record_iter cit;
                struct rb_record rec;
                int16_t type;
                int32_t cepoch;
                if (rb_record_iter_init_batch(&cit, batch, size) == 0 && rb_record_next(&cit, &rec) == 1 &&
                    rb_parse_control_record(&rec, &type, &cepoch) == 0 &&
                    (type == RB_CONTROL_COMMIT || type == RB_CONTROL_ABORT) && fns->marker)
                    fns->marker(arg, h.base_offset, h.producer_id, type == RB_CONTROL_COMMIT);
                off = rb_last_offset(&h) + 1;
                continue;
            }
            int64_t pid = rb_is_transactional(&h) ? h.producer_id : -1;
            struct rb_record_iter it;
            if (rb_codec(&h) != RB_CODEC_NONE) {
                buf_reset(&dec);
                int rc = codec_decompress(plugins, rb_codec(&h), batch + RB_HEADER_SIZE, size - RB_HEADER_SIZE, &dec,
                                          CODEC_DECOMPRESS_CEILING);
                if (rc) {
                    slog_warn("coordinator: %s-%d batch at %lld: cannot decompress (%s); skipped", what, p->index,
                              (long long)h.base_offset, kerr_name((int16_t)rc));
                    continue;
                }
                rb_record_iter_init(&it, dec.data, dec.len, h.records_count);
            } else if (rb_record_iter_init_batch(&it, batch, size) != 0) {
                continue;
            }
            struct rb_record rec;
            while (rb_record_next(&it, &rec) == 1) {
                int64_t o = h.base_offset + rec.offset_delta;
                if (o < off)
                    continue;
                if (fns)
                    fns->record(arg, o, pid, rec.key, rec.value);
                else
                    fn(arg, o, rec.key, rec.value);
            }
            off = rb_last_offset(&h) + 1;
        }
        off = rr.next_offset > off ? rr.next_offset : off;
    }
    buf_free(&data);
    buf_free(&dec);
    return err;
}

int coord_log_scan(struct partition *p, struct plugin_registry *plugins, int32_t buffer, const char *what,
                   void (*fn)(void *arg, int64_t offset, kbytes_t key, kbytes_t value), void *arg)
{
    return scan(p, plugins, buffer, what, fn, NULL, arg);
}

int coord_log_scan_txn(struct partition *p, struct plugin_registry *plugins, int32_t buffer, const char *what,
                       const struct coord_scan_fns *fns, void *arg)
{
    return scan(p, plugins, buffer, what, NULL, fns, arg);
}
