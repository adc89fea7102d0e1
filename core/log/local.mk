# core/log
core_libsamsacore_a_SOURCES += \
	core/log/index.c core/log/index.h \
	core/log/batch_cursor.c core/log/batch_cursor.h \
	core/log/fsutil.c core/log/fsutil.h \
	core/log/partition_metadata.c core/log/partition_metadata.h \
	core/log/segment.c core/log/segment.h \
	core/log/checkpoint.c core/log/checkpoint.h \
	core/log/plog.c core/log/plog.h core/log/plog_internal.h core/log/plog_config.c \
	core/log/producer_state.c core/log/producer_state.h \
	core/log/plog_producers.c \
	core/log/plog_txn.c core/log/txnindex.c core/log/txnindex.h \
	core/log/cleaner.c core/log/cleaner.h \
	core/log/logmgr.c core/log/logmgr.h
# The storage benchmarks (run by hand; they build storage_bench.c against
# core/libsamsacore.a themselves).
EXTRA_DIST += tools/bench/storage_bench.c tools/bench/storage-append.sh \
	tools/bench/storage-consume.sh tools/bench/storage-recovery.sh
