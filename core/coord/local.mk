# Group coordinator: classic groups and committed offsets in
# __consumer_offsets (group.c is the state machine, coord.c the service).
core_libsamsacore_a_SOURCES += \
	core/coord/group.c core/coord/group.h \
	core/coord/consumer.c core/coord/consumer.h \
	core/coord/records.c core/coord/records.h \
	core/coord/coord.c core/coord/coord.h
# Transaction coordinator: txn_meta.c is the state machine, txn_log.c
# the __transaction_state records, txn_markers_send.c the marker sender,
# txn_coord.c the service.
core_libsamsacore_a_SOURCES += \
	core/coord/txn_meta.c core/coord/txn_meta.h \
	core/coord/txn_log.c core/coord/txn_log.h \
	core/coord/logscan.c core/coord/logscan.h \
	core/coord/txn_markers_send.c core/coord/txn_markers_send.h \
	core/coord/shards.c core/coord/shards.h \
	core/coord/txn_coord.c core/coord/txn_coord.h \
	core/coord/txn_verify.c core/coord/txn_verify.h
# ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848)
core_libsamsacore_a_SOURCES += core/api/consumer_groups.c
